"""Cut trajectories into time-stamped chunks for the hardware, and read chunks back.

A ``Chunk`` (``phil_description.core.trajectory``) is the plain-data form of
``phil_msgs/TrajectoryChunk``: an absolute start time and points (time from start, positions,
velocities). The bus loop samples the active chunk at its actual send time with cubic Hermite
interpolation between points, so points need not fall on its 1-5 ms send grid.

Why these defaults:

* Point spacing 20 ms: cubic Hermite with exact knot velocities errs by at most
  h^4 max|q''''| / 384; for the fastest upstream primitive (a 0.4 s, 50 deg wave step) that is
  below 1e-6 rad, and acceleration steps (segment joins, trapezoid phase switches) are placed on
  knots so they cost no accuracy. 5 ms set-points over DDS are what the architecture forbids.
* Chunk length 0.5 s: 26 points x 13 joints (about 6 KB), two messages per second of motion. A
  3 s MOVE is 6 messages, not one big one, so only what is about to play is on the wire and a halt
  or replace has little queued motion to drop; and it is not streamed per set-point either.

Every chunk starts with a point at time_from_start 0 equal to the previous chunk's last point, so
each chunk is self-contained (the bus loop needs nothing from the previous chunk to interpolate)
and consecutive chunks splice exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phil_control.core.motion.trajectory import TimedSegment, Trajectory
from phil_control.core.profiles import hermite_segment
from phil_description.core.trajectory import Chunk

DEFAULT_CHUNK_DURATION_S = 0.5
DEFAULT_POINT_SPACING_S = 0.02
# A uniform point closer than this fraction of the spacing to a knot is replaced by the knot.
_KNOT_MERGE_FRACTION = 0.25
# A knot this close to a chunk's end is that end: on the wire times are whole nanoseconds, and
# a knot a rounding error before the end would become a second point at the same time, which
# the bus loop refuses (times must increase).
_END_TOLERANCE_S = 1e-6


@dataclass(frozen=True)
class ChunkingConfig:
    """How trajectories are cut.

    Attributes:
        chunk_duration_s: Length of each chunk, s (the last one may be shorter).
        point_spacing_s: Largest time between points, s.
    """

    chunk_duration_s: float = DEFAULT_CHUNK_DURATION_S
    point_spacing_s: float = DEFAULT_POINT_SPACING_S

    def __post_init__(self) -> None:
        """Both must be positive and finite, with spacing <= chunk length.

        Raises:
            ValueError: Naming the field.
        """
        for name in ('chunk_duration_s', 'point_spacing_s'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0):
                raise ValueError(f'ChunkingConfig.{name} must be positive and finite, got {value}')
        if self.point_spacing_s > self.chunk_duration_s:
            raise ValueError(
                f'ChunkingConfig.point_spacing_s {self.point_spacing_s} s exceeds '
                f'chunk_duration_s {self.chunk_duration_s} s'
            )


def chunk_bounds(
    start_s: float, end_s: float, config: ChunkingConfig
) -> list[tuple[float, float]]:
    """Chunk windows covering [start_s, end_s]; a remainder shorter than one spacing is merged."""
    length = config.chunk_duration_s
    count = max(1, math.ceil((end_s - start_s) / length - 1e-9))
    if count > 1 and (end_s - start_s) - (count - 1) * length < config.point_spacing_s:
        count -= 1
    edges = [start_s + index * length for index in range(count)] + [end_s]
    return list(zip(edges[:-1], edges[1:], strict=True))


def chunk_point_times(
    start_s: float, end_s: float, knots_s: np.ndarray, spacing_s: float
) -> np.ndarray:
    """Absolute point times of one chunk: a uniform grid (ends exact) plus the knots inside."""
    count = max(1, math.ceil((end_s - start_s) / spacing_s - 1e-9))
    grid = start_s + np.arange(count + 1) * ((end_s - start_s) / count)
    grid[-1] = end_s
    inside = knots_s[(knots_s > start_s + _END_TOLERANCE_S) & (knots_s < end_s - _END_TOLERANCE_S)]
    if inside.size:
        distance = np.min(np.abs(grid[:, np.newaxis] - inside[np.newaxis, :]), axis=1)
        keep = distance >= _KNOT_MERGE_FRACTION * spacing_s
        keep[0] = keep[-1] = True
        grid = np.union1d(grid[keep], inside)
    return grid


def chunk_trajectory(
    trajectory: Trajectory,
    config: ChunkingConfig,
    *,
    replace_first: bool = False,
    first_sequence: int = 0,
) -> list[Chunk]:
    """Cut a trajectory into chunks with absolute start times.

    Args:
        trajectory: What to send.
        config: Chunk length and point spacing.
        replace_first: Set ``replace`` on the first chunk (halts, replacing motions).
        first_sequence: Sequence number of the first chunk.

    Returns:
        Chunks in time order; the first point of the first chunk is the trajectory's start state
        and the last point of the last chunk its exact end state.
    """
    knots = trajectory.knots_s()
    chunks = []
    for number, (start, end) in enumerate(
        chunk_bounds(trajectory.start_s, trajectory.end_s, config)
    ):
        times = chunk_point_times(start, end, knots, config.point_spacing_s)
        positions, velocities = trajectory.sample(times)
        chunks.append(
            Chunk(
                joint_names=trajectory.joint_names,
                start_s=start,
                times_from_start_s=times - start,
                positions_rad=positions,
                velocities_rad_s=velocities,
                replace=replace_first and number == 0,
                sequence=first_sequence + number,
            )
        )
    return chunks


def chunk_to_trajectory(
    chunk: Chunk, joint_names: Sequence[str], held_positions_rad: np.ndarray
) -> Trajectory:
    """The motion a (validated) chunk commands, over all ``joint_names``.

    Between points it is the cubic Hermite the bus loop interpolates; joints the chunk does not
    name hold ``held_positions_rad``.

    Args:
        chunk: A chunk with velocities, at least two points and known joint names.
        joint_names: All joints, in the order of ``held_positions_rad``.
        held_positions_rad: (J,) positions of the joints the chunk does not name, rad.
    """
    columns = [list(joint_names).index(name) for name in chunk.joint_names]
    count = chunk.times_from_start_s.shape[0]
    positions = np.tile(np.asarray(held_positions_rad, dtype=float), (count, 1))
    velocities = np.zeros_like(positions)
    positions[:, columns] = chunk.positions_rad
    assert chunk.velocities_rad_s is not None
    velocities[:, columns] = chunk.velocities_rad_s
    times = chunk.start_s + chunk.times_from_start_s
    segments = []
    for index in range(count - 1):
        segment = hermite_segment(
            positions[index],
            velocities[index],
            positions[index + 1],
            velocities[index + 1],
            float(times[index + 1] - times[index]),
        )
        segments.append(TimedSegment(times[index], times[index], times[index + 1], segment, True))
    return Trajectory(joint_names, segments)
