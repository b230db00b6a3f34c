"""The score player's goals: the ``~/play`` and ``~/hit`` action servers, what refuses a goal,
how a play or a HIT starts (the session generates its motion; the first chunks go out at once;
when they reach the trajectory generator too late to be taken, or after the commanded state
moved on, it starts again, see `MotionStops`) and how a goal that an unexpected exception broke
ends."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from rclpy.action import ActionServer, CancelResponse
from rclpy.task import Future

from phil_control.conversions import DECIDED_BEFORE_LATCH
from phil_control.core.play import MotionChunk, PlayAborted, ScheduledHit, SessionBusyError
from phil_control.core.score import SpeedError, normalize_speed
from phil_control.core.score.limits import quote
from phil_control.score_player import conversions as convert
from phil_description.core.graph_key import GraphKey
from phil_msgs.action import Hit, Play
from phil_ros.waking_future import complete, waking_future

# Errors of a goal the session refuses before anything moves.
_GOAL_ERRORS = (SessionBusyError, PlayAborted, OSError, ValueError, LookupError)


@dataclass(eq=False)
class Goal:
    """The accepted play or HIT, finished by the timer."""

    handle: object
    kind: str  # 'play' or 'hit'
    begin: Callable[..., list[MotionChunk]]  # the session's start or hit, as the goal asked
    resolved: Future  # completed by finish(): the execute callback returns the outcome
    start_s: float = 0.0  # the first chunk's start (of the latest start)
    from_state: object = None  # the commanded state it was planned from (of the latest start)
    first_sequence: int = 0  # the first chunk's sequence (of the latest start)
    starts_again: int = 0  # after a first chunk that came too late or no longer joined
    note: str = ''  # said in the result when it succeeds (e.g. how late it started)
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


class GoalServers:
    """The goal side of the `ScorePlayer` node (a mixin: it uses the node's lock, session,
    goal slot, ticks, audio and chunk publishing)."""

    def _create_servers(self, group) -> list[ActionServer]:
        """The ``~/play`` and ``~/hit`` action servers (cancel = stop: always accepted)."""
        return [
            ActionServer(
                self,
                action,
                f'~/{name}',
                execute_callback=execute,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=group,
            )
            for name, action, execute in (
                ('play', Play, partial(self._execute, self._start_play, Play.Result)),
                ('hit', Hit, partial(self._execute, self._start_hit, Hit.Result)),
            )
        ]

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
        if GraphKey.goal_made_ns(goal_handle.goal_id.uuid) < self._latch_barrier_ns:
            return DECIDED_BEFORE_LATCH
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

    def _start_play(self, goal_handle) -> Goal | str:
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
        begin = partial(
            self.session.start, score, speed=speed, start_bar=bar, improv=request.improv
        )
        try:
            # The whole play generated and checked first (nothing moves if it cannot be
            # played); the start time is taken after it.
            self.session.check(
                score, current_positions_rad=self._start_pose()[1], speed=speed, start_bar=bar
            )
            chunks = self._begin(begin)
        except _GOAL_ERRORS as error:
            return str(error)
        goal = self._goal = Goal(goal_handle, 'play', begin, waking_future(self))
        track = self._go(goal, chunks)
        self.get_logger().info(
            f'play {score!r}{f" from bar {bar}" if bar else ""} at speed {speed:g}'
            f'{" (improv)" if request.improv else ""}; audio {track or "off"}'
        )
        return goal

    def _start_hit(self, goal_handle) -> Goal | str:
        request = goal_handle.request
        begin = partial(
            self.session.hit,
            request.instrument,
            velocity=int(request.velocity) or 5,
            hand=request.hand or None,
        )
        try:
            chunks = self._begin(begin)
        except _GOAL_ERRORS as error:
            return str(error)
        goal = self._goal = Goal(goal_handle, 'hit', begin, waking_future(self))
        self._go(goal, chunks)
        return goal

    def _begin(self, begin, delay_s: float = 0.0) -> list[MotionChunk]:
        """The session's start or hit (``begin``) from the commanded pose, now (or
        ``delay_s`` later; lock held)."""
        now, positions = self._start_pose()
        return begin(now_s=now + delay_s, current_positions_rad=positions)

    def _go(self, goal: Goal, chunks: list[MotionChunk]) -> str | None:
        """Send the first chunks of ``goal`` and start its audio (lock held); the track."""
        goal.start_s, goal.first_sequence = chunks[0].start_time_s, chunks[0].sequence
        goal.from_state = self._state
        if goal.kind == 'hit':
            goal.impact_s = self.session.commanded_hits[0].command_time_s
        self._ticks.resume()
        self._publish(chunks)
        track = None
        if goal.kind == 'play':
            track = self._track('' if goal.handle.request.resume else self.session.audio)
        self.audio.arm(track)
        if track is not None:
            start_ns = self._timebase.to_nanoseconds(self.session.wall_time_at(0.0))
            self.audio.start_at(start_ns * 1e-9)
        return track

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
