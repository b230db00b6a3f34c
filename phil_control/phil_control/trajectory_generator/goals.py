"""The trajectory generator's goals: the ``~/look``, ``~/gesture``, ``~/move`` and ``~/pose``
action servers, what refuses a goal, planning an accepted one (its first chunks go out at once),
its feedback and how it ends."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future

from phil_control.conversions import DECIDED_BEFORE_LATCH
from phil_control.core.motion import Rejection, RejectReason, chunk_trajectory
from phil_control.trajectory_generator import conversions as convert
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Gesture, Look, Move, Pose
from phil_ros.waking_future import complete, waking_future


@dataclass(eq=False)
class Goal:
    """An accepted goal waiting for its motion to end."""

    handle: object
    feedback_type: type
    start_s: float
    end_s: float
    resolved: Future  # completed (by _resolve) when the goal's outcome is known
    outcome: tuple[str, str] | None = None
    cancelling: bool = False
    next_feedback_s: float = -math.inf


def _goal_key(goal_handle) -> bytes:
    return bytes(goal_handle.goal_id.uuid)


class GoalServers:
    """The goal side of the `TrajectoryGenerator` node (a mixin: it uses the node's lock,
    planner, goal list, chunk queue and ticks)."""

    def _create_servers(self, group) -> list[ActionServer]:
        """One action server per motion goal; every goal is accepted (a bad one is aborted
        with the reason) and every cancel too."""
        return [
            ActionServer(
                self,
                action,
                f'~/{name}',
                execute_callback=partial(self._execute, action),
                handle_accepted_callback=partial(self._start, action, to_request),
                goal_callback=lambda _goal: GoalResponse.ACCEPT,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=group,
            )
            for name, action, to_request in (
                ('look', Look, convert.look_request),
                ('gesture', Gesture, convert.gesture_request),
                ('move', Move, convert.move_request),
                ('pose', Pose, convert.pose_request),
            )
        ]

    def _start(self, action, to_request, goal_handle) -> None:
        """Validate and plan an accepted goal and publish its first chunks at once, then let it
        execute. Runs in the goal request's own callback: the motion does not wait for the
        executor to schedule the execute callback."""
        request = to_request(goal_handle.request)
        goal = None
        with self._lock:
            if self._closing:
                problem = 'trajectory_generator is shutting down'
            elif not self._key.owns_goal_id(goal_handle.goal_id.uuid):
                problem = (
                    f'refused: {action.__name__} goals here come only from the '
                    'behavior planner of this graph (send them to '
                    f'/phil/{action.__name__.lower()})'
                )
            elif self._latched:
                problem = f'the hardware is latched: {self._latched}'
            elif GraphKey.goal_made_ns(goal_handle.goal_id.uuid) < self._latch_barrier_ns:
                problem = DECIDED_BEFORE_LATCH
            elif isinstance(request, Rejection):
                problem = str(request)
            elif len(self._goals) >= self.config.max_active_goals:
                problem = str(
                    Rejection(
                        RejectReason.QUEUE_FULL,
                        f'{len(self._goals)} goals are queued (max_active_goals)',
                    )
                )
            else:
                now = self._now_s()
                planned = self._planner.submit(request, now + self.config.start_lead_s)
                if isinstance(planned, Rejection):
                    problem = str(planned)
                else:
                    problem = None
                    goal = Goal(
                        goal_handle,
                        action.Feedback,
                        planned.motion_start_s,
                        planned.end_s,
                        waking_future(self),
                    )
                    self._goals.append(goal)
                    self._pending.extend(
                        chunk_trajectory(planned.trajectory, self.config.chunking)
                    )
                    self._publish_due(now)
                    self._publish_state()
                    self._ticks.resume()
            self._started[_goal_key(goal_handle)] = (goal, problem)
        goal_handle.execute()

    async def _execute(self, action, goal_handle):
        """Report a refused goal, or wait (without blocking the executor) for its motion to end."""
        with self._lock:
            goal, problem = self._started.pop(
                _goal_key(goal_handle), (None, 'goal was not started')
            )
        if goal is None:
            self.get_logger().warning(f'{action.__name__} goal rejected: {problem}')
            goal_handle.abort()
            return action.Result(success=False, reason=problem)
        await goal.resolved
        kind, reason = goal.outcome
        if kind == 'succeed':
            goal_handle.succeed()
        elif kind == 'canceled':
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return action.Result(success=kind == 'succeed', reason=reason)

    def _resolve(self, goal: Goal, kind: str, reason: str) -> None:
        """Finish a goal (lock held): its execute callback returns the outcome."""
        if goal in self._goals:
            self._goals.remove(goal)
        if goal.outcome is None:
            goal.outcome = (kind, reason)
        complete(goal.resolved)

    def _feedback(self, goal: Goal, now: float) -> None:
        feedback = goal.feedback_type()
        feedback.progress = min(
            1.0, max(0.0, (now - goal.start_s) / max(goal.end_s - goal.start_s, 1e-9))
        )
        feedback.time_remaining_s = max(0.0, goal.end_s - now)
        goal.handle.publish_feedback(feedback)

    def _abort_moving_after(self, time_s: float, reason: str) -> None:
        for goal in list(self._goals):
            if not goal.cancelling and goal.end_s > time_s:
                self._resolve(goal, 'abort', reason)
