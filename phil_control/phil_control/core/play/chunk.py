"""What a play session hands to the node: wall-clock trajectory chunks, hits, progress, errors."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phil_control.core.play.common import CommandedHit
from phil_control.core.score import HIT_INSTRUMENT_IDS
from phil_description.core.trajectory import Chunk, ControlMode

INSTRUMENT_NAMES = {instrument_id: name for name, instrument_id in HIT_INSTRUMENT_IDS.items()}


class ChunkKind(enum.Enum):
    """Which part of a play a chunk belongs to."""

    DRUM_START = 'drum start'
    WINDOW = 'window'
    DRUM_END = 'drum end'


@dataclass(frozen=True)
class ScheduledHit:
    """A commanded hit with its wall-clock instant.

    Attributes:
        hit: Instrument, limb, velocity, score time, bar.
        play_id: Play-list id or score path ('' for a single HIT).
        command_time_s: Wall time (the clock `now_s` is given in) at which the stick is
            commanded to reach the strike point, s.
    """

    hit: CommandedHit
    play_id: str
    command_time_s: float

    @property
    def instrument(self) -> str:
        """HIT table name of the instrument ('bass', 'closed hihat', 'open hihat', ...)."""
        return INSTRUMENT_NAMES[self.hit.instrument_id]


@dataclass(frozen=True, eq=False)
class MotionChunk:
    """A slice of the 13-joint trajectory on the wall clock.

    The first point is at `start_time_s` (time_from_start 0) and repeats the previous chunk's
    last point (or, for the first chunk, the held pose with zero velocity), so chunks splice
    exactly. Between points the motion is the cubic Hermite curve of the point positions and
    velocities.

    Attributes:
        kind: DRUM_START, WINDOW or DRUM_END.
        sequence: Increases by one per chunk of a play.
        start_time_s: Wall time of the chunk start, s.
        times_s: (N,) wall times of the points, strictly increasing; times_s[0] is
            start_time_s.
        positions_rad: (N, 13) joint positions, rad.
        velocities_rad_s: (N, 13) joint velocities, rad/s of wall time.
        control_modes: One mode per joint.
        replace: True when queued motion from `start_time_s` on must be dropped first.
        hits: Hits commanded in this chunk.
        score_start_s: Score time at `start_time_s` (None for DRUM START / END).
        score_end_s: Score time of the last point (None for DRUM START / END).
        bar: Bar of the window's target event (None for DRUM START / END).
    """

    kind: ChunkKind
    sequence: int
    start_time_s: float
    times_s: np.ndarray
    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray
    control_modes: tuple[ControlMode, ...]
    replace: bool = False
    hits: tuple[ScheduledHit, ...] = ()
    score_start_s: float | None = None
    score_end_s: float | None = None
    bar: int | None = None

    @property
    def end_time_s(self) -> float:
        """Wall time of the last point (the chunk start for an empty chunk), s."""
        return float(self.times_s[-1]) if self.times_s.size else self.start_time_s

    def trajectory_chunk(self, joint_names: Sequence[str]) -> Chunk:
        """The chunk as the trajectory generator receives it (times from its start)."""
        return Chunk(
            joint_names=tuple(joint_names),
            start_s=self.start_time_s,
            times_from_start_s=np.asarray(self.times_s) - self.start_time_s,
            positions_rad=self.positions_rad,
            velocities_rad_s=self.velocities_rad_s,
            control_modes=self.control_modes,
            replace=self.replace,
            sequence=self.sequence,
        )


@dataclass(frozen=True)
class PlayProgress:
    """Progress of a play at one instant.

    Attributes:
        play_id: Play-list id or score path of the score being played.
        bar: Bar of the last event reached.
        total_bars: Bars of that score.
        speed: Speed in effect.
        score_time_s: Score time reached (timeline time at speed 1.0), s.
        elapsed_s: Wall time since the first hit (0 before it), s.
        hits_played: Commanded hits whose instant has passed.
    """

    play_id: str
    bar: int
    total_bars: int
    speed: float
    score_time_s: float
    elapsed_s: float
    hits_played: int


class SessionBusyError(RuntimeError):
    """A play or HIT was requested while another one is still running."""


class PlayAborted(Exception):  # noqa: N818 - reads as the event it reports
    """A play cannot continue (IK failure, no waist, joint limit, unknown drum).

    Raised by `PlaySession.start` / `hit` when nothing has moved yet; stored in
    `PlaySession.aborted` when the failure is found while playing (the session has then queued
    DRUM END from the last good window, so the robot returns to `ready`).

    Attributes:
        reason: What failed, with the numbers involved.
        bar: Bar of the failing window (None for the reset pose).
        play_id: The score being played.
        score_time_s: Score time of the failure, s.
    """

    def __init__(
        self, reason: str, bar: int | None, play_id: str, score_time_s: float = 0.0
    ) -> None:
        where = f'bar {bar}' if bar is not None else 'start pose'
        super().__init__(f'{play_id or "HIT"}: play aborted at {where}: {reason}')
        self.reason = reason
        self.bar = bar
        self.play_id = play_id
        self.score_time_s = score_time_s
