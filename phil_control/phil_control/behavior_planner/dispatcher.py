"""The behavior planner's dispatcher: it carries out the state machine's decisions in decision
order, sending each motion as an action goal and reporting every end back.

One coroutine on the planner's single-threaded executor takes the decisions in turn; a step
awaits what makes the next one safe (a lifecycle transition, a goal's acceptance, so goals
reach their servers in decision order), never the end of a motion: ends come back through the
goals' result callbacks. Nothing blocks and no thread hands work over.

Never queued: ESTOP goes straight to the hardware's ESTOP word (the bus loop latches from it
within a tick, whatever else runs or hangs), RESET straight to the hardware as a request nobody
waits for (the hardware decides). Since RESET does not wait its turn, nothing decided before a
latch may move the robot after it: the moving steps decided before an ESTOP, a fault or a
shutdown without motion are dropped (:meth:`Dispatcher.drop_earlier_motions`). A step that
needs a node the planner sees down fails at once with the reason; the goals running on a node
that goes down end with it.

A play or HIT waits until the running motions have ended (the score player plans from the pose
they end in); a PAUSE, speed or stop decided before a play has started applies to it at once
(a PAUSE ends it paused where it would have begun).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from phil_control.behavior_planner.goals import (
    Completion,
    GoalTracker,
    SentGoal,
    motion_goal,
    play_goal,
)
from phil_control.behavior_planner.hardware_link import HardwareLink
from phil_control.behavior_planner.motion_servers import MotionServers
from phil_control.behavior_planner.waits import Waits
from phil_control.core.behavior import actions as act
from phil_control.node_names import HARDWARE_NODE
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Hit, Play
from phil_ros.waking_future import complete, waking_future

PLAYS = (act.StartPlay, act.ResumePlay)
#: Steps carried out when decided, never queued.
AT_ONCE = (act.EstopHardware, act.ResetHardware)
#: Steps that move the robot: dropped when a latch came after they were decided.
MOVING_STEPS = (
    act.MoveToPose,
    act.LookAt,
    act.PerformGesture,
    act.MoveJoints,
    act.StrikeInstrument,
    *PLAYS,
)


@dataclass(frozen=True)
class MeetGraph:
    """Step at start-up: exchange one request with every server (:meth:`Dispatcher._meet`)."""


@dataclass(frozen=True)
class Decided:
    """A decision's steps; ``drops``: the latch count when it was decided."""

    actions: tuple
    completion: Completion | None
    drops: int


class Dispatcher:
    """The coroutine that carries out the decisions, through the hardware link and the motion
    servers' clients.

    Args:
        node: The behavior planner node (clients are created on it; it must spin on a
            single-threaded executor).
        joint_names: The model's joint order (for pose moves).
        poses: Named poses, rad in joint order.
        events: Callbacks into the planner: ``motion_finished()``, ``start_completed()``,
            ``play_ended(play_id, result, success, reason)``, ``failed(reason)``,
            ``shutdown()``, ``graph_met()`` (after :meth:`meet_graph`, whether every server
            answered or not), optionally ``play_feedback(feedback)`` (every play's, whoever
            asked for it).
        key: The graph key (goal ids, hardware requests).
        down_reason: Why a node is down now ('' while it runs): steps that need it fail at
            once.
    """

    def __init__(
        self,
        node: Node,
        joint_names: tuple[str, ...],
        poses: dict,
        events: dict[str, Callable[..., None]],
        key: GraphKey,
        down_reason: Callable[[str], str] = lambda _node: '',
    ) -> None:
        self._node = node
        self._joint_names = joint_names
        self._poses = poses
        self._events = events
        self._down_reason = down_reason
        group = ReentrantCallbackGroup()
        self._waits = Waits(node, group)
        self._hardware = HardwareLink(node, group, key, self._waits)
        self._goals = GoalTracker(
            key, self._motion_ended, events.get('play_feedback', lambda _feedback: None)
        )
        self._servers = MotionServers(node, group, self._waits, self._goals, down_reason)
        self._decided: deque[Decided] = deque()  # waiting their turn
        self._current: Decided | None = None  # being carried out
        self._work: object | None = None  # completed when a decision comes
        # Counts latches and shutdowns without motion: a moving step decided under an older
        # count is dropped, with the reason.
        self._drops = 0
        self._drop_reason = ''
        self._held: Decided | None = None  # a play or HIT waiting for the motions to end
        self._motions_ended: object | None = None  # completed when they have
        self._met = False  # every server answered once (see _meet)
        self._stopped = False
        # The coroutine starts with the executor (a timer's first call), in a group of its own.
        self._start = node.create_timer(
            0.0, self._carry_out, callback_group=MutuallyExclusiveCallbackGroup()
        )

    # ------------------------------------------------------------------ decisions
    def submit(self, actions: tuple, completion: Completion | None = None) -> None:
        """Carry out a decision's actions in turn; ``completion`` follows its (first) motion or
        play. ESTOP and RESET happen now; a PAUSE, speed, stop or halt applies at once to a
        play waiting for the motions to end; with a Shutdown, the motions decided before it
        never start."""
        if any(isinstance(action, act.EstopHardware) for action in actions):
            self.estop_now()
        if any(isinstance(action, act.ResetHardware) for action in actions):
            self._hardware.reset_now(self._down_reason(HARDWARE_NODE))
        if act.Shutdown() in actions:
            self.drop_earlier_motions('the controller shuts down')
        actions = tuple(
            a for a in actions if not isinstance(a, AT_ONCE) and not self._to_waiting_play(a)
        )
        if not actions:
            if completion is not None:
                completion.finish(True, '')
            return
        self._decided.append(Decided(actions, completion, self._drops))
        if self._work is not None:
            complete(self._work)

    def meet_graph(self) -> None:
        """At start-up, before any command: exchange one request with every server the steps
        use, as upstream set everything up before STANDBY. START then only activates the
        hardware and sends its motion; a START that comes earlier waits behind this."""
        self.submit((MeetGraph(),))

    def stop(self) -> None:
        self._stopped = True
        if self._work is not None:
            complete(self._work)

    @property
    def motions_queued(self) -> int:
        """Motion goals running, and decisions not yet carried out (a play or HIT waiting for
        the motions to end is not counted again: they are)."""
        current = 0 if self._current is None or self._held is not None else 1
        return self._goals.motions_running + len(self._decided) + current

    def estop_now(self) -> None:
        """Latch the hardware's ESTOP now (:meth:`HardwareLink.estop_now`); the motions
        decided before it never start."""
        self._hardware.estop_now()
        self.drop_earlier_motions('emergency stop')

    def permit_joint_trajectory(self, allowed: bool) -> None:
        """Tell the hardware whether ~/joint_trajectory may be followed (the planner is IDLE);
        nobody waits for the answer."""
        self._hardware.permit_joint_trajectory(allowed)

    def drop_earlier_motions(self, reason: str) -> None:
        """The robot latched (ESTOP or a fault), or shuts down without motion: a waiting play
        or HIT is dropped, and so are the moving steps of everything decided before now,
        whatever a RESET does next (e.g. the START motion behind the activation QUIT came
        during)."""
        self._drops += 1
        self._drop_reason = reason
        self._drop_held(reason)

    def node_down(self, node: str, reason: str) -> None:
        """End the goals that run on ``node`` with ``reason`` (it will never answer)."""
        self._goals.end_on(node, reason)

    # ------------------------------------------------------------------ the waiting play
    def _to_waiting_play(self, action) -> bool:
        """Apply a play control to the play that has not started: held until the motions end,
        or decided and waiting its turn (True: that was all the step had to do)."""
        if isinstance(action, act.HaltMotion):
            self._drop_held('dropped before it started')
            return False
        if not isinstance(action, act.PausePlay | act.SetPlaySpeed | act.StopPlay):
            return False
        found = self._waiting_play()
        if found is None:
            return False
        index, waiting = found
        if isinstance(action, act.SetPlaySpeed):
            play = replace(waiting.actions[0], speed=action.speed)
            self._put_waiting(index, replace(waiting, actions=(play,)))
            return True
        self._take_waiting(index)
        if isinstance(action, act.StopPlay):
            self._drop(waiting.actions[0], waiting.completion, 'dropped before it started')
            return False  # the score player is told to stop all the same
        self._end_paused(waiting)
        return True

    def _waiting_play(self) -> tuple[int | None, Decided] | None:
        """(its place in the queue, None when held; the decision) of a play not started."""
        if self._held is not None and isinstance(self._held.actions[0], PLAYS):
            return None, self._held
        for index, decided in enumerate(self._decided):
            if isinstance(decided.actions[0], PLAYS):
                return index, decided
        return None

    def _put_waiting(self, index: int | None, decided: Decided) -> None:
        if index is None:
            self._held = decided
        else:
            self._decided[index] = decided

    def _take_waiting(self, index: int | None) -> None:
        if index is None:
            self._held = None
            complete(self._motions_ended)
        else:
            del self._decided[index]

    def _end_paused(self, waiting: Decided) -> None:
        """PAUSE of a play that has not started: it ends paused where it would have begun,
        so RESUME starts it from there."""
        action = waiting.actions[0]
        bar = action.bar if isinstance(action, act.ResumePlay) else max(action.start_bar, 1)
        reason = 'paused before it started'
        result = Play.Result(success=False, reason=reason, resume_valid=True, resume_bar=bar)
        if waiting.completion is not None and not waiting.completion.done.is_set():
            waiting.completion.finish(False, reason, result)
        self._events['play_ended'](action.play_id, result, False, reason)

    def _drop_held(self, reason: str) -> None:
        held, self._held = self._held, None
        if held is not None:
            complete(self._motions_ended)
            self._drop(held.actions[0], held.completion, reason)

    def _drop(self, action, completion: Completion | None, reason: str) -> None:
        """End a step that will not run; a play ends like a play."""
        if completion is not None and not completion.done.is_set():
            completion.finish(False, reason)
        if isinstance(action, PLAYS):
            self._events['play_ended'](action.play_id, None, False, reason)

    async def _after_the_motions(self, decided: Decided):
        """The play or HIT step to send once no motion runs; None when it was dropped or
        paused meanwhile. The dispatcher waits here: everything decided later is decided
        after it."""
        if self._goals.motions_running == 0:
            return decided.actions[0]
        self._held = decided
        self._motions_ended = waking_future(self._node)
        await self._motions_ended
        held, self._held = self._held, None
        return None if held is None else held.actions[0]

    # ------------------------------------------------------------------ carrying out
    async def _carry_out(self) -> None:
        """The dispatcher's coroutine: the decisions in turn, until :meth:`stop`."""
        self._start.cancel()
        while not self._stopped:
            if not self._decided:
                self._work = waking_future(self._node)
                await self._work
                continue
            self._current = self._decided.popleft()
            try:
                await self._carry_out_one(self._current)
            except Exception as error:  # e.g. in a failure's report: the dispatcher lives on
                self._node.get_logger().error(f'planner: {type(error).__name__}: {error}')
            finally:
                self._current = None

    async def _carry_out_one(self, decided: Decided) -> None:
        for action in decided.actions:
            if decided.drops != self._drops and isinstance(action, MOVING_STEPS):
                reason = f'dropped before it started: {self._drop_reason}'
                self._node.get_logger().warning(f'{type(action).__name__} {reason}')
                self._drop(action, decided.completion, reason)
                continue
            try:
                await self._step(action, decided)
            except Exception as error:  # one failed step ends its decision
                reason = f'{type(action).__name__} failed: {error}'
                self._node.get_logger().error(reason)
                if decided.completion is not None and not decided.completion.done.is_set():
                    decided.completion.finish(False, reason)
                self._events['failed'](reason)
                return

    async def _step(self, action, decided: Decided) -> None:
        completion = decided.completion
        if isinstance(action, MeetGraph):
            try:
                await self._meet()
            except Exception as error:  # not a fault: START meets the graph again
                self._node.get_logger().warning(
                    f'graph not met at start-up ({error}); START will try again'
                )
            self._events['graph_met']()
        elif isinstance(action, act.ActivateHardware):
            if not self._met:
                await self._meet()
            await self._hardware.activate()
            self._events['start_completed']()
        elif (motion := motion_goal(action, self._joint_names, self._poses)) is not None:
            await self._servers.send_motion(*motion, completion)
        elif isinstance(action, (act.StrikeInstrument, *PLAYS)):
            action = await self._after_the_motions(replace(decided, actions=(action,)))
            if isinstance(action, act.StrikeInstrument):
                goal = Hit.Goal(
                    instrument=action.instrument, velocity=action.velocity, hand=action.hand
                )
                await self._servers.send_hit(goal, completion)
            elif action is not None:
                await self._servers.send_play(play_goal(action), completion)
        elif isinstance(action, act.PausePlay):
            await self._servers.trigger('/score_player/pause')
        elif isinstance(action, act.StopPlay):
            await self._servers.trigger('/score_player/stop')
        elif isinstance(action, act.SetPlaySpeed):
            await self._servers.set_speed(action.speed)
        elif isinstance(action, act.HaltMotion):
            await self._servers.trigger('/trajectory_generator/halt')
        elif isinstance(action, act.Shutdown):
            try:
                # A hardware node that is down has nothing left to switch off (its bus loop
                # left the drives safe when it went); the graph ends all the same.
                if not self._down_reason(HARDWARE_NODE):
                    await self._hardware.shut_down()
            finally:
                self._events['shutdown']()
        else:
            raise TypeError(f'unknown action {action!r}')

    async def _meet(self) -> None:
        """Exchange one request with every server before the first motion (see
        :mod:`discovery`)."""
        await self._servers.meet()
        await self._hardware.meet()
        self._met = True

    def _motion_ended(self, sent: SentGoal, result, success: bool, reason: str) -> None:
        """A goal's end (GoalTracker): the completion, the planner's events."""
        completion = sent.completion
        if completion is not None and not completion.done.is_set():
            completion.finish(success, reason, result)
        if not success and not sent.play:  # a play's end is logged by the node
            self._node.get_logger().warning(f'motion ended early: {reason}')
        if sent.play:
            self._events['play_ended'](sent.play_id, result, success, reason)
            return
        if self._goals.motions_running == 0:
            if self._held is not None:
                complete(self._motions_ended)
            self._events['motion_finished']()
