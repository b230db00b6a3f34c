"""The goals the behavior planner sends: how a step becomes a goal, and how a sent goal is
followed until it ends (its result, or its node going down), once.

Goal ids are signed with the graph key: the trajectory generator and the score player take
goals from the planner only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from phil_control.core.behavior import actions as act
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Gesture, Look, Move, Play
from phil_ros.graph_safety import signed_goal_id


@dataclass
class Completion:
    """Filled in when a started motion or play ends; a user goal may wait on it
    (``on_finish`` runs once it is filled in)."""

    done: threading.Event = field(default_factory=threading.Event)
    success: bool = False
    reason: str = ''
    result: Any = None
    on_feedback: Callable[[Any], None] | None = None
    on_finish: Callable[[], None] | None = None

    def finish(self, success: bool, reason: str, result: Any = None) -> None:
        self.success, self.reason, self.result = success, reason, result
        self.done.set()
        if self.on_finish is not None:
            self.on_finish()


@dataclass(frozen=True)
class SentGoal:
    """A goal on its way to an action server, awaiting its acceptance and then its result."""

    action_name: str
    future: Any
    play_id: str
    play: bool
    completion: Completion | None


def serving_node(name: str) -> str:
    """The node that serves an action or service name ('/score_player/stop' -> '/score_player')."""
    return '/' + name.strip('/').split('/')[0]


def play_goal(action: act.StartPlay | act.ResumePlay) -> Play.Goal:
    """The score player's goal for a play step."""
    if isinstance(action, act.ResumePlay):
        return Play.Goal(
            score=action.play_id, speed=action.speed, start_bar=action.bar, resume=True
        )
    return Play.Goal(
        score=action.play_id,
        speed=action.speed,
        start_bar=action.start_bar,
        improv=action.improv,
    )


def motion_goal(action, joint_names: tuple[str, ...], poses: dict) -> tuple[type, Any] | None:
    """(action type, goal) of a trajectory-generator step; None for every other step."""
    if isinstance(action, act.MoveToPose):
        return Move, Move.Goal(
            joint_names=list(joint_names),
            positions_rad=[float(v) for v in poses[action.pose]],
            duration_s=action.duration_s,
            profile=action.profile.value,
        )
    if isinstance(action, act.LookAt):
        return Look, Look.Goal(
            pan_rad=action.pan_rad, tilt_rad=action.tilt_rad, duration_s=action.duration_s
        )
    if isinstance(action, act.PerformGesture):
        return Gesture, Gesture.Goal(gesture=action.name)
    if isinstance(action, act.MoveJoints):
        names, positions = zip(*action.targets, strict=True)
        return Move, Move.Goal(
            joint_names=list(names),
            positions_rad=list(positions),
            duration_s=action.duration_s,
            profile=action.profile.value,
        )
    return None


class GoalTracker:
    """The goals sent and not yet ended; ``on_end(sent, result, success, reason)`` runs once
    per goal; ``on_play_feedback(feedback)`` gets every play's feedback (whoever asked for the
    play: the status reports its song and bar)."""

    def __init__(
        self,
        key: GraphKey,
        on_end: Callable[..., None],
        on_play_feedback: Callable[[Any], None] = lambda _feedback: None,
    ) -> None:
        self._key = key
        self._on_end = on_end
        self._on_play_feedback = on_play_feedback
        self._running: dict[int, SentGoal] = {}
        self.motions_running = 0  # motion goals (not plays) sent and not ended

    def send(self, client, name: str, goal, completion: Completion | None, play: bool):
        """Send ``goal`` (never waits); :meth:`accepted` or :meth:`end` follows."""
        forward = completion.on_feedback if completion is not None else None

        def feedback(message) -> None:
            if play:
                self._on_play_feedback(message.feedback)
            if forward is not None:
                forward(message.feedback)

        future = client.send_goal_async(
            goal,
            feedback_callback=feedback if play or forward else None,
            goal_uuid=signed_goal_id(self._key),
        )
        sent = SentGoal(name, future, getattr(goal, 'score', ''), play, completion)
        self._running[id(sent)] = sent
        self.motions_running += 0 if play else 1
        return sent

    def accepted(self, sent: SentGoal, handle) -> None:
        """The server's answer: follow the result, or end the goal it refused."""
        if handle is None or not handle.accepted:
            self.end(sent, None, False, 'goal was not accepted')
            return
        handle.get_result_async().add_done_callback(
            lambda future: self.end(
                sent,
                future.result().result,
                bool(future.result().result.success),
                future.result().result.reason,
            )
        )

    def end(self, sent: SentGoal, result, success: bool, reason: str) -> None:
        """A goal's end, once: its result, or its node going down."""
        if self._running.pop(id(sent), None) is None:
            return
        self.motions_running -= 0 if sent.play else 1
        self._on_end(sent, result, success, reason)

    def end_on(self, node: str, reason: str) -> None:
        """End the goals that run on ``node`` with ``reason`` (it will never answer)."""
        for sent in [s for s in self._running.values() if serving_node(s.action_name) == node]:
            self.end(sent, None, False, reason)
