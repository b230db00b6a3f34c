"""trajectory_generator: LOOK / GESTURE / MOVE / POSE goals -> time-stamped hardware chunks.

Actions (phil_msgs): ``~/look``, ``~/gesture``, ``~/move``, ``~/pose``.
Topics: publishes ``hardware/trajectory_chunks`` (TrajectoryChunk, each published
``publish_lead_s`` before its start stamp) and ``~/commanded_state`` (sensor_msgs/JointState,
transient local: positions at the end of the queued motion, stamped with the time they are
reached); subscribes ``~/chunks`` (TrajectoryChunk from the score player: validated, forwarded,
queued; a refused one is named on ``~/rejected_chunks``, std_msgs/String ``chunk <sequence>:
<reason>``, so the score player can end its play) and ``hardware/motor_states`` (the initial
state, see below).
Service: ``~/halt`` (phil_msgs/Trigger): drop queued motion and stop smoothly from the commanded
sample ``publish_lead_s`` from now (one ``replace`` chunk); aborts every goal still moving.

Goal handling: every goal is accepted; the accepted-goal callback (in the goal request's own
callback, so the first chunk goes out without waiting for the execute callback to be scheduled)
validates and plans it, and a bad goal is *aborted at once* with ``success = false`` and the
reason (unknown joint, outside limits, too fast with the shortest allowed duration, NaN, bad
duration, ...) and publishes nothing. A rejected goal (GoalResponse.REJECT) would carry no
reason back to the client. A goal accepted
while motion is queued starts at the end of it. Feedback (progress, time remaining) comes at
``1 / feedback_period_s``; the result arrives when the motion has ended. Cancelling a goal halts
all motion smoothly (bounded deceleration from the commanded state, no jump); the cancelled goal
finishes when the joints are at rest, goals queued behind it are aborted.

Concurrency: the node runs in a single-threaded executor (``node_runner.waiting_executor``) and
no callback blocks. Execute callbacks are coroutines awaiting their goal's ``waking_future``,
which the tick completes when the motion ends. One lock guards the planner and the chunk queue.

Clock: every stamp (chunk starts, commanded_state) is on one clock, by default the node's ROS
clock like every ROS stamp (the hardware node maps it onto the monotonic clock its bus loop
samples with); the score player stamps ``~/chunks`` on the same clock.
``stamp_clock: monotonic`` stamps CLOCK_MONOTONIC instead.

Initial state: the ``initial_positions_rad`` parameter if given; otherwise the model's ``init``
pose, replaced by the connected motors' measured positions on ``hardware/motor_states`` until
the first motion is commanded (so the first motion starts where the robot really is, even if
the arms moved before torque was on).

The hardware latch (``hardware/status`` with ESTOP or a fault): every goal ends with the reason,
queued chunks are dropped, score chunks are refused until it clears, and the commanded state
starts over from the measured pose, as above (the hardware holds where the joints are
measured, and RESET keeps them there); a halt asked meanwhile has nothing to stop.

Only the graph's own command path moves the robot: goals must carry a goal id signed with the
graph key (the behavior planner's), chunks on ``~/chunks`` its signature (the score player's);
others are refused with the reason. Outgoing chunks are signed.

Parameters: ``config.PARAMETERS`` (declared read-only and validated once into ``config.Config``;
a bad value stops start-up); ``log_dir``: every published chunk point goes to
``<log_dir>/trajectory.csv`` (``trajectory_log``), '' = no log.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from functools import partial

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from phil_control.conversions import (
    TimeBase,
    chunk_to_msg,
    measured_positions,
    msg_to_chunk,
    stamp_clock,
)
from phil_control.core.motion import (
    Chunk,
    MotionPlanner,
    Rejection,
    RejectReason,
    chunk_trajectory,
)
from phil_control.trajectory_generator import conversions as convert
from phil_control.trajectory_generator import trajectory_log
from phil_control.trajectory_generator.config import Config
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Gesture, Look, Move, Pose
from phil_msgs.msg import HardwareStatus, MotorStates, TrajectoryChunk
from phil_msgs.srv import Trigger
from phil_ros.executors import waiting_executor
from phil_ros.graph_safety import sign_message, signed_by
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED, RELIABLE_QUEUE
from phil_ros.waking_future import complete, waking_future
from phil_ros.work_timer import WorkTimer

# Commanded motion older than this is forgotten, s.
_HISTORY_S = 1.0


@dataclass(eq=False)
class _Goal:
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


class TrajectoryGenerator(Node):
    """Plans motion goals, publishes them as chunks ahead of time, forwards score chunks."""

    def __init__(self, *, model=None, clock_ns=None, **node_options) -> None:
        """Read and validate the parameters, build the planner, create the ROS interfaces.

        Args:
            model: Robot model; default the installed description.
            clock_ns: Time source in ns replacing the ``stamp_clock`` parameter (tests).
            **node_options: Passed to ``Node`` (e.g. ``context``, ``parameter_overrides``).

        Raises:
            ValueError: Naming a bad parameter.
        """
        super().__init__('trajectory_generator', **node_options)
        # What destroy_node needs exists before anything can fail: a node whose construction
        # stopped halfway (a refused parameter, Ctrl-C) is still destroyed by rclpy's shutdown.
        self._lock = threading.Lock()
        self._goals: list[_Goal] = []
        self._closing = False
        self.model = model if model is not None else default_robot_model()
        names = self.model.joint_names
        self.config = Config.from_parameters(self, names)
        self._clock_ns = clock_ns or stamp_clock(self.config.stamp_clock, self.get_clock())
        initial = self.config.initial_positions_rad
        self._timebase = TimeBase(self._clock_ns())
        self._key = GraphKey.from_environment()
        self._latched = ''  # why the hardware is latched ('' while it is not)
        self._measured = None  # the last measured positions (motor states)
        self._planner = MotionPlanner(
            self.model,
            initial_positions_rad=initial or None,
            initial_time_s=0.0,
            defaults=self.config.defaults,
            halt_deceleration_rad_s2=self.config.halt_deceleration_rad_s2,
            tolerance=self.config.continuity,
        )
        self._pending: deque[Chunk] = deque()
        # Accepted goals between _start and _execute: goal id -> (goal, or None and the reason).
        self._started: dict[bytes, tuple[_Goal | None, str | None]] = {}
        io_group = MutuallyExclusiveCallbackGroup()
        action_group = ReentrantCallbackGroup()
        self._chunk_pub = self.create_publisher(
            TrajectoryChunk, 'hardware/trajectory_chunks', RELIABLE_QUEUE
        )
        self._chunk_pub = trajectory_log.logging_publisher(
            self._chunk_pub,
            self.config.log_dir,
            self.model.joint_names,
            None if self.config.stamp_clock == 'monotonic' else self._clock_ns,
        )
        self._state_pub = self.create_publisher(JointState, '~/commanded_state', LATCHED)
        self._rejected_pub = self.create_publisher(String, '~/rejected_chunks', 10)
        self.create_subscription(
            TrajectoryChunk, '~/chunks', self._on_chunk, RELIABLE_QUEUE, callback_group=io_group
        )
        # Measured joints only seed the initial state (ignored once something was commanded).
        # The subscription stays: destroying it from a callback races the executor's wait set
        # in another thread (InvalidHandle). It reads the 20 Hz motor states, not the 100 Hz
        # joint_states: every delivery costs a wake of this multi-threaded executor.
        if not initial:
            self.create_subscription(
                MotorStates,
                'hardware/motor_states',
                self._on_motor_states,
                10,
                callback_group=io_group,
            )
        self.create_subscription(
            HardwareStatus, 'hardware/status', self._on_hardware, LATCHED, callback_group=io_group
        )
        self.create_service(Trigger, '~/halt', self._on_halt, callback_group=io_group)
        self._servers = [
            ActionServer(
                self,
                action,
                f'~/{name}',
                execute_callback=partial(self._execute, action),
                handle_accepted_callback=partial(self._start, action, to_request),
                goal_callback=lambda _goal: GoalResponse.ACCEPT,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=action_group,
            )
            for name, action, to_request in (
                ('look', Look, convert.look_request),
                ('gesture', Gesture, convert.gesture_request),
                ('move', Move, convert.move_request),
                ('pose', Pose, convert.pose_request),
            )
        ]
        # The tick runs only while goals or queued chunks need it.
        self._ticks = WorkTimer(self, self.config.publish_period_s, self._on_tick, io_group)
        self._liveness = Liveness(self)
        self._publish_state()
        self.get_logger().info(
            f'ready: {len(names)} joints, chunks {self.config.chunking.chunk_duration_s} s / '
            f'{self.config.chunking.point_spacing_s} s points, lead {self.config.publish_lead_s} s'
        )

    def close_goals(self) -> None:
        """Stop accepting goals and abort the waiting ones (their execute callbacks return at
        the executor's next round)."""
        with self._lock:
            self._closing = True
            for goal in list(self._goals):
                self._resolve(goal, 'abort', 'trajectory_generator is shutting down')

    def destroy_node(self) -> None:
        """``close_goals``, then destroy the node."""
        self.close_goals()
        super().destroy_node()

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
                    goal = _Goal(
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

    def _resolve(self, goal: _Goal, kind: str, reason: str) -> None:
        """Finish a goal (lock held): its execute callback returns the outcome."""
        if goal in self._goals:
            self._goals.remove(goal)
        if goal.outcome is None:
            goal.outcome = (kind, reason)
        complete(goal.resolved)

    def _on_tick(self) -> None:
        with self._lock:
            now = self._now_s()
            cancelled = [
                g for g in self._goals if not g.cancelling and g.handle.is_cancel_requested
            ]
            if cancelled:
                halt_s, rest_s = self._halt(now)
                for goal in cancelled:
                    goal.cancelling, goal.end_s = True, rest_s
                self._abort_moving_after(halt_s, 'halted because another goal was cancelled')
            for goal in list(self._goals):
                if now >= goal.end_s:
                    if goal.cancelling:
                        self._resolve(goal, 'canceled', f'cancelled; at rest at t={now:.3f} s')
                    else:
                        self._resolve(goal, 'succeed', '')
                elif now >= goal.next_feedback_s:
                    goal.next_feedback_s = now + self.config.feedback_period_s
                    self._feedback(goal, now)
            self._publish_due(now)
            self._planner.prune(now - _HISTORY_S)
            if not self._goals and not self._pending:
                self._ticks.pause()

    def _feedback(self, goal: _Goal, now: float) -> None:
        feedback = goal.feedback_type()
        feedback.progress = min(
            1.0, max(0.0, (now - goal.start_s) / max(goal.end_s - goal.start_s, 1e-9))
        )
        feedback.time_remaining_s = max(0.0, goal.end_s - now)
        goal.handle.publish_feedback(feedback)

    def _publish_due(self, now: float) -> None:
        """Publish every queued chunk whose start is at most publish_lead_s away (lock held)."""
        horizon = now + self.config.publish_lead_s
        while self._pending and self._pending[0].start_s <= horizon:
            self._publish_chunk(self._pending.popleft())

    def _flush_pending(self, before_s: float) -> None:
        """Publish queued chunks that start before ``before_s`` now, drop the rest (lock held)."""
        while self._pending and self._pending[0].start_s < before_s:
            self._publish_chunk(self._pending.popleft())
        self._pending.clear()

    def _publish_chunk(self, chunk: Chunk) -> None:
        self._chunk_pub.publish(sign_message(self._key, chunk_to_msg(chunk, self._timebase)))

    def _on_hardware(self, msg: HardwareStatus) -> None:
        """Follow the hardware latch: on it, end every goal, drop queued chunks and start the
        commanded state over from the measured pose."""
        reason = ''
        if msg.estop or msg.faults:
            reason = msg.faults[0].reason if msg.faults else 'emergency stop'
        with self._lock:
            latched_now = reason and not self._latched
            self._latched = reason
            if not latched_now:
                return
            now = self._now_s()
            for goal in list(self._goals):
                self._resolve(goal, 'abort', f'the hardware latched: {reason}')
            self._pending.clear()
            positions, _ = self._planner.sample(now)
            self._planner.forget(
                self._measured if self._measured is not None else positions[0], now
            )
            self._publish_state()
        self.get_logger().warning(
            f'hardware latched ({reason}): goals ended, queued motion '
            'dropped; the commanded state follows the measured pose'
        )

    def _halt(self, now: float) -> tuple[float, float]:
        """Stop from the commanded sample publish_lead_s ahead (lock held): (halt, rest) times."""
        halt_s = now + self.config.publish_lead_s
        plan = self._planner.halt_at(halt_s)
        self._flush_pending(halt_s)
        self._pending.extend(
            chunk_trajectory(plan.trajectory, self.config.chunking, replace_first=True)
        )
        self._publish_due(now)
        self._publish_state()
        self._ticks.resume()
        if plan.limited_by is not None:
            self.get_logger().warning(
                f'halt shortened to stop {plan.limited_by} at its limit '
                f'(deceleration up to {plan.deceleration_rad_s2.max():.1f} rad/s^2)'
            )
        return halt_s, plan.trajectory.end_s

    def _abort_moving_after(self, time_s: float, reason: str) -> None:
        for goal in list(self._goals):
            if not goal.cancelling and goal.end_s > time_s:
                self._resolve(goal, 'abort', reason)

    def _on_halt(self, _request, response):
        with self._lock:
            if self._latched:  # nothing moves: the hardware dropped its queue and holds
                response.accepted, response.reason = True, 'the hardware holds (latched)'
                return response
            halt_s, rest_s = self._halt(self._now_s())
            for goal in list(self._goals):
                if goal.cancelling:
                    self._resolve(goal, 'canceled', 'cancelled; halted by ~/halt')
            self._abort_moving_after(halt_s, 'halted by ~/halt')
        self.get_logger().info(f'halt: at rest at t={rest_s:.3f} s')
        response.accepted = True
        return response

    def _on_chunk(self, msg: TrajectoryChunk) -> None:
        if not signed_by(self._key, msg):
            self.get_logger().error(
                f'chunk {msg.sequence} on ~/chunks refused: not signed with the graph key '
                "(only the score player's chunks are forwarded)",
                throttle_duration_sec=2.0,
            )
            return
        chunk = msg_to_chunk(msg, self._timebase)
        with self._lock:
            if self._latched:
                # A score chunk still in flight when the latch came: taken, it would make the
                # commanded state end where that motion ends, and the next motion after RESET
                # would start there instead of at the measured pose.
                chunk = Rejection(RejectReason.HARDWARE_LATCHED, self._latched)
            elif not isinstance(chunk, Rejection):
                result = self._planner.accept_chunk(chunk, self._now_s())
                chunk = result if isinstance(result, Rejection) else chunk
            if isinstance(chunk, Rejection):
                problem = chunk
            else:
                problem = None
                # Keep the hardware's arrival order = time order: queued chunks go out first.
                self._flush_pending(chunk.start_s if chunk.replace else math.inf)
                if chunk.replace:
                    self._abort_moving_after(chunk.start_s, 'replaced by a chunk on ~/chunks')
                self._chunk_pub.publish(msg)
                self._publish_state()
        if problem is not None:
            self.get_logger().warning(f'chunk {msg.sequence} from ~/chunks rejected: {problem}')
            self._rejected_pub.publish(String(data=f'chunk {msg.sequence}: {problem}'))

    def _on_motor_states(self, msg: MotorStates) -> None:
        with self._lock:
            state = self._planner.state
            positions = measured_positions(msg, self.model.joint_names, state.positions_rad)
            self._measured = positions
            if self._planner.has_commanded:
                return
            moved = abs(positions - state.positions_rad).max(initial=0.0) > 1e-4
            if self._planner.set_initial_state(positions, self._now_s()) and moved:
                self._publish_state()

    def _now_s(self) -> float:
        return self._timebase.to_seconds(self._clock_ns())

    def _publish_state(self) -> None:
        self._state_pub.publish(
            convert.joint_state_msg(self.model.joint_names, self._planner.state, self._timebase)
        )


def main(args: list[str] | None = None) -> None:
    """Console entry point: run the node in a single-threaded executor."""
    run_node(TrajectoryGenerator, args, make_executor=waiting_executor)


if __name__ == '__main__':
    main()
