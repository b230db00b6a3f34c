"""Time-stamped multi-joint trajectories: contiguous segments on an absolute time axis.

Times are seconds on the robot clock (the node picks the epoch so numbers stay small and exact).
A ``Trajectory`` is a gap-free run of ``TimedSegment``s over all joints; it can be sampled at any
times (positions and velocities), cut, extended and joined. Before its start it reports its start
state, after its end its end state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.profiles import Profile, ProfileSegment, profile_velocity

#: Default tolerances for joining segments that were planned to meet exactly.
JOIN_TIME_TOLERANCE_S = 1e-9
JOIN_POSITION_TOLERANCE_RAD = 1e-9
JOIN_VELOCITY_TOLERANCE_RAD_S = 1e-9
# Peak speed of a segment that is not an analytic profile: samples per segment.
_PEAK_SAMPLES = 129
# Trapezoid phase switches in normalised time: acceleration steps there (knots for chunking).
_TRAPEZOID_SWITCHES = (0.25, 0.75)


class Segment(Protocol):
    """Anything with a duration that gives (positions, velocities) at relative times."""

    duration_s: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions (M, J) and velocities (M, J) at times relative to the start, s."""
        ...


@dataclass(frozen=True, eq=False)
class HoldSegment:
    """Joints held still.

    Attributes:
        positions: (J,) held positions, rad.
        duration_s: Duration, s.
    """

    positions: np.ndarray
    duration_s: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The held positions and zero velocities for each of the (M,) times."""
        count = np.atleast_1d(np.asarray(times_s, dtype=float)).shape[0]
        positions = np.broadcast_to(self.positions, (count, self.positions.shape[0])).copy()
        return positions, np.zeros_like(positions)


@dataclass(frozen=True, eq=False)
class TimedSegment:
    """A segment placed on the absolute time axis, possibly cut to a window.

    Attributes:
        origin_s: Absolute time of the segment's own t = 0, s.
        start_s: Start of the used window, s (>= origin_s).
        end_s: End of the used window, s (<= origin_s + duration).
        segment: The underlying segment.
    """

    origin_s: float
    start_s: float
    end_s: float
    segment: Segment
    _full_end: bool = field(default=False, repr=False)

    @classmethod
    def at(cls, segment: Segment, start_s: float) -> TimedSegment:
        """Place a whole segment so that it starts at ``start_s``."""
        return cls(start_s, start_s, start_s + segment.duration_s, segment, True)

    @property
    def duration_s(self) -> float:
        """Length of the used window, s."""
        return self.end_s - self.start_s

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities at absolute times, clamped to the window."""
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        relative = np.clip(times, self.start_s, self.end_s) - self.origin_s
        if self._full_end:
            # The exact segment end (bit-exact target) rather than end_s - origin_s rounded.
            relative = np.where(times >= self.end_s, self.segment.duration_s, relative)
        return self.segment.evaluate(relative)

    def cut(self, start_s: float | None = None, end_s: float | None = None) -> TimedSegment:
        """The same motion restricted to [start_s, end_s] (each defaults to the current bound)."""
        start = self.start_s if start_s is None else max(self.start_s, start_s)
        end = self.end_s if end_s is None else min(self.end_s, end_s)
        full_end = self._full_end and end == self.end_s
        return TimedSegment(self.origin_s, start, end, self.segment, full_end)

    def knots_s(self) -> tuple[float, ...]:
        """Absolute times inside the window where the acceleration may step (trapezoid phases)."""
        segment = self.segment
        if isinstance(segment, ProfileSegment) and segment.profile is Profile.TRAPEZOIDAL:
            switches = (self.origin_s + tau * segment.duration_s for tau in _TRAPEZOID_SWITCHES)
            return tuple(t for t in switches if self.start_s < t < self.end_s)
        return ()


def segment_peak_velocities(segment: TimedSegment) -> np.ndarray:
    """Largest |velocity| per joint over the segment's window, rad/s, shape (J,).

    Exact for whole rest-to-rest profile segments (peak at mid-time); sampled otherwise.
    """
    inner = segment.segment
    if (
        isinstance(inner, ProfileSegment)
        and segment.start_s == segment.origin_s
        and (segment._full_end)
    ):
        peak_speed = float(profile_velocity(inner.profile, 0.5))
        return peak_speed * np.abs(inner.end_q - inner.start_q) / inner.duration_s
    if isinstance(inner, HoldSegment):
        return np.zeros(inner.positions.shape[0])
    times = np.linspace(segment.start_s, segment.end_s, _PEAK_SAMPLES)
    return np.max(np.abs(segment.evaluate(times)[1]), axis=0)


class Trajectory:
    """Gap-free sequence of timed segments over a fixed list of joints.

    Args:
        joint_names: Names of the J joints of every position vector.
        segments: At least one segment; each starts where the previous one ends.

    Raises:
        ValueError: If there are no segments, a segment has the wrong joint count or a
            non-positive length, or two segments do not meet in time.
    """

    def __init__(self, joint_names: Sequence[str], segments: Sequence[TimedSegment]) -> None:
        self.joint_names: tuple[str, ...] = tuple(joint_names)
        self.segments: tuple[TimedSegment, ...] = tuple(segments)
        if not self.segments:
            raise ValueError('a trajectory needs at least one segment')
        count = len(self.joint_names)
        for index, segment in enumerate(self.segments):
            if not segment.end_s > segment.start_s:
                raise ValueError(
                    f'segment {index} has non-positive length [{segment.start_s}, '
                    f'{segment.end_s}] s'
                )
            if index and abs(segment.start_s - self.segments[index - 1].end_s) > (
                JOIN_TIME_TOLERANCE_S
            ):
                raise ValueError(
                    f'segment {index} starts at {segment.start_s} s, the previous one ends at '
                    f'{self.segments[index - 1].end_s} s'
                )
        width = self.segments[0].evaluate(self.segments[0].start_s)[0].shape[1]
        if width != count:
            raise ValueError(f'segments move {width} joints, joint_names has {count}')
        self._ends = np.array([segment.end_s for segment in self.segments])

    @classmethod
    def from_segments(
        cls, joint_names: Sequence[str], start_s: float, segments: Sequence[Segment]
    ) -> Trajectory:
        """Place whole segments one after the other from ``start_s``."""
        timed = []
        time = start_s
        for segment in segments:
            placed = TimedSegment.at(segment, time)
            timed.append(placed)
            time = placed.end_s
        return cls(joint_names, timed)

    @property
    def start_s(self) -> float:
        """Absolute start time, s."""
        return self.segments[0].start_s

    @property
    def end_s(self) -> float:
        """Absolute end time, s."""
        return self.segments[-1].end_s

    @property
    def duration_s(self) -> float:
        """end_s - start_s, s."""
        return self.end_s - self.start_s

    def start_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (J,) and velocities (J,) at the start."""
        positions, velocities = self.segments[0].evaluate(self.start_s)
        return positions[0], velocities[0]

    def end_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (J,) and velocities (J,) at the end (exact targets for whole segments)."""
        positions, velocities = self.segments[-1].evaluate(self.end_s)
        return positions[0], velocities[0]

    def sample(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions (M, J) and velocities (M, J) at absolute times (M,), clamped to the span."""
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        which = np.minimum(np.searchsorted(self._ends, times, side='left'), len(self.segments) - 1)
        positions = np.empty((times.shape[0], len(self.joint_names)))
        velocities = np.empty_like(positions)
        for index in np.unique(which):
            mask = which == index
            positions[mask], velocities[mask] = self.segments[index].evaluate(times[mask])
        return positions, velocities

    def knots_s(self) -> np.ndarray:
        """Sorted absolute times where the acceleration may step: segment joins and phases."""
        knots = [segment.start_s for segment in self.segments[1:]]
        for segment in self.segments:
            knots.extend(segment.knots_s())
        return np.array(sorted(knots))

    def peak_velocities(self) -> np.ndarray:
        """Largest |velocity| per segment and joint, rad/s, shape (S, J)."""
        return np.stack([segment_peak_velocities(segment) for segment in self.segments])

    def until(self, time_s: float) -> Trajectory | None:
        """The part before ``time_s`` (None if nothing of it is left)."""
        kept = [segment for segment in self.segments if segment.start_s < time_s]
        if not kept:
            return None
        kept[-1] = kept[-1].cut(end_s=time_s)
        return Trajectory(self.joint_names, kept)

    def since(self, time_s: float) -> Trajectory | None:
        """The part after ``time_s`` (None if nothing of it is left)."""
        kept = [segment for segment in self.segments if segment.end_s > time_s]
        if not kept:
            return None
        kept[0] = kept[0].cut(start_s=time_s)
        return Trajectory(self.joint_names, kept)

    def then(
        self,
        other: Trajectory,
        *,
        allow_gap: bool = False,
        position_tolerance_rad: float = JOIN_POSITION_TOLERANCE_RAD,
        velocity_tolerance_rad_s: float = JOIN_VELOCITY_TOLERANCE_RAD_S,
        time_tolerance_s: float = JOIN_TIME_TOLERANCE_S,
    ) -> Trajectory:
        """This trajectory followed by ``other``.

        Args:
            other: Must name the same joints and start where this one ends (same time, position
                and velocity within the tolerances).
            allow_gap: If true, ``other`` may start later; the gap holds the end positions
                at zero velocity (what the bus loop does with an empty queue), and ``other`` must
                start at rest. A trajectory that ends moving steps its velocity to zero there;
                planners avoid that by ending motions at rest.
            position_tolerance_rad: Largest position step accepted at the join, rad.
            velocity_tolerance_rad_s: Largest velocity step accepted at the join, rad/s.
            time_tolerance_s: Largest time mismatch treated as no gap, s.

        Raises:
            ValueError: If the two do not join.
        """
        if other.joint_names != self.joint_names:
            raise ValueError('joined trajectories must name the same joints in the same order')
        end_positions, end_velocities = self.end_state()
        segments = list(self.segments)
        gap = other.start_s - self.end_s
        if gap > time_tolerance_s and allow_gap:
            hold = HoldSegment(end_positions.copy(), gap)
            segments.append(TimedSegment(self.end_s, self.end_s, other.start_s, hold))
            end_velocities = np.zeros_like(end_velocities)
        elif abs(gap) > time_tolerance_s:
            raise ValueError(f'trajectory starts at {other.start_s} s, not at {self.end_s} s')
        start_positions, start_velocities = other.start_state()
        position_jump = float(np.max(np.abs(start_positions - end_positions)))
        velocity_jump = float(np.max(np.abs(start_velocities - end_velocities)))
        if position_jump > position_tolerance_rad or velocity_jump > velocity_tolerance_rad_s:
            raise ValueError(
                f'trajectories do not join at {other.start_s} s: position jump '
                f'{position_jump:.3g} rad, velocity jump {velocity_jump:.3g} rad/s'
            )
        first = other.segments[0]
        if first.start_s != segments[-1].end_s:
            # Snap the join exactly; the difference is below time_tolerance_s.
            first = TimedSegment(
                first.origin_s, segments[-1].end_s, first.end_s, first.segment, first._full_end
            )
        return Trajectory(self.joint_names, [*segments, first, *other.segments[1:]])
