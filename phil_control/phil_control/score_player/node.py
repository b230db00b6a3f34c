"""score_player: PLAY / HIT goals -> play-session chunks for the trajectory_generator, hit events.

Actions (phil_msgs): ``~/play`` (Play), ``~/hit`` (Hit). Services: ``~/pause``, ``~/stop``
(Trigger), ``~/speed`` (SetSpeed): they answer at once (accepted, reason, state / speed in
effect), the motion follows. Publishes ``trajectory_generator/chunks`` (TrajectoryChunk, 13
joints, absolute start stamps; the trajectory_generator validates and forwards them) and
``phil/hits`` (HitEvent, SOURCE_COMMANDED, once each hit's instant is ``ticks.HIT_CONFIRM_S``
past, see below); subscribes
``trajectory_generator/commanded_state`` (the start pose; a play starts no earlier than its stamp)
and ``trajectory_generator/rejected_chunks`` (a refused chunk aborts the running goal; a first
chunk refused for coming too late, or for not joining a commanded state that has moved on since,
starts it again, see ``motion_stops``).

Play goals: ``score`` is a play-list id (a path is refused and nothing is opened for it);
``speed`` 0 means 1.0, else 0.5..2.0; ``resume`` plays from ``start_bar`` (default: the saved
resume point) without audio, as upstream RESUME; ``improv`` chains the folder of the entry's
score. A bad goal (a path, unknown id, missing file, malformed score or one beyond the score
limits, bad speed, unreachable start pose, busy) is aborted at once with the reason; nothing
moves. Any other exception while starting a goal, or in the timer, ends that goal aborted with
the reason and a log line (its motion goes to ready); the node keeps serving. The
result comes after DRUM END (counts, timing of the commanded hits, the resume bar after a PAUSE);
only a play reaching its end succeeds. Cancel = stop. A HIT's motion is queued whole: stop and
cancel do not shorten it.

A timer (``poll_period_s``) generates the due windows (one bar plus ``lead_s`` ahead), publishes
hits, sends feedback and ends the goal. Concurrency and clock follow the trajectory_generator:
a single-threaded executor, no callback blocks (execute callbacks are coroutines awaiting their
goal's ``waking_future``); one lock guards the session; stamps are on the ROS clock unless
``stamp_clock: monotonic``. Parameters: ``config.PARAMETERS`` (declared read-only and validated
once into ``config.Config``; ``watched_nodes`` and ``liveness_timeout_s`` among them).

Only what reached the motors counts: when the hardware latches (``hardware/status``: ESTOP or a
fault, stamped) or a watched node it needs stops sending heartbeats (the hardware node or the
trajectory generator), the goal ends at once with the reason; hits after that instant are
never reported (``/phil/hits``, ``hits.csv``), and a play keeps a resume point at the bar of
the first hit not played. Goals come from the behavior planner only (a goal id signed with the
graph key); chunks go out signed.

Where each piece lives: ``goals`` (the action servers, starting a play or a HIT, the goal's
bookkeeping), ``ticks`` (the timer: windows, hits, feedback, the result), ``services`` (pause,
stop, speed), ``motion_stops`` (a refused chunk, the hardware's latch, a node of the motion path
down); this module wires them to the session and the topics.
"""

from __future__ import annotations

import threading

from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from phil_control.conversions import TimeBase, stamp_clock
from phil_control.core.motion.validation import JointTable
from phil_control.core.play import MotionChunk, PlayRobot, PlaySession
from phil_control.core.play.timeline import check_velocity_delta
from phil_control.core.score import PlayListFile
from phil_control.score_player import conversions as convert
from phil_control.score_player.audio import (
    AudioPlayer,
    SilentPlayer,
    TrackFinder,
    make_audio_player,
)
from phil_control.score_player.config import Config
from phil_control.score_player.goals import Goal, GoalServers
from phil_control.score_player.hit_log import HitLog
from phil_control.score_player.motion_stops import MotionStops
from phil_control.score_player.services import PlayServices
from phil_control.score_player.ticks import PlayTicks
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import ChunkRejection, HardwareStatus, HitEvent, TrajectoryChunk
from phil_ros.executors import waiting_executor
from phil_ros.graph_safety import sign_message
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED, RELIABLE_QUEUE
from phil_ros.work_timer import WorkTimer


class ScorePlayer(GoalServers, PlayTicks, PlayServices, MotionStops, Node):
    """Plays scores and single hits through a `PlaySession`."""

    def __init__(self, *, model=None, clock_ns=None, audio_player=None, **node_options) -> None:
        """Read and validate the parameters, build the session, create the ROS interfaces.

        Args:
            model: Robot model; default the installed description.
            clock_ns: Time source in ns replacing the ``stamp_clock`` parameter (tests).
            audio_player: An `AudioPlayer` replacing the ``audio_command`` parameter.
            **node_options: Passed to ``Node`` (e.g. ``context``, ``parameter_overrides``).

        Raises:
            ValueError: Naming a bad parameter or a malformed play list.
        """
        super().__init__('score_player', **node_options)
        # What destroy_node needs exists before anything can fail: a node whose construction
        # stopped halfway (a refused parameter, Ctrl-C) is still destroyed by rclpy's shutdown.
        self._lock = threading.Lock()
        self._goal: Goal | None = None
        self._hardware_seen: HardwareStatus | None = None  # the last hardware status
        self._latch_barrier_ns = 0  # goals made before it are dropped (latch_barrier_ns)
        self._closing = False
        self.audio: AudioPlayer = SilentPlayer()  # until the parameters choose one
        self._hit_log: HitLog | None = None
        self.config = Config.from_parameters(self)
        self._key = GraphKey.from_environment()
        self._clock_ns = clock_ns or stamp_clock(self.config.stamp_clock, self.get_clock())
        self._timebase = TimeBase(self._clock_ns())
        self._create_session(model if model is not None else default_robot_model())
        self._create_outputs(audio_player)
        self._state: JointState | None = None
        io_group = MutuallyExclusiveCallbackGroup()
        self._create_topics(io_group)
        self._create_services(io_group)
        self._servers = self._create_servers(ReentrantCallbackGroup())
        self._ticks = WorkTimer(self, self.config.poll_period_s, self._on_tick, io_group)
        self._read_play_list()
        self.get_logger().info(
            f'ready: play list {self.config.play_list}, audio {self.config.audio_dir}, '
            f'poll {self.config.poll_period_s} s, lead one bar + {self.config.lead_s} s, '
            f'motion lead {self.config.motion_lead_s * 1e3:.2f} ms, pedals '
            f'{self.config.pedal_lead_s * 1e3:+.2f} ms'
            + (
                f' (timing calibration: {self.config.timing_calibration.source})'
                if self.config.timing_calibration is not None
                else ''
            )
        )

    def _create_session(self, model) -> None:
        """The robot, the play list and the `PlaySession` playing from it."""
        self.robot = PlayRobot.from_model(model)
        # Checked now and on every PLAY: a bad entry is refused alone, a bad file refuses
        # every PLAY; HITs always work.
        self._play_list = PlayListFile(self.config.play_list) if self.config.play_list else None
        if self._play_list is None:
            self.get_logger().warning('no play list found: no score can be played, only HITs')
        self.session = PlaySession(
            self.robot,
            None,
            self.config.margin_s,
            self.config.lead_s,
            self.config.wrist_torque,
            self.config.motion_lead_s,
            self.config.pedal_lead_s,
            JointTable.from_model(model),
        )
        self.session.velocity_delta = self.config.velocity_delta
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        """Take a new ``velocity_delta`` (the only writable parameter) or say why not."""
        for parameter in parameters:
            if parameter.name != 'velocity_delta':  # read-only: rclpy refuses them itself
                continue
            try:
                delta = check_velocity_delta(parameter.value)
            except ValueError as error:
                return SetParametersResult(successful=False, reason=str(error))
            with self._lock:
                self.session.velocity_delta = delta
            self.get_logger().info(f'velocity_delta {delta:+d} from the next score on')
        return SetParametersResult(successful=True)

    def _create_outputs(self, audio_player: AudioPlayer | None) -> None:
        """The audio player, the track finder and the hit log."""
        warn = self.get_logger().warning
        self.audio: AudioPlayer = audio_player or make_audio_player(
            self.config.audio_command, lambda: self._clock_ns() * 1e-9, warn
        )
        self._track = TrackFinder(self.config.audio_dir, warn)
        self._hit_log = HitLog(self.config.log_dir) if self.config.log_dir else None

    def _create_topics(self, group) -> None:
        """The chunk and hit publishers, the subscriptions, the heartbeat watch."""
        self._chunk_pub = self.create_publisher(
            TrajectoryChunk, 'trajectory_generator/chunks', RELIABLE_QUEUE
        )
        self._hit_pub = self.create_publisher(HitEvent, 'phil/hits', RELIABLE_QUEUE)
        self.create_subscription(
            JointState,
            'trajectory_generator/commanded_state',
            self._on_state,
            LATCHED,
            callback_group=group,
        )
        self.create_subscription(
            ChunkRejection,
            'trajectory_generator/rejected_chunks',
            self._on_rejected,
            10,
            callback_group=group,
        )
        self.create_subscription(
            HardwareStatus, 'hardware/status', self._on_hardware, LATCHED, callback_group=group
        )
        self._liveness = Liveness(
            self,
            self.config.watched_nodes,
            self.config.liveness_timeout_s,
            on_down=self._on_node_down,
        )

    def close_goals(self) -> None:
        """Stop accepting goals; a running play goes to ready (DRUM END); end its goal."""
        with self._lock:
            self._closing = True
            goal, self._goal = self._goal, None
            if goal is not None:
                self._publish(self.session.stop(self._now_s()))
                goal.finish('abort', 'score_player is shutting down')
        self.audio.stop()

    def release(self) -> None:
        """The node's own teardown: ``close_goals``, close the hit log."""
        self.close_goals()
        if self._hit_log is not None:
            self._hit_log.close()

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()

    def _on_state(self, msg: JointState) -> None:
        with self._lock:
            self._state = msg

    # ---------------------------------------------------------------------------- helpers
    def _publish(self, chunks: list[MotionChunk]) -> None:
        for chunk in chunks:
            msg = convert.chunk_msg(chunk, self.robot.joint_names, self._timebase)
            self._chunk_pub.publish(sign_message(self._key, msg))

    def _now_s(self) -> float:
        return self._timebase.to_seconds(self._clock_ns())


def main(args: list[str] | None = None) -> None:
    """Console entry point: run the node in a single-threaded executor."""
    run_node(ScorePlayer, args, make_executor=waiting_executor)


if __name__ == '__main__':
    main()
