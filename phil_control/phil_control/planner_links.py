"""The behavior planner's links to the rest of the graph: it carries out the state machine's
actions (hardware lifecycle, motion goals, play goals, services) in order, on its own thread.

Only this worker thread waits; ROS callbacks never do. Each step waits for what makes the next
one safe (a lifecycle transition to finish, a goal to be accepted so goals reach the trajectory
generator in order), never for a motion to end: completions arrive later through callbacks.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from phil_control.core.behavior import actions as act
from phil_msgs.action import Gesture, Hit, Look, Move, Play
from phil_msgs.srv import SetSpeed, Trigger

STEP_TIMEOUT_S = 10.0
ACTIVATE_TIMEOUT_S = 60.0
# One attempt of a request that may be repeated (a goal probe, a lifecycle state query).
RETRY_ATTEMPT_S = 1.0


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
class GoalOptions:
    """What a ROS goal adds to its protocol command (HIT has only the instrument, PLAY only
    the id, MOVE no profile)."""

    velocity: int = 5
    hand: str = ''
    speed: float = 1.0
    start_bar: int = 0
    improv: bool = False
    profile: str = ''


class GraphLinks:
    """Clients of the hardware, trajectory generator and score player, and the action worker.

    Args:
        node: the behavior planner node (clients are created on it).
        joint_names: the model's joint order (for pose moves).
        poses: named poses, rad in joint order.
        events: callbacks into the planner: ``motion_finished()``, ``start_completed()``,
            ``play_ended(result)``, ``failed(reason)``, ``shutdown()``.
    """

    def __init__(self, node: Node, joint_names: tuple[str, ...], poses: dict,
                 events: dict[str, Callable[..., None]]) -> None:
        self._node = node
        self._joint_names = joint_names
        self._poses = poses
        self._events = events
        group = ReentrantCallbackGroup()
        self._lifecycle_change = node.create_client(ChangeState, '/hardware/change_state',
                                                    callback_group=group)
        self._lifecycle_get = node.create_client(GetState, '/hardware/get_state',
                                                 callback_group=group)
        self._motion = {kind: ActionClient(node, kind, f'/trajectory_generator/{name}',
                                           callback_group=group)
                        for kind, name in ((Look, 'look'), (Gesture, 'gesture'), (Move, 'move'))}
        self._play = ActionClient(node, Play, '/score_player/play', callback_group=group)
        self._hit = ActionClient(node, Hit, '/score_player/hit', callback_group=group)
        self._triggers = {name: node.create_client(Trigger, name, callback_group=group) for name in
                          ('/trajectory_generator/halt', '/score_player/pause',
                           '/score_player/stop', '/hardware/estop', '/hardware/reset')}
        self._speed = node.create_client(SetSpeed, '/score_player/speed', callback_group=group)
        self._queue: queue.Queue = queue.Queue()
        self._motions_in_flight = 0
        self._count_lock = threading.Lock()
        # A play or HIT waiting for the running motions to end (see _defer_until_motions_end).
        self._after_motions: tuple | None = None
        self._worker = threading.Thread(target=self._work, name='planner-actions', daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ queueing
    def submit(self, actions: tuple, completion: Completion | None = None,
               options: GoalOptions | None = None) -> None:
        """Queue a decision's actions; ``completion`` tracks its (first) motion or play."""
        if actions:
            self._queue.put((actions, completion, options or GoalOptions()))
        elif completion is not None:
            completion.finish(True, '')

    def stop(self) -> None:
        self._queue.put(None)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            actions, completion, options = item
            for action in actions:
                try:
                    self._run(action, completion, options)
                except Exception as error:  # one failed step must not kill the worker
                    reason = f'{type(action).__name__} failed: {error}'
                    self._node.get_logger().error(reason)
                    if completion is not None and not completion.done.is_set():
                        completion.finish(False, reason)
                    self._events['failed'](reason)
                    break

    # ------------------------------------------------------------------ steps
    def _run(self, action, completion: Completion | None, options: GoalOptions) -> None:
        if isinstance(action, act.ActivateHardware):
            self._handshake()
            self._activate_hardware()
            self._events['start_completed']()
        elif isinstance(action, act.MoveToPose):
            pose = self._poses[action.pose]
            self._send_motion(Move, Move.Goal(joint_names=list(self._joint_names),
                                              positions_rad=[float(v) for v in pose],
                                              duration_s=action.duration_s,
                                              profile=action.profile.value), completion)
        elif isinstance(action, act.LookAt):
            self._send_motion(Look, Look.Goal(pan_rad=action.pan_rad, tilt_rad=action.tilt_rad,
                                              duration_s=action.duration_s), completion)
        elif isinstance(action, act.PerformGesture):
            self._send_motion(Gesture, Gesture.Goal(gesture=action.name), completion)
        elif isinstance(action, act.MoveJoints):
            names, positions = zip(*action.targets, strict=True)
            self._send_motion(Move, Move.Goal(joint_names=list(names),
                                              positions_rad=list(positions),
                                              duration_s=action.duration_s,
                                              profile=options.profile or action.profile.value),
                              completion)
        elif isinstance(action, act.StrikeInstrument):
            if self._defer_until_motions_end(action, completion, options):
                return
            goal = Hit.Goal(instrument=action.instrument, velocity=options.velocity,
                            hand=options.hand)
            self._send_goal(self._hit, goal, completion, play=False)
        elif isinstance(action, act.StartPlay | act.ResumePlay):
            if self._defer_until_motions_end(action, completion, options):
                return
            goal = Play.Goal(score=action.play_id, speed=options.speed,
                             start_bar=options.start_bar, improv=options.improv)
            if isinstance(action, act.ResumePlay):
                goal.start_bar, goal.resume = action.bar, True
            self._send_goal(self._play, goal, completion, play=True)
        elif isinstance(action, act.PausePlay):
            self._trigger('/score_player/pause')
        elif isinstance(action, act.StopPlay):
            self.drop_deferred()
            self._trigger('/score_player/stop')
        elif isinstance(action, act.SetPlaySpeed):
            self._call(self._speed, SetSpeed.Request(speed=action.speed))
        elif isinstance(action, act.HaltMotion):
            self.drop_deferred()
            self._trigger('/trajectory_generator/halt')
        elif isinstance(action, act.EstopHardware):
            self.drop_deferred()
            self._trigger('/hardware/estop')
        elif isinstance(action, act.ResetHardware):
            self._trigger('/hardware/reset')
        elif isinstance(action, act.Shutdown):
            self._shut_down_hardware()
            self._events['shutdown']()
        else:
            raise TypeError(f'unknown action {action!r}')

    def _defer_until_motions_end(self, action, completion, options) -> bool:
        """Hold a play or HIT back while motion goals run (True = held): the score player
        plans from the pose the motions end in, not from one they are about to leave. The
        worker stays free meanwhile (ESTOP must never wait behind a motion)."""
        with self._count_lock:
            if self._motions_in_flight == 0:
                return False
            self._after_motions = (action, completion, options)
            return True

    def drop_deferred(self, reason: str = 'dropped before it started') -> None:
        """Forget a held play or HIT (stop, halt, ESTOP, a hardware fault); a held play ends
        like a play, so the state machine leaves PLAYING."""
        with self._count_lock:
            deferred, self._after_motions = self._after_motions, None
        if deferred is None:
            return
        action, completion, _options = deferred
        if completion is not None and not completion.done.is_set():
            completion.finish(False, reason)
        if isinstance(action, act.StartPlay | act.ResumePlay):
            self._events['play_ended'](action.play_id, None, False, reason)

    def _wait(self, future, what: str, timeout_s: float = STEP_TIMEOUT_S):
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            raise TimeoutError(f'{what}: no answer within {timeout_s:.0f} s')
        return future.result()

    def _call(self, client, request, timeout_s: float = STEP_TIMEOUT_S):
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise RuntimeError(f'service {client.srv_name} is not available')
        return self._wait(client.call_async(request), client.srv_name, timeout_s)

    def _trigger(self, name: str) -> None:
        response = self._call(self._triggers[name], Trigger.Request())
        if not response.accepted:
            self._node.get_logger().warning(f'{name} refused: {response.reason}')

    def _handshake(self) -> None:
        """Exchange one goal and its result with every action server before the first motion.

        ROS 2 service discovery has a race: a server can receive a request before it has
        matched the client's response reader, and rmw_fastrtps then drops the response after
        100 ms ("client will not receive response"); the goal would run while the planner
        waits in vain. Probe goals are invalid (each server refuses them with a reason and
        moves nothing), so a lost answer is simply asked for again.
        """
        probes = ((self._motion[Move], Move.Goal(joint_names=['(discovery probe)'])),
                  (self._motion[Look], Look.Goal(pan_rad=math.nan)),
                  (self._motion[Gesture], Gesture.Goal(gesture='(discovery probe)')),
                  (self._play, Play.Goal(score='(discovery probe)')),
                  (self._hit, Hit.Goal(instrument='(discovery probe)')))
        for client, goal in probes:
            self._retry(lambda c=client, g=goal: self._probe(c, g), client._action_name)

    def _probe(self, client: ActionClient, goal) -> None:
        if not client.wait_for_server(timeout_sec=RETRY_ATTEMPT_S):
            raise TimeoutError(f'action {client._action_name} is not available')
        handle = self._wait(client.send_goal_async(goal), client._action_name, RETRY_ATTEMPT_S)
        if handle.accepted:
            self._wait(handle.get_result_async(), client._action_name, RETRY_ATTEMPT_S)

    def _query_hardware_state(self):
        client = self._lifecycle_get
        if not client.wait_for_service(timeout_sec=STEP_TIMEOUT_S):
            raise RuntimeError(f'service {client.srv_name} is not available')
        return self._wait(client.call_async(GetState.Request()), client.srv_name,
                          RETRY_ATTEMPT_S)

    @staticmethod
    def _retry(attempt: Callable[[], Any], what: str) -> Any:
        """``attempt()`` again after a TimeoutError, for up to STEP_TIMEOUT_S."""
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            try:
                return attempt()
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f'{what}: no answer within {STEP_TIMEOUT_S:.0f} s') \
                        from None

    def _primary_hardware_state(self) -> int:
        """The hardware's lifecycle state, after any transition in progress (e.g. the
        configure it runs at start-up) has finished."""
        deadline = time.monotonic() + ACTIVATE_TIMEOUT_S
        while True:
            state = self._retry(self._query_hardware_state,
                                self._lifecycle_get.srv_name).current_state.id
            if state < State.TRANSITION_STATE_CONFIGURING or time.monotonic() > deadline:
                return state
            time.sleep(0.1)

    def _activate_hardware(self) -> None:
        state = self._primary_hardware_state()
        steps = {State.PRIMARY_STATE_UNCONFIGURED: (Transition.TRANSITION_CONFIGURE,
                                                    Transition.TRANSITION_ACTIVATE),
                 State.PRIMARY_STATE_INACTIVE: (Transition.TRANSITION_ACTIVATE,),
                 State.PRIMARY_STATE_ACTIVE: ()}
        if state not in steps:
            raise RuntimeError(f'hardware lifecycle state {state} cannot be activated (see '
                               '/hardware/status)')
        for transition in steps[state]:
            request = ChangeState.Request()
            request.transition.id = transition
            if not self._call(self._lifecycle_change, request, ACTIVATE_TIMEOUT_S).success:
                raise RuntimeError(f'hardware refused lifecycle transition {transition} '
                                   '(see /hardware/status for the reason)')

    def _shut_down_hardware(self) -> None:
        if not self._lifecycle_get.wait_for_service(timeout_sec=2.0):
            return
        state = self._primary_hardware_state()
        transitions = {State.PRIMARY_STATE_ACTIVE: (Transition.TRANSITION_DEACTIVATE,
                                                    Transition.TRANSITION_CLEANUP),
                       State.PRIMARY_STATE_INACTIVE: (Transition.TRANSITION_CLEANUP,)}
        for transition in transitions.get(state, ()):
            request = ChangeState.Request()
            request.transition.id = transition
            self._call(self._lifecycle_change, request, ACTIVATE_TIMEOUT_S)

    def _send_motion(self, kind, goal, completion: Completion | None) -> None:
        self._send_goal(self._motion[kind], goal, completion, play=False)

    def _send_goal(self, client: ActionClient, goal, completion: Completion | None,
                   play: bool) -> None:
        play_id = getattr(goal, 'score', '')
        if not client.wait_for_server(timeout_sec=STEP_TIMEOUT_S):
            raise RuntimeError(f'action {client._action_name} is not available')
        feedback = None
        if completion is not None and completion.on_feedback is not None:
            feedback = completion.on_feedback

        def on_feedback(message) -> None:
            if feedback is not None:
                feedback(message.feedback)

        with self._count_lock:
            self._motions_in_flight += 0 if play else 1
        handle = self._wait(client.send_goal_async(goal, feedback_callback=on_feedback),
                            client._action_name)
        if handle is None or not handle.accepted:
            self._motion_ended(play_id, play, None, completion, False, 'goal was not accepted')
            return
        handle.get_result_async().add_done_callback(
            lambda future: self._result(future, play_id, play, completion))

    def _result(self, future, play_id: str, play: bool, completion: Completion | None) -> None:
        result = future.result().result
        self._motion_ended(play_id, play, result, completion, bool(result.success),
                           result.reason)

    def _motion_ended(self, play_id: str, play: bool, result, completion: Completion | None,
                      success: bool, reason: str) -> None:
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
            deferred = self._after_motions if idle else None
            if deferred is not None:
                self._after_motions = None
        if deferred is not None:
            action, deferred_completion, options = deferred
            self._queue.put(((action,), deferred_completion, options))
        if idle:
            self._events['motion_finished']()
