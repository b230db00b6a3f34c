"""score_player: PLAY / HIT goals -> play-session chunks for the trajectory_generator, hit events.

Actions (phil_msgs): ``~/play`` (Play), ``~/hit`` (Hit). Services: ``~/pause``, ``~/stop``
(Trigger), ``~/speed`` (SetSpeed): they answer at once (accepted, reason, state / speed in
effect), the motion follows. Publishes ``trajectory_generator/chunks`` (TrajectoryChunk, 13
joints, absolute start stamps; the trajectory_generator validates and forwards them) and
``phil/hits`` (HitEvent, SOURCE_COMMANDED, once each hit's instant is ``HIT_CONFIRM_S`` past,
see below); subscribes
``trajectory_generator/commanded_state`` (the start pose; a play starts no earlier than its stamp)
and ``trajectory_generator/rejected_chunks`` (a refused chunk aborts the running goal).

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
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from functools import partial

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from phil_control.conversions import TimeBase, stamp_clock
from phil_control.core.motion.validation import JointTable
from phil_control.core.play import (
    MotionChunk,
    PlayAborted,
    PlayRobot,
    PlaySession,
    ScheduledHit,
    SessionBusyError,
)
from phil_control.core.score import PlayListFile, SpeedError, normalize_speed
from phil_control.core.score.limits import quote
from phil_control.score_player import conversions as convert
from phil_control.score_player.audio import (
    AudioPlayer,
    SilentPlayer,
    TrackFinder,
    make_audio_player,
)
from phil_control.score_player.config import Config
from phil_control.score_player.hit_log import HitLog
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_description.core.liveness import NodeDown
from phil_msgs.action import Hit, Play
from phil_msgs.msg import HardwareStatus, HitEvent, RobotStatus, TrajectoryChunk
from phil_msgs.srv import SetSpeed, Trigger
from phil_ros.executors import waiting_executor
from phil_ros.graph_safety import sign_message
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED, RELIABLE_QUEUE
from phil_ros.waking_future import complete, waking_future
from phil_ros.work_timer import WorkTimer

# The nodes a play's motion goes through after this one: down, nothing more is played.
_MOTION_NODES = ('/trajectory_generator', '/hardware')
# A hit is reported once it is this far in the past: by then a latch, or a node of the motion
# path that died or was stopped, would be known (a check every 0.1 s, the status at once).
HIT_CONFIRM_S = 0.5
# Errors of a goal the session refuses before anything moves.
_GOAL_ERRORS = (SessionBusyError, PlayAborted, OSError, ValueError, LookupError)


@dataclass(eq=False)
class _Goal:
    """The accepted play or HIT, finished by the timer."""

    handle: object
    kind: str  # 'play' or 'hit'
    start_s: float
    resolved: Future  # completed by finish(): the execute callback returns the outcome
    hits: list[ScheduledHit] = field(default_factory=list)
    ending: str = ''  # why the play ends before its score does (stop, pause)
    paused: bool = False
    cancelling: bool = False
    abort_logged: bool = False
    impact_s: float = 0.0
    next_feedback_s: float = -math.inf
    outcome: tuple[str, object] | None = None

    def finish(self, kind: str, result: object) -> None:
        """Set the outcome (the first one stands) and wake the execute callback."""
        if self.outcome is None:
            self.outcome = (kind, result)
        complete(self.resolved)


class ScorePlayer(Node):
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
        self._goal: _Goal | None = None
        self._closing = False
        self.audio: AudioPlayer = SilentPlayer()  # until the parameters choose one
        self._hit_log: HitLog | None = None
        self.config = Config.from_parameters(self)
        self._key = GraphKey.from_environment()
        self._clock_ns = clock_ns or stamp_clock(self.config.stamp_clock, self.get_clock())
        self._timebase = TimeBase(self._clock_ns())
        model = model if model is not None else default_robot_model()
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
        warn = self.get_logger().warning
        self.audio: AudioPlayer = audio_player or make_audio_player(
            self.config.audio_command, lambda: self._clock_ns() * 1e-9, warn
        )
        self._track = TrackFinder(self.config.audio_dir, warn)
        self._hit_log = HitLog(self.config.log_dir) if self.config.log_dir else None
        self._state: JointState | None = None
        io_group = MutuallyExclusiveCallbackGroup()
        action_group = ReentrantCallbackGroup()
        self._chunk_pub = self.create_publisher(
            TrajectoryChunk, 'trajectory_generator/chunks', RELIABLE_QUEUE
        )
        self._hit_pub = self.create_publisher(HitEvent, 'phil/hits', RELIABLE_QUEUE)
        self.create_subscription(
            JointState,
            'trajectory_generator/commanded_state',
            self._on_state,
            LATCHED,
            callback_group=io_group,
        )
        self.create_subscription(
            String,
            'trajectory_generator/rejected_chunks',
            self._on_rejected,
            10,
            callback_group=io_group,
        )
        self.create_subscription(
            HardwareStatus, 'hardware/status', self._on_hardware, LATCHED, callback_group=io_group
        )
        self._liveness = Liveness(
            self,
            self.config.watched_nodes,
            self.config.liveness_timeout_s,
            on_down=self._on_node_down,
        )

        self.create_service(Trigger, '~/pause', self._on_pause, callback_group=io_group)
        self.create_service(Trigger, '~/stop', self._on_stop, callback_group=io_group)
        self.create_service(SetSpeed, '~/speed', self._on_speed, callback_group=io_group)
        self._servers = [
            ActionServer(
                self,
                action,
                f'~/{name}',
                execute_callback=execute,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=action_group,
            )
            for name, action, execute in (
                ('play', Play, partial(self._execute, self._start_play, Play.Result)),
                ('hit', Hit, partial(self._execute, self._start_hit, Hit.Result)),
            )
        ]
        self._ticks = WorkTimer(self, self.config.poll_period_s, self._on_tick, io_group)
        self._read_play_list()
        self.get_logger().info(
            f'ready: play list {self.config.play_list}, audio {self.config.audio_dir}, '
            f'poll {self.config.poll_period_s} s, lead one bar + {self.config.lead_s} s'
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

    def destroy_node(self) -> None:
        """``close_goals``, close the hit log, then destroy the node."""
        self.close_goals()
        if self._hit_log is not None:
            self._hit_log.close()
        super().destroy_node()

    # ------------------------------------------------------------------------------ goals
    async def _execute(self, start, result_type, goal_handle):
        """Start the goal, then wait (without blocking the executor) until it is finished."""
        with self._lock:
            try:
                started = self._refusal(goal_handle) or start(goal_handle)
            except Exception as error:  # no goal may take the node down
                started = self._end_on_error(error)
        if isinstance(started, str):
            self.get_logger().warning(f'{result_type.__name__.split("_")[0]} goal: {started}')
            goal_handle.abort()
            return result_type(success=False, reason=started)
        await started.resolved
        kind, result = started.outcome
        if isinstance(result, str):
            result = result_type(success=False, reason=result)
        {'succeed': goal_handle.succeed, 'canceled': goal_handle.canceled}.get(
            kind, goal_handle.abort
        )()
        return result

    def _refusal(self, goal_handle) -> str:
        """Why this goal cannot start now ('' when it can; lock held)."""
        if self._closing:
            return 'score_player is shutting down'
        if not self._key.owns_goal_id(goal_handle.goal_id.uuid):
            return (
                'refused: goals here come only from the behavior planner of this graph '
                '(send /phil/play or /phil/hit)'
            )
        if self._goal is not None:
            return f'busy: a {self._goal.kind} is still running; stop it or wait for DRUM END'
        if self._state is None:
            return (
                'no commanded state on trajectory_generator/commanded_state yet '
                '(is the trajectory_generator running?)'
            )
        return ''

    def _start_pose(self) -> tuple[float, object]:
        """(session time to start at, current positions) from the commanded state (lock held)."""
        positions = convert.state_positions(self._state, self.robot.joint_names)
        reached = self._timebase.from_stamp(self._state.header.stamp)
        return max(self._now_s(), reached - self.config.margin_s), positions

    def _read_play_list(self) -> str:
        """Read the play list again if its file changed (its problems logged, one line each);
        why no score can be played ('' when the list is usable)."""
        if self._play_list is None:
            return 'no play list found: only HITs can be played'
        if self._play_list.refresh():
            self.session.play_list = self._play_list.play_list
            for line in self._play_list.report():
                self.get_logger().error(line)
        return self._play_list.error

    def _start_play(self, goal_handle) -> _Goal | str:
        unusable = self._read_play_list()
        if unusable:
            return unusable
        request = goal_handle.request
        try:
            speed = normalize_speed(request.speed or 1.0, clamp=False)
        except SpeedError as error:
            return f'speed: {error}'
        score, bar = request.score, int(request.start_bar)
        point = self.session.resume_point if request.resume else None
        if point is not None:  # the saved point fills in what the goal leaves out
            score = score or point.play_id
            bar = bar or (point.bar if point.play_id == score else 0)
        elif request.resume and not score:
            return 'resume: no resume point saved; give score and start_bar'
        if not score:
            return 'no score given: a play-list id'
        try:
            # The whole play generated and checked first (nothing moves if it cannot be
            # played); the start time is taken after it.
            self.session.check(
                score, current_positions_rad=self._start_pose()[1], speed=speed, start_bar=bar
            )
            now, positions = self._start_pose()
            chunks = self.session.start(
                score,
                now_s=now,
                current_positions_rad=positions,
                speed=speed,
                start_bar=bar,
                improv=request.improv,
            )
        except _GOAL_ERRORS as error:
            return str(error)
        goal = self._goal = _Goal(goal_handle, 'play', chunks[0].start_time_s, waking_future(self))
        self._ticks.resume()
        self._publish(chunks)
        track = self._track('' if request.resume else self.session.audio)
        self.audio.arm(track)
        if track is not None:
            start_ns = self._timebase.to_nanoseconds(self.session.wall_time_at(0.0))
            self.audio.start_at(start_ns * 1e-9)
        self.get_logger().info(
            f'play {score!r}{f" from bar {bar}" if bar else ""} at speed {speed:g}'
            f'{" (improv)" if request.improv else ""}; audio {track or "off"}'
        )
        return goal

    def _start_hit(self, goal_handle) -> _Goal | str:
        request = goal_handle.request
        try:
            now, positions = self._start_pose()
            chunks = self.session.hit(
                request.instrument,
                now_s=now,
                current_positions_rad=positions,
                velocity=int(request.velocity) or 5,
                hand=request.hand or None,
            )
        except _GOAL_ERRORS as error:
            return str(error)
        impact = self.session.commanded_hits[0].command_time_s
        goal = self._goal = _Goal(
            goal_handle, 'hit', chunks[0].start_time_s, waking_future(self), impact_s=impact
        )
        self._ticks.resume()
        self._publish(chunks)
        self.audio.arm(None)
        return goal

    def _end_on_error(self, error: Exception) -> str:
        """End the goal (or start) an unexpected exception broke; return the reason (lock
        held). Motion already sent goes to ready; a play never sent is forgotten."""
        reason = f'internal error: {type(error).__name__}: {quote(str(error))}'
        goal, self._goal = self._goal, None
        if goal is None:
            if not self.session.finished(self._now_s()):
                self.session.discard()
            return reason
        self.audio.stop()
        try:
            self._publish(self.session.stop(self._now_s()))
        except Exception:  # then the robot holds where the sent motion ends
            self.session.discard()
        result_type = Play.Result if goal.kind == 'play' else Hit.Result
        goal.finish('abort', result_type(success=False, reason=reason))
        return reason

    # ------------------------------------------------------------------------------ timer
    def _on_tick(self) -> None:
        """`_tick`; an exception ends the running goal with the reason, not the node."""
        try:
            self._tick()
        except Exception as error:  # no input may take the node down
            with self._lock:
                kind = self._goal.kind if self._goal is not None else 'goal'
                self.get_logger().error(f'{kind} aborted: {self._end_on_error(error)}')

    def _tick(self) -> None:
        with self._lock:
            goal = self._goal
            if goal is None:
                self._ticks.pause()  # resumed by the next play or HIT
                return
            now = self._now_s()
            if goal.handle.is_cancel_requested and not goal.cancelling:
                goal.cancelling = True
                self._end_early(goal, self.session.stop(now), 'cancelled')
            self._publish(self.session.poll(now))
            aborted = self.session.aborted
            if aborted is not None and not goal.abort_logged:
                goal.abort_logged = True
                self.audio.stop()
                self.get_logger().error(f'{aborted}; going to ready')
            self._report(goal, self.session.due_hits(now - HIT_CONFIRM_S))
            finished = self.session.finished(now)
            # The last feedback always goes out, so a client's progress ends where the play did
            # even when the timer was starved between bars.
            if finished or now >= goal.next_feedback_s:
                goal.next_feedback_s = now + self.config.feedback_period_s
                goal.handle.publish_feedback(
                    convert.play_feedback(self.session.progress(now))
                    if goal.kind == 'play'
                    else convert.hit_feedback(now, goal.start_s, self.session.end_time_s)
                )
            if finished:
                self._finish(goal)

    def _finish(self, goal: _Goal) -> None:
        """Store the goal's outcome and release its execute callback (lock held)."""
        self._report(goal, self.session.due_hits(self._now_s()))  # DRUM END is done
        aborted = self.session.aborted
        reason = str(aborted) if aborted is not None else goal.ending
        kind = 'canceled' if goal.cancelling else 'abort' if reason else 'succeed'
        if goal.kind == 'play':
            result = convert.play_result(goal.hits, self.session.wall_time_at)
            point = self.session.resume_point
            if goal.paused and point is not None:
                result.resume_valid, result.resume_bar = True, point.bar
        else:
            result = Hit.Result(impact_time=self._timebase.stamp(goal.impact_s))
        result.success, result.reason = kind == 'succeed', reason
        self._goal = None
        goal.finish(kind, result)
        self.get_logger().info(f'{goal.kind} ended: {reason or "done"}, {len(goal.hits)} hits')

    def _end_early(self, goal: _Goal, chunks, reason: str, paused: bool = False) -> None:
        self._publish(chunks)
        self.audio.stop()
        goal.ending, goal.paused = reason, paused

    # --------------------------------------------------------------------------- services
    def _playing(self, response) -> _Goal | None:
        """The play goal whose DRUM END is not queued yet (lock held); else None, and the
        refusal written into ``response``."""
        goal = self._goal
        if goal is None or goal.kind != 'play' or self.session.end_time_s is not None:
            response.accepted, response.reason = False, 'no score is playing (or it is ending)'
            return None
        response.accepted = True
        return goal

    def _state_name(self) -> str:
        return RobotStatus.STATE_PLAYING if self._goal is not None else RobotStatus.STATE_IDLE

    def _on_pause(self, _request, response):
        with self._lock:
            goal = self._playing(response)
            if goal is not None and goal.paused:
                response.accepted, response.reason = False, f'already {goal.ending}'
            elif goal is not None:
                point, chunks = self.session.pause(self._now_s())
                if point is None:
                    self._publish(chunks)
                    response.reason = 'no bar start left to pause at; the score plays to its end'
                else:
                    self._end_early(goal, chunks, f'paused; resume from bar {point.bar}', True)
            response.state = self._state_name()
        return response

    def _on_stop(self, _request, response):
        with self._lock:
            goal = self._playing(response)
            if goal is not None:  # a stop clears the resume point
                self._end_early(goal, self.session.stop(self._now_s()), 'stopped by ~/stop')
            response.state = self._state_name()
        return response

    def _on_speed(self, request, response):
        with self._lock:
            goal = self._playing(response)
            try:
                speed = normalize_speed(request.speed, clamp=False)
            except SpeedError as error:
                response.accepted, response.reason = False, str(error)
            else:
                if goal is not None:
                    self._publish(self.session.set_speed(speed, self._now_s()))
            response.speed = self.session.speed if goal is not None else 1.0
        return response

    def _on_rejected(self, msg: String) -> None:
        """The trajectory generator refused one of our chunks: nothing after it joins what
        the robot does, so the goal ends here (the robot holds where the accepted motion
        ends) instead of playing on unheard."""
        with self._lock:
            goal, self._goal = self._goal, None
            if goal is None:
                return
            reason = (
                f'the trajectory generator refused {msg.data}; the robot holds where '
                'the accepted motion ends'
            )
            self.get_logger().error(f'{goal.kind} aborted: {reason}')
            self.audio.stop()
            self.session.discard()
            result_type = Play.Result if goal.kind == 'play' else Hit.Result
            goal.finish('abort', result_type(success=False, reason=reason))

    def _on_hardware(self, msg: HardwareStatus) -> None:
        """The hardware latched: nothing after the latch was played."""
        if not (msg.estop or msg.faults):
            return
        stamps = [
            self._timebase.from_stamp(fault.stamp)
            for fault in msg.faults
            if fault.stamp.sec or fault.stamp.nanosec
        ]
        reason = msg.faults[0].reason if msg.faults else 'emergency stop'
        with self._lock:
            self._motion_stopped(
                min(stamps, default=self._now_s()), f'the hardware latched: {reason}'
            )

    def _on_node_down(self, down: NodeDown) -> None:
        """A node the motion goes through stopped: nothing after its last heartbeat counts."""
        if down.node not in _MOTION_NODES:
            return
        with self._lock:
            self._motion_stopped(self._now_s() - down.silent_s, down.reason)

    def _motion_stopped(self, stop_s: float, reason: str) -> None:
        """End the running goal at ``stop_s`` (session time): report the hits up to it, none
        after; a play keeps a resume point (lock held)."""
        goal, self._goal = self._goal, None
        if goal is None:
            return
        self._report(goal, self.session.due_hits(stop_s))
        result_type = Play.Result if goal.kind == 'play' else Hit.Result
        result = (
            convert.play_result(goal.hits, self.session.wall_time_at)
            if goal.kind == 'play'
            else result_type()
        )
        point = self.session.halted(stop_s)
        if point is not None:
            result.resume_valid, result.resume_bar = True, point.bar
        self.audio.stop()
        result.success, result.reason = False, reason
        goal.finish('abort', result)
        self.get_logger().error(f'{goal.kind} ended: {reason}; {len(goal.hits)} hits played')

    def _report(self, goal: _Goal, due: list[ScheduledHit]) -> None:
        """Publish and log hits whose instant has passed (lock held)."""
        if not due:
            return
        goal.hits.extend(due)
        for hit in due:
            self._hit_pub.publish(convert.hit_event_msg(hit, self._timebase))
        if self._hit_log is not None:
            now_ns = self._clock_ns()
            self._hit_log.write(now_ns, due, self._timebase, time.monotonic_ns() - now_ns)

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
