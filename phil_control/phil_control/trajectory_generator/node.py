"""trajectory_generator: LOOK / GESTURE / MOVE / POSE goals -> time-stamped hardware chunks.

Actions (phil_msgs): ``~/look``, ``~/gesture``, ``~/move``, ``~/pose``.
Topics: publishes ``hardware/trajectory_chunks`` (TrajectoryChunk, each published
``publish_lead_s`` before its start stamp) and ``~/commanded_state`` (sensor_msgs/JointState,
transient local: positions at the end of the queued motion, stamped with the time they are
reached); subscribes ``~/chunks`` (TrajectoryChunk from the score player: validated, forwarded,
queued; a refused one is named on ``~/rejected_chunks``, phil_msgs/ChunkRejection, so the
score player can start again or end its play) and ``hardware/motor_states`` (the initial
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

Where each piece lives: ``goals`` (the action servers, planning a goal, its feedback and end),
``motion`` (the tick, the chunk queue and its publishing, halting), ``score_chunks`` (the score
player's chunks), ``hardware_state`` (the latch, the measured positions); this module wires them
to the planner and the topics.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from phil_control.conversions import TimeBase, stamp_clock
from phil_control.core.motion import Chunk, MotionPlanner
from phil_control.trajectory_generator import trajectory_log
from phil_control.trajectory_generator.config import Config
from phil_control.trajectory_generator.goals import Goal, GoalServers
from phil_control.trajectory_generator.hardware_state import SENT_CHUNKS_KEPT, HardwareState
from phil_control.trajectory_generator.motion import MotionQueue
from phil_control.trajectory_generator.score_chunks import ScoreChunks
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import ChunkRejection, HardwareStatus, MotorStates, TrajectoryChunk
from phil_msgs.srv import Trigger
from phil_ros.executors import waiting_executor
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED, RELIABLE_QUEUE
from phil_ros.work_timer import WorkTimer


class TrajectoryGenerator(GoalServers, MotionQueue, ScoreChunks, HardwareState, Node):
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
        self._goals: list[Goal] = []
        self._closing = False
        self.model = model if model is not None else default_robot_model()
        names = self.model.joint_names
        self.config = Config.from_parameters(self, names)
        self._clock_ns = clock_ns or stamp_clock(self.config.stamp_clock, self.get_clock())
        initial = self.config.initial_positions_rad
        self._timebase = TimeBase(self._clock_ns())
        self._key = GraphKey.from_environment()
        self._latched = ''  # why the hardware is latched ('' while it is not)
        self._resets_granted = 0  # the hardware's count of granted RESETs, last seen
        # (sent, end) of the chunks sent to the hardware lately, and the stamp of the last
        # hardware status: a latch seen only by its RESET came after that status and dropped
        # what went out before the RESET and ran past that status, nothing else.
        self._sent: deque[tuple[float, float]] = deque(maxlen=SENT_CHUNKS_KEPT)
        self._status_s = -math.inf
        self._latch_barrier_ns = 0  # goals made before it are refused (latch_barrier_ns)
        self._refused_end_s = math.nan  # where the last chunk refused on ~/chunks ends
        self._measured = None  # the last measured positions (motor states)
        self._create_planner(initial)
        io_group = MutuallyExclusiveCallbackGroup()
        self._create_publishers()
        self._create_subscriptions(io_group, measured=not initial)
        self.create_service(Trigger, '~/halt', self._on_halt, callback_group=io_group)
        self._servers = self._create_servers(ReentrantCallbackGroup())
        # The tick runs only while goals or queued chunks need it.
        self._ticks = WorkTimer(self, self.config.publish_period_s, self._on_tick, io_group)
        self._liveness = Liveness(self)
        self._publish_state()
        self.get_logger().info(
            f'ready: {len(names)} joints, chunks {self.config.chunking.chunk_duration_s} s / '
            f'{self.config.chunking.point_spacing_s} s points, lead {self.config.publish_lead_s} s'
        )

    def _create_planner(self, initial) -> None:
        """The motion planner (from ``initial``, else the model's ``init`` pose) and the queue
        of chunks it planned that are not published yet."""
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
        self._started: dict[bytes, tuple[Goal | None, str | None]] = {}

    def _create_publishers(self) -> None:
        """The hardware chunks (logged to ``log_dir``), the commanded state, the refusals."""
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
        self._rejected_pub = self.create_publisher(ChunkRejection, '~/rejected_chunks', 10)

    def _create_subscriptions(self, group, *, measured: bool) -> None:
        """``~/chunks``, ``hardware/status`` and, when ``measured`` (no initial positions
        given), ``hardware/motor_states``."""
        self.create_subscription(
            TrajectoryChunk, '~/chunks', self._on_chunk, RELIABLE_QUEUE, callback_group=group
        )
        # Measured joints only seed the initial state (ignored once something was commanded).
        # The subscription stays: destroying it from a callback races the executor's wait set
        # in another thread (InvalidHandle). It reads the 20 Hz motor states, not the 100 Hz
        # joint_states: every delivery costs a wake of the executor.
        if measured:
            self.create_subscription(
                MotorStates,
                'hardware/motor_states',
                self._on_motor_states,
                10,
                callback_group=group,
            )
        self.create_subscription(
            HardwareStatus, 'hardware/status', self._on_hardware, LATCHED, callback_group=group
        )

    def close_goals(self) -> None:
        """Stop accepting goals and abort the waiting ones (their execute callbacks return at
        the executor's next round)."""
        with self._lock:
            self._closing = True
            for goal in list(self._goals):
                self._resolve(goal, 'abort', 'trajectory_generator is shutting down')

    def release(self) -> None:
        """The node's own teardown: ``close_goals``."""
        self.close_goals()

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()

    def _now_s(self) -> float:
        return self._timebase.to_seconds(self._clock_ns())


def main(args: list[str] | None = None) -> None:
    """Console entry point: run the node in a single-threaded executor."""
    run_node(TrajectoryGenerator, args, make_executor=waiting_executor)


if __name__ == '__main__':
    main()
