"""The behavior planner's links to the rest of the graph: it carries out the state machine's
actions (hardware lifecycle, motion goals, play goals, services) in order, on its own thread.

Only this worker thread waits; ROS callbacks never do. Each step waits for what makes the next
one safe (a lifecycle transition to finish, a goal to be accepted so goals reach the trajectory
generator in order), never for a motion to end: completions arrive later through callbacks.

A motion decided while the worker has nothing to do leaves from the deciding callback itself
(sending a goal does not wait) and only its acceptance is awaited on the worker: the hand-over
to the worker thread cost up to 3 ms of the command latency.

ESTOP never waits for the worker: it is carried out in the deciding callback, through the ESTOP
word (the bus loop latches from it within a tick, whatever else runs or hangs); only when the
word cannot be written, through a /hardware/estop call nobody waits for. (Always calling it
raced the next RESET: served after it, the late call latched the robot again.) RESET leaves
from the deciding callback too, as a request nobody waits for: queued, it waited behind a step
blocked on a node that was stopped when the latch came, and the robot stayed latched after the
node was back. The hardware node decides (it refuses while a node is down, or when an ESTOP
came after the RESET was asked). Since RESET no longer waits its turn, nothing decided before
a latch may move the robot after it: the motion steps of items queued before an ESTOP or a
fault are dropped (:meth:`GraphLinks.drop_earlier_motions`). A step that
needs a node the planner's graph watch sees down fails at once with the reason instead of
waiting for its timeout, and the goals running on a node that goes down end with that reason.

Goals carry a goal id signed with the graph key (the trajectory generator and the score player
take goals from the planner only), and the hardware's lifecycle and RESET go through signed
requests (``planner_calls.HardwareLifecycle``).
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from phil_control.core.behavior import actions as act
from phil_control.planner_calls import (
    RETRY_ATTEMPT_S,
    STEP_TIMEOUT_S,
    HardwareLifecycle,
    call_service,
    retry,
    wait_for,
)
from phil_description.core.estop_word import estop_word_name, trigger_estop
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Gesture, Hit, Look, Move, Play
from phil_msgs.srv import SetSpeed, Trigger
from phil_ros.graph_safety import signed_goal_id

HARDWARE_NODE = '/hardware'
#: The nodes a motion needs, besides the planner.
MOTION_PATH = (HARDWARE_NODE, '/trajectory_generator', '/score_player')
#: Motions queued or running at most; one more is refused (a flood of LOOKs would otherwise
#: queue minutes of motion and keep the command path busy planning them).
MAX_QUEUED_MOTIONS = 8
PLAYS = (act.StartPlay, act.ResumePlay)
#: Steps carried out in the deciding callback, never queued.
AT_ONCE = (act.EstopHardware, act.ResetHardware)
#: Steps that move the robot: dropped when a latch came after they were decided.
MOVING_STEPS = (
    act.MoveToPose,
    act.LookAt,
    act.PerformGesture,
    act.MoveJoints,
    act.StrikeInstrument,
    act.StartPlay,
    act.ResumePlay,
)


@dataclass(frozen=True)
class SendHeld:
    """Worker step: send the play or HIT held back until the motions ended."""


@dataclass(frozen=True)
class MeetGraph:
    """Worker step at start-up: exchange one request with every server (:meth:`GraphLinks.
    meet_graph`)."""


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


def serving_node(name: str) -> str:
    """The node that serves an action or service name ('/score_player/stop' -> '/score_player')."""
    return '/' + name.strip('/').split('/')[0]


@dataclass
class Completion:
    """Filled in when a started motion or play ends; a user goal may wait on it
    (``on_finish`` runs once it is filled in, from whichever thread finishes it)."""

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


class GraphLinks:
    """Clients of the hardware, trajectory generator and score player, and the action worker.

    Args:
        node: the behavior planner node (clients are created on it).
        joint_names: the model's joint order (for pose moves).
        poses: named poses, rad in joint order.
        events: callbacks into the planner: ``motion_finished()``, ``start_completed()``,
            ``play_ended(result)``, ``failed(reason)``, ``shutdown()``, ``graph_met()`` (after
            :meth:`meet_graph`, whether every server answered or not).
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
        self._key = key
        self._down_reason = down_reason
        self._estop_word = estop_word_name(node.context.get_domain_id(), HARDWARE_NODE)
        group = ReentrantCallbackGroup()
        self._hardware = HardwareLifecycle(node, group, key)
        self._action_names: dict[ActionClient, str] = {}
        self._motion = {
            kind: self._action_client(kind, f'/trajectory_generator/{name}', group)
            for kind, name in ((Look, 'look'), (Gesture, 'gesture'), (Move, 'move'))
        }
        self._play = self._action_client(Play, '/score_player/play', group)
        self._hit = self._action_client(Hit, '/score_player/hit', group)
        self._triggers = {
            name: node.create_client(Trigger, name, callback_group=group)
            for name in (
                '/trajectory_generator/halt',
                '/score_player/pause',
                '/score_player/stop',
                '/hardware/estop',
            )
        }
        self._speed = node.create_client(SetSpeed, '/score_player/speed', callback_group=group)
        self._queue: queue.Queue = queue.Queue()
        # Counts latches and shutdowns without motion: an item queued under an older count
        # was decided before the last one, and its motion steps are dropped, with its reason.
        self._drops = 0
        self._drop_reason = ''
        # Items queued or running on the worker; a goal leaves at once only when it is 0, so
        # goals still reach the trajectory generator in decision order.
        self._items_pending = 0
        self._order_lock = threading.Lock()
        self._motions_in_flight = 0
        self._count_lock = threading.Lock()
        # A play or HIT waiting for the running motions to end (see _defer_until_motions_end).
        self._after_motions: tuple | None = None
        # Accepted goals whose result has not come: ended by their result or their node going
        # down, whichever is first.
        self._running: dict[int, SentGoal] = {}
        self._met = False  # every server answered once (see _meet)
        self._worker = threading.Thread(target=self._work, name='planner-actions', daemon=True)
        self._worker.start()

    def _action_client(self, kind: type, name: str, group) -> ActionClient:
        client = ActionClient(self._node, kind, name, callback_group=group)
        self._action_names[client] = name
        return client

    # ------------------------------------------------------------------ queueing
    def submit(self, actions: tuple, completion: Completion | None = None) -> None:
        """Queue a decision's actions; ``completion`` tracks its (first) motion or play. An
        ESTOP or a RESET among them is carried out at once, before anything queued; with a
        Shutdown, the motions queued before it never start."""
        if any(isinstance(action, act.EstopHardware) for action in actions):
            self.estop_now()
        if any(isinstance(action, act.ResetHardware) for action in actions):
            self._reset_now()
        if act.Shutdown() in actions:
            self.drop_earlier_motions('the controller shuts down')
        actions = tuple(a for a in actions if not isinstance(a, AT_ONCE))
        if not actions:
            if completion is not None:
                completion.finish(True, '')
            return
        with self._order_lock:
            sent = self._send_at_once(actions[0], completion) if self._items_pending == 0 else None
            self._items_pending += 1
            self._queue.put((actions, completion, sent, self._drops))

    def meet_graph(self) -> None:
        """Before the first command, on the worker: exchange one request with every server the
        steps use (action servers, the hardware's lifecycle state and request services), as
        upstream set everything up before STANDBY. START then only activates the hardware and
        sends its motion; a START that comes earlier waits behind this, in order."""
        self.submit((MeetGraph(),))

    def stop(self) -> None:
        self._queue.put(None)

    @property
    def motions_queued(self) -> int:
        """Motion goals running or waiting to be sent (with the queued steps)."""
        with self._count_lock:
            return self._motions_in_flight + self._items_pending

    def estop_now(self) -> None:
        """Latch the hardware's ESTOP now: the ESTOP word, or /hardware/estop (without
        waiting for an answer) when the word cannot be written."""
        problem = trigger_estop(self._estop_word)
        if problem:
            self._node.get_logger().error(f'ESTOP word: {problem}; calling /hardware/estop')
            client = self._triggers['/hardware/estop']
            if client.service_is_ready():
                client.call_async(Trigger.Request())
        self.drop_earlier_motions('emergency stop')

    def drop_earlier_motions(self, reason: str) -> None:
        """The robot latched (ESTOP or a fault), or shuts down without motion: a held play or
        HIT is dropped, and so are the motion steps of everything queued before now, whatever
        a RESET does next (e.g. the START motion behind the activation QUIT came during)."""
        with self._order_lock:
            self._drops += 1
            self._drop_reason = reason
        self.drop_deferred(reason)

    def _reset_now(self) -> None:
        """Ask the hardware for a RESET without waiting; its refusal is logged (the hardware's
        status says what it did)."""
        logger = self._node.get_logger()
        reason = self._down_reason(HARDWARE_NODE)
        future = None if reason else self._hardware.request_async('reset')
        if future is None:
            logger.warning(
                f'RESET not sent to the hardware: {reason or "/hardware/request is not available"}'
            )
            return

        def answered(done) -> None:
            error = done.exception()
            if error is not None:
                logger.error(f'RESET request failed: {error}')
            elif not done.result().accepted:
                logger.warning(f'RESET refused by the hardware: {done.result().reason}')

        future.add_done_callback(answered)

    def permit_joint_trajectory(self, allowed: bool) -> None:
        """Tell the hardware whether ~/joint_trajectory may be followed (the planner is IDLE);
        nobody waits for the answer."""
        name = 'allow_joint_trajectory' if allowed else 'forbid_joint_trajectory'
        if self._hardware.request_async(name) is None and allowed:
            self._node.get_logger().warning(f'{name}: /hardware/request is not available')

    def node_down(self, node: str, reason: str) -> None:
        """End the goals that run on ``node`` with ``reason`` (it will never answer)."""
        with self._count_lock:
            ended = [
                sent
                for key, sent in self._running.items()
                if serving_node(sent.action_name) == node
            ]
        for sent in ended:
            self._end(sent, None, False, reason)

    def _send_at_once(self, action, completion: Completion | None) -> SentGoal | None:
        """Send a motion goal from the caller's thread (None: the worker must run the step)."""
        try:
            motion = self._motion_goal(action)
            if motion is None:
                return None
            kind, goal = motion
            client = self._motion[kind]
            if not client.server_is_ready():
                return None
            return self._dispatch(client, goal, completion, play=False)
        except Exception as error:  # the worker runs the step again and reports what fails
            self._node.get_logger().warning(f'{type(action).__name__} not sent at once: {error}')
            return None

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._run_item(*item)
            except Exception as error:  # e.g. in a failure's report: the worker must live on
                self._node.get_logger().error(f'planner worker: {type(error).__name__}: {error}')
            finally:
                with self._order_lock:
                    self._items_pending -= 1

    def _run_item(
        self,
        actions: tuple,
        completion: Completion | None,
        sent: SentGoal | None,
        drops: int,
    ) -> None:
        """Run the steps in order; ``drops``: ``self._drops`` when they were decided."""
        for index, action in enumerate(actions):
            try:
                if index == 0 and sent is not None:
                    self._await_accepted(sent)
                elif drops != self._drops and isinstance(action, MOVING_STEPS):
                    reason = f'dropped before it started: {self._drop_reason}'
                    self._node.get_logger().warning(f'{type(action).__name__} {reason}')
                    self._drop(action, completion, reason)
                else:
                    self._run(action, completion, drops)
            except Exception as error:  # one failed step must not kill the worker
                reason = f'{type(action).__name__} failed: {error}'
                self._node.get_logger().error(reason)
                if completion is not None and not completion.done.is_set():
                    completion.finish(False, reason)
                self._events['failed'](reason)
                return

    # ------------------------------------------------------------------ steps
    def _run(self, action, completion: Completion | None, drops: int) -> None:
        if isinstance(action, MeetGraph):
            try:
                self._meet()
            except Exception as error:  # not a fault: START meets the graph again
                self._node.get_logger().warning(
                    f'graph not met at start-up ({error}); START will try again'
                )
            self._events['graph_met']()
        elif isinstance(action, act.ActivateHardware):
            if not self._met:
                self._meet()
            self._hardware.activate()
            self._events['start_completed']()
        elif (motion := self._motion_goal(action)) is not None:
            kind, goal = motion
            self._send_goal(self._motion[kind], goal, completion, play=False)
        elif isinstance(action, act.StrikeInstrument):
            if self._defer_until_motions_end(action, completion, drops):
                return
            goal = Hit.Goal(
                instrument=action.instrument, velocity=action.velocity, hand=action.hand
            )
            self._send_goal(self._hit, goal, completion, play=False)
        elif isinstance(action, PLAYS):
            if self._defer_until_motions_end(action, completion, drops):
                return
            self._send_goal(self._play, play_goal(action), completion, play=True)
        elif isinstance(action, SendHeld):
            with self._count_lock:
                held, self._after_motions = self._after_motions, None
            if held is not None:  # not dropped or paused meanwhile
                self._run(*held)
        elif isinstance(action, act.PausePlay):
            if not self._pause_held_play():
                self._trigger('/score_player/pause')
        elif isinstance(action, act.StopPlay):
            self.drop_deferred()
            self._trigger('/score_player/stop')
        elif isinstance(action, act.SetPlaySpeed):
            if not self._set_held_play_speed(action.speed):
                call_service(self._speed, SetSpeed.Request(speed=action.speed))
        elif isinstance(action, act.HaltMotion):
            self.drop_deferred()
            self._trigger('/trajectory_generator/halt')
        elif isinstance(action, act.Shutdown):
            try:
                # A hardware node that is down has nothing left to switch off (its bus loop
                # left the drives safe when it went); the graph ends all the same.
                if not self._down_reason(HARDWARE_NODE):
                    self._hardware.shut_down()
            finally:
                self._events['shutdown']()
        else:
            raise TypeError(f'unknown action {action!r}')

    def _motion_goal(self, action) -> tuple[type, Any] | None:
        """(action type, goal) of a motion step; None for every other step."""
        if isinstance(action, act.MoveToPose):
            pose = self._poses[action.pose]
            return Move, Move.Goal(
                joint_names=list(self._joint_names),
                positions_rad=[float(v) for v in pose],
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

    def _defer_until_motions_end(self, action, completion, drops: int) -> bool:
        """Hold a play or HIT back while motion goals run (True = held): the score player
        plans from the pose the motions end in, not from one they are about to leave. The
        worker stays free meanwhile (ESTOP must never wait behind a motion)."""
        with self._count_lock:
            if self._motions_in_flight == 0:
                return False
            self._after_motions = (action, completion, drops)
            return True

    def _held_play(self) -> tuple | None:
        """The step held back until the motions end, when it is a play (``_count_lock``
        held)."""
        held = self._after_motions
        return held if held is not None and isinstance(held[0], PLAYS) else None

    def _pause_held_play(self) -> bool:
        """PAUSE of a play still held back (True): it ends paused where it would have begun,
        so RESUME starts it from there."""
        with self._count_lock:
            held = self._held_play()
            if held is None:
                return False
            self._after_motions = None
        action, completion, _drops = held
        bar = action.bar if isinstance(action, act.ResumePlay) else max(action.start_bar, 1)
        reason = 'paused before it started'
        result = Play.Result(success=False, reason=reason, resume_valid=True, resume_bar=bar)
        if completion is not None and not completion.done.is_set():
            completion.finish(False, reason, result)
        self._events['play_ended'](action.play_id, result, False, reason)
        return True

    def _set_held_play_speed(self, speed: float) -> bool:
        """A speed for a play still held back (True): it starts at that speed."""
        with self._count_lock:
            held = self._held_play()
            if held is None:
                return False
            action, completion, drops = held
            self._after_motions = (replace(action, speed=speed), completion, drops)
        return True

    def drop_deferred(self, reason: str = 'dropped before it started') -> None:
        """Forget a held play or HIT (stop, halt, ESTOP, a hardware fault); a held play ends
        like a play, so the state machine leaves PLAYING."""
        with self._count_lock:
            deferred, self._after_motions = self._after_motions, None
        if deferred is None:
            return
        action, completion, _drops = deferred
        self._drop(action, completion, reason)

    def _drop(self, action, completion: Completion | None, reason: str) -> None:
        """End a step that will not run; a play ends like a play."""
        if completion is not None and not completion.done.is_set():
            completion.finish(False, reason)
        if isinstance(action, act.StartPlay | act.ResumePlay):
            self._events['play_ended'](action.play_id, None, False, reason)

    def _require(self, node: str) -> None:
        """RuntimeError with the reason when ``node`` is down (its calls would time out)."""
        reason = self._down_reason(node)
        if reason:
            raise RuntimeError(reason)

    def _trigger(self, name: str) -> None:
        self._require(serving_node(name))
        response = call_service(self._triggers[name], Trigger.Request())
        if not response.accepted:
            self._node.get_logger().warning(f'{name} refused: {response.reason}')

    def _meet(self) -> None:
        """Exchange a request with every server before the first motion.

        ROS 2 service discovery has a race: a server can receive a request before it has
        matched the client's response reader, and rmw_fastrtps then drops the response after
        100 ms ("client will not receive response"); the goal would run while the planner
        waits in vain. Probe goals are invalid (each server refuses them with a reason and
        moves nothing), so a lost answer is simply asked for again; the hardware is asked for
        its lifecycle state (which also waits for its start-up configure) and whether it has
        seen every node it watches (``HardwareLifecycle.meet``).
        """
        probes = (
            (self._motion[Move], Move.Goal(joint_names=['(discovery probe)'])),
            (self._motion[Look], Look.Goal(pan_rad=math.nan)),
            (self._motion[Gesture], Gesture.Goal(gesture='(discovery probe)')),
            (self._play, Play.Goal(score='(discovery probe)')),
            (self._hit, Hit.Goal(instrument='(discovery probe)')),
        )
        for client, goal in probes:
            retry(lambda c=client, g=goal: self._probe(c, g), self._action_names[client])
        self._hardware.meet()
        self._met = True

    def _probe(self, client: ActionClient, goal) -> None:
        name = self._action_names[client]
        if not client.wait_for_server(timeout_sec=RETRY_ATTEMPT_S):
            raise TimeoutError(f'action {name} is not available')
        handle = wait_for(client.send_goal_async(goal), name, RETRY_ATTEMPT_S)
        if handle.accepted:
            wait_for(handle.get_result_async(), name, RETRY_ATTEMPT_S)

    def _send_goal(
        self, client: ActionClient, goal, completion: Completion | None, play: bool
    ) -> None:
        name = self._action_names[client]
        self._require(serving_node(name))
        if not client.wait_for_server(timeout_sec=STEP_TIMEOUT_S):
            raise RuntimeError(f'action {name} is not available')
        self._await_accepted(self._dispatch(client, goal, completion, play))

    def _dispatch(
        self, client: ActionClient, goal, completion: Completion | None, play: bool
    ) -> SentGoal:
        """Send a goal (never waits); :meth:`_await_accepted` follows it up."""
        feedback = None
        if completion is not None and completion.on_feedback is not None:
            feedback = completion.on_feedback

        def on_feedback(message) -> None:
            if feedback is not None:
                feedback(message.feedback)

        future = client.send_goal_async(
            goal, feedback_callback=on_feedback, goal_uuid=signed_goal_id(self._key)
        )
        name = self._action_names[client]
        sent = SentGoal(name, future, getattr(goal, 'score', ''), play, completion)
        with self._count_lock:  # before the goal's result can arrive (_await_accepted)
            self._motions_in_flight += 0 if play else 1
            self._running[id(sent)] = sent
        return sent

    def _await_accepted(self, sent: SentGoal) -> None:
        try:
            handle = wait_for(sent.future, sent.action_name)
        except TimeoutError as error:
            self._end(sent, None, False, str(error))
            raise  # the worker reports the failed step
        if handle is None or not handle.accepted:
            self._end(sent, None, False, 'goal was not accepted')
            return
        handle.get_result_async().add_done_callback(
            lambda future: self._end(
                sent,
                future.result().result,
                bool(future.result().result.success),
                future.result().result.reason,
            )
        )

    def _end(self, sent: SentGoal, result, success: bool, reason: str) -> None:
        """A goal's end, once: its result, or its node going down."""
        with self._count_lock:
            if self._running.pop(id(sent), None) is None:
                return
        self._motion_ended(sent.play_id, sent.play, result, sent.completion, success, reason)

    def _motion_ended(
        self,
        play_id: str,
        play: bool,
        result,
        completion: Completion | None,
        success: bool,
        reason: str,
    ) -> None:
        if completion is not None and not completion.done.is_set():
            completion.finish(success, reason, result)
        if not success and not play:  # a play's end is logged by the node
            self._node.get_logger().warning(f'motion ended early: {reason}')
        if play:
            self._events['play_ended'](play_id, result, success, reason)
            return
        with self._count_lock:
            self._motions_in_flight -= 1
            idle = self._motions_in_flight == 0
            held = idle and self._after_motions is not None
        if held:
            # The held step stays held until the worker sends it: a PAUSE, stop or speed
            # queued before this point still finds it there (the score player has no play
            # yet to pause).
            with self._order_lock:
                self._items_pending += 1
                self._queue.put(((SendHeld(),), None, None, self._drops))
        if idle:
            self._events['motion_finished']()
