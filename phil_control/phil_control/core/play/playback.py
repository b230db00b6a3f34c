"""One play in progress: its timeline, clock, generated windows, hits and DRUM START / END.

`PlaySession` drives a `Playback`; this module holds the generation mechanics: windows are
generated in order from a saved `GeneratorState`; a cut drops the windows that start at or
after a score time and restores the state saved before the first dropped one, so generation
can resume from there with another speed or a truncated timeline.

Every chunk starts with the point its predecessor ended with (time_from_start 0, same position
and velocity), as the trajectory generator requires. DRUM START / END are cut into chunks of at
most 0.5 s. Velocity guard: a window whose joint velocities at the requested speed would exceed
a URDF velocity limit is played at the highest speed that keeps every joint within its limit
(the clock gets a breakpoint there, so hit times stay exact); the next window returns to the
requested speed. Upstream had no such limit; the trajectory generator rejects chunks above it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phil_control.core.play.chunk import ChunkKind, MotionChunk, PlayAborted, ScheduledHit
from phil_control.core.play.common import (
    MotionError,
    WaistChooser,
    window_control_modes,
)
from phil_control.core.play.robot import PlayRobot
from phil_control.core.play.timeline import (
    SCORE_SUFFIX,
    PlaySource,
    Timeline,
    folder_source,
    next_score_in_folder,
    with_velocity_delta,
)
from phil_control.core.play.transfer import TRANSFER_DURATION_S, ScoreClock, TransferMove
from phil_control.core.play.window_motion import (
    GeneratorState,
    WindowMotion,
    generate_window,
    reset_pose,
)
from phil_control.core.score import PlayList, ScoreError, Window, normalize_speed
from phil_control.core.score.parser import REFERENCE_BPM
from phil_control.core.score.windows import LOOKAHEAD_BEAT_UNITS
from phil_description.core.trajectory import ControlMode

#: A struck last row gets a silent row this many beat units later (the sticks rebound).
RELEASE_BEAT_UNITS = 0.6
#: Longest DRUM START / END chunk, s.
MAX_TRANSFER_CHUNK_S = 0.5
#: Share of a velocity limit the guard slows a window down to.
VELOCITY_GUARD_SHARE = 0.999
_GUARD_ATTEMPTS = 4


@dataclass(frozen=True, eq=False)
class _Generated:
    window_index: int
    state_before: GeneratorState
    motion: WindowMotion
    chunk: MotionChunk


@dataclass(frozen=True, eq=False)
class _Point:
    time_s: float
    position_rad: np.ndarray
    velocity_rad_s: np.ndarray


class Playback:
    """The motion of one play; see `PlaySession` for the public API.

    Attributes:
        timeline: The events being played.
        clock: Score time <-> wall time of the motion (actual speeds, including guarded
            windows); the music is `motion_lead_s` later.
        motion_lead_s: How far the motion runs ahead of the music, s.
        requested_speed: Speed asked for (start, set_speed).
        speed: Speed of the last generated window.
        hits: Scheduled hits of the emitted (not replaced) chunks, in time order.
        end: The last DRUM END chunk once queued.
        aborted: Set when a window could not be generated.
        guarded_windows: Windows played slower than requested by the velocity guard.
    """

    def __init__(
        self,
        robot: PlayRobot,
        source: PlaySource,
        start_s: float,
        current_positions_rad: np.ndarray,
        speed: float,
        improv: bool,
        chooser: WaistChooser,
        wrist_torque: bool = True,
        motion_lead_s: float = 0.0,
        pedal_lead_s: float = 0.0,
        play_list: PlayList | None = None,
        sequences: Iterator[int] | None = None,
        velocity_delta: int = 0,
    ) -> None:
        """Plan DRUM START from `current_positions_rad` at wall time `start_s`.

        The motion runs `motion_lead_s` ahead of the music: `clock` is the motion's clock, and
        a hit's command time (the music's) is its strike point's time plus the lead. The
        pedals run `pedal_lead_s` further ahead (see `generate_window`). Improv chains the
        scores of the source's folder through `play_list` (None: no chaining). ``sequences``
        numbers the chunks (a session's count, so no two of its plays share a number; a new
        count from 1 when None). The chained scores' intensities are shifted by
        ``velocity_delta`` as the source's were (`with_velocity_delta`).

        Raises:
            PlayAborted: The reset pose cannot be reached.
        """
        speed = normalize_speed(speed, clamp=True)
        reset, state = _reset_pose_or_abort(robot, source, chooser)
        self.robot, self._chooser = robot, chooser
        self._velocity_delta = velocity_delta
        self._modes = window_control_modes(robot, wrist_torque)
        self._position_modes = (ControlMode.POSITION,) * len(robot.joint_names)
        self.timeline = Timeline(source)
        self.timeline.ensure_release(RELEASE_BEAT_UNITS)
        self._improv = improv and play_list is not None
        self._play_list = play_list
        self._recent: list[Path] = [source.score_path]
        # Generation: what was generated, and the state the next window starts from.
        self._state = state
        self._generated: list[_Generated] = []
        self._next_window = 0
        self._sequences = sequences if sequences is not None else itertools.count(1)
        self._replace_next = False
        self.hits: list[ScheduledHit] = []
        self.requested_speed = self.speed = speed
        self.end: MotionChunk | None = None
        self.aborted: PlayAborted | None = None
        self.guarded_windows = 0
        # DRUM START ends where the (led) motion clock starts the score.
        self._start_s = start_s
        self._start_move = TransferMove(
            np.asarray(current_positions_rad, dtype=float),
            reset,
            duration_s=TRANSFER_DURATION_S - motion_lead_s,
        )
        self.motion_lead_s, self.pedal_lead_s = motion_lead_s, pedal_lead_s
        self.clock = ScoreClock(start_s + TRANSFER_DURATION_S - motion_lead_s, speed)
        self._started = self._last = _Point(self.clock.wall_at(0.0), reset, np.zeros_like(reset))
        if self._improv:
            self._chain_next(keep_until=0)

    def drum_start(self) -> list[MotionChunk]:
        """The DRUM START chunks (4.0 s COSINE to the reset pose, less the motion lead)."""
        return self._transfer(ChunkKind.DRUM_START, self._start_s, self._start_move, False)

    def fill(self, now_s: float, lookahead_s: float, replace: bool = False) -> list[MotionChunk]:
        """Generate windows starting up to one bar plus `lookahead_s` after `now_s`.

        Queues DRUM END after the last window or after a window that cannot be generated.
        """
        chunks: list[MotionChunk] = []
        while self.end is None:
            windows = self.timeline.windows
            if self._next_window >= len(windows):
                chunks += self.finish_from_last(replace and not chunks)
                break
            window = windows[self._next_window]
            bar_s = LOOKAHEAD_BEAT_UNITS * REFERENCE_BPM / window.target.bpm / self.requested_speed
            if self.clock.wall_at(window.start_s) > now_s + bar_s + lookahead_s:
                break
            if self._improv and window.target.index >= self.timeline.last_source_start():
                self._chain_next(keep_until=window.target.index)
                continue
            try:
                motion, state, speed = self._generate(window)
            except MotionError as error:
                play_id = self.timeline.source_of(window.target.index).play_id
                self.aborted = PlayAborted(error.reason, error.bar, play_id, error.time_s)
                chunks += self.finish_from_last(replace and not chunks)
                break
            chunk = self._window_chunk(window, motion, speed, replace and not chunks)
            self._generated.append(_Generated(self._next_window, self._state, motion, chunk))
            self._state, self.speed = state, speed
            self._next_window += 1
            self.hits.extend(chunk.hits)
            chunks.append(chunk)
        return chunks

    def cut(self, cut_s: float) -> float:
        """Drop generated windows starting at or after score time `cut_s`.

        Returns:
            The score time generation resumes from: the first dropped window's start, the end of
            the generated motion, or `cut_s` itself when it lies in DRUM START (< 0).
        """
        keep = len(self._generated)
        while keep and self._generated[keep - 1].motion.start_s >= cut_s:
            keep -= 1
        if keep < len(self._generated):
            first_dropped = self._generated[keep]
            self._state = first_dropped.state_before
            self._next_window = first_dropped.window_index
            del self._generated[keep:]
            self._replace_next = True  # the next chunk must drop the queued windows
            self._drop_hits_after(first_dropped.chunk.start_time_s)
            self._last = self._last_generated_point()
            if cut_s >= 0.0:
                return first_dropped.motion.start_s
        if cut_s < 0.0:
            return cut_s
        return self._generated[-1].motion.end_s if self._generated else 0.0

    def stop_improv(self) -> None:
        """Play the current score to its end (or pause point) without chaining another."""
        self._improv = False

    def finish_at(self, start_s: float, replace: bool) -> list[MotionChunk]:
        """Queue DRUM END from wall time `start_s` inside DRUM START (a stop while starting)."""
        position, velocity = self._start_move.evaluate([start_s - self._start_s])
        return self._finish(_Point(start_s, position[0], velocity[0]), replace)

    def finish_from_last(self, replace: bool) -> list[MotionChunk]:
        """Queue DRUM END from the last generated point (the reset pose when there is none)."""
        return self._finish(self._last_generated_point(), replace)

    def _generate(self, window: Window) -> tuple[WindowMotion, GeneratorState, float]:
        speed = self.requested_speed
        motion, state = generate_window(
            self.robot, window, self._state, speed, self._chooser, self.pedal_lead_s
        )
        for _ in range(_GUARD_ATTEMPTS):
            peak = np.max(np.abs(motion.velocities_rad_s), axis=0, initial=0.0)
            ratio = float(np.max(peak * speed / self.robot.velocity_limit_rad_s))
            if ratio <= 1.0:
                break
            # the samples move with the speed, so the peak is checked again
            speed *= VELOCITY_GUARD_SHARE / ratio
            motion, state = generate_window(
                self.robot, window, self._state, speed, self._chooser, self.pedal_lead_s
            )
        if speed != self.requested_speed:
            self.guarded_windows += 1
        if self.clock.speed_at(window.start_s) != speed:
            self.clock.change(window.start_s, speed)
        return motion, state, speed

    def _last_generated_point(self) -> _Point:
        if not self._generated:
            return self._started
        last = self._generated[-1].chunk
        return _Point(last.end_time_s, last.positions_rad[-1], last.velocities_rad_s[-1])

    def _finish(self, start: _Point, replace: bool) -> list[MotionChunk]:
        move = TransferMove(
            start.position_rad, self.robot.ready_rad, start_velocity_rad_s=start.velocity_rad_s
        )
        self._drop_hits_after(start.time_s)
        chunks = self._transfer(ChunkKind.DRUM_END, start.time_s, move, replace)
        self.end = chunks[-1]
        return chunks

    def _transfer(
        self, kind: ChunkKind, start_s: float, move: TransferMove, replace: bool
    ) -> list[MotionChunk]:
        times, positions, velocities = move.sample()
        pieces = np.floor(times / MAX_TRANSFER_CHUNK_S - 1e-9).clip(min=0).astype(int)
        chunks = []
        for piece in range(int(pieces[-1]) + 1):
            rows = np.flatnonzero(pieces == piece)
            rows = np.concatenate([[rows[0] - 1], rows]) if rows[0] > 0 else rows
            chunks.append(
                self._chunk(
                    kind,
                    start_s + times[rows],
                    positions[rows],
                    velocities[rows],
                    self._position_modes,
                    replace and not chunks,
                )
            )
        return chunks

    def _drop_hits_after(self, wall_s: float) -> None:
        self.hits = [hit for hit in self.hits if hit.command_time_s <= wall_s + 1e-9]

    def _window_chunk(
        self, window: Window, motion: WindowMotion, speed: float, replace: bool
    ) -> MotionChunk:
        start_s = self.clock.wall_at(motion.start_s)
        play_id = self.timeline.source_of(window.target.index).play_id
        hits = tuple(
            ScheduledHit(
                hit,
                play_id,
                start_s + (hit.score_time_s - motion.start_s) / speed + self.motion_lead_s,
            )
            for hit in motion.hits
        )
        # the first point is the previous last point (the same instant up to rounding)
        times = np.concatenate(
            [[self._last.time_s], start_s + (motion.times_s - motion.start_s) / speed]
        )
        positions = np.concatenate([self._last.position_rad[np.newaxis], motion.positions_rad])
        velocities = np.concatenate(
            [self._last.velocity_rad_s[np.newaxis], motion.velocities_rad_s * speed]
        )
        return self._chunk(
            ChunkKind.WINDOW,
            times,
            positions,
            velocities,
            self._modes,
            replace,
            hits,
            motion.start_s,
            motion.end_s,
            motion.bar,
        )

    def _chunk(
        self,
        kind,
        times,
        positions,
        velocities,
        modes,
        replace=False,
        hits=(),
        score_start_s=None,
        score_end_s=None,
        bar=None,
    ) -> MotionChunk:
        replace, self._replace_next = replace or self._replace_next, False
        chunk = MotionChunk(
            kind,
            next(self._sequences),
            float(times[0]),
            times,
            positions,
            velocities,
            modes,
            replace,
            hits,
            score_start_s,
            score_end_s,
            bar,
        )
        self._last = _Point(chunk.end_time_s, positions[-1], velocities[-1])
        return chunk

    def _chain_next(self, keep_until: int) -> None:
        folder = self.timeline.sources[0].score_path.parent
        current = self.timeline.sources[-1].score_path
        for _ in folder.glob(f'*{SCORE_SUFFIX}'):
            path = next_score_in_folder(folder, current, self._recent)
            self._recent.append(path)
            try:
                source = folder_source(path, self._play_list)
                self.timeline.chain(with_velocity_delta(source, self._velocity_delta), keep_until)
            except (ScoreError, ValueError, OSError):
                current = path
                continue
            self.timeline.ensure_release(RELEASE_BEAT_UNITS)
            return
        self._improv = False


def _reset_pose_or_abort(
    robot: PlayRobot, source: PlaySource, chooser: WaistChooser
) -> tuple[np.ndarray, GeneratorState]:
    """`reset_pose` of the source's init drums; PlayAborted (nothing moves) where it fails."""
    try:
        return reset_pose(robot, source.init_note_right, source.init_note_left, chooser)
    except MotionError as error:
        raise PlayAborted(error.reason, None, source.play_id) from error
