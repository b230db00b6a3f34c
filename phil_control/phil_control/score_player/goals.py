"""The score player's goals: the ``~/play`` and ``~/hit`` action servers, what refuses a goal,
how a play or a HIT starts (the session generates its motion; the first chunks go out at once)
and how a goal that an unexpected exception broke ends."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

from rclpy.action import ActionServer, CancelResponse
from rclpy.task import Future

from phil_control.core.play import PlayAborted, ScheduledHit, SessionBusyError
from phil_control.core.score import SpeedError, normalize_speed
from phil_control.core.score.limits import quote
from phil_control.score_player import conversions as convert
from phil_msgs.action import Hit, Play
from phil_ros.waking_future import complete, waking_future

# Errors of a goal the session refuses before anything moves.
_GOAL_ERRORS = (SessionBusyError, PlayAborted, OSError, ValueError, LookupError)


@dataclass(eq=False)
class Goal:
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
        goal = self._goal = Goal(goal_handle, 'play', chunks[0].start_time_s, waking_future(self))
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

    def _start_hit(self, goal_handle) -> Goal | str:
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
        goal = self._goal = Goal(
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
