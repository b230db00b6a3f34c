"""Checks every motion passes before anything moves; failures are ``Rejection`` values.

A rejection names the joint and the numbers involved so the reason can go straight into an action
result. Nothing here raises for bad input: a request that cannot be executed is data.

Limits: MOVE, LOOK and POSE targets and incoming chunks are checked against the hard (URDF
``<limit>``) range; arm IK uses the soft (``<safety_controller>``) range, see
``kinematics.model_adapter``. Speeds are checked against each joint's URDF velocity limit.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phil_control.core.kinematics import IkFailure, IkFailureReason
from phil_control.core.motion.trajectory import TimedSegment, segment_peak_velocities
from phil_description.core.trajectory import Chunk, ChunkFault, Rejection, validate_chunk

# Relative slack on velocity limits so a move planned exactly at the limit passes.
_VELOCITY_RELATIVE_SLACK = 1e-9


class RejectReason(enum.Enum):
    """Why a request or chunk was refused."""

    MALFORMED = 'malformed'
    UNKNOWN_JOINT = 'unknown joint'
    UNKNOWN_POSE = 'unknown pose'
    UNKNOWN_GESTURE = 'unknown gesture'
    UNKNOWN_PROFILE = 'unknown profile'
    NOT_FINITE = 'not finite'
    BAD_DURATION = 'bad duration'
    OUTSIDE_LIMITS = 'outside limits'
    TOO_FAST = 'too fast'
    DISCONTINUOUS = 'discontinuous'
    OVERLAP = 'overlaps queued motion'
    LATE = 'starts in the past'
    IK_FAILURE = 'no IK solution'
    QUEUE_FULL = 'queue full'
    HARDWARE_LATCHED = 'the hardware is latched'


#: The planner's reason for each kind of invalid chunk.
_REJECT_REASONS = {
    ChunkFault.MALFORMED: RejectReason.MALFORMED,
    ChunkFault.NOT_FINITE: RejectReason.NOT_FINITE,
    ChunkFault.UNKNOWN_JOINT: RejectReason.UNKNOWN_JOINT,
}


@dataclass(frozen=True)
class JointTable:
    """The joint facts validation needs (from ``RobotModel``; a plain value for tests).

    Attributes:
        names: Joint names in vector order.
        lower_rad: (J,) hard lower limits, rad.
        upper_rad: (J,) hard upper limits, rad.
        velocity_limit_rad_s: (J,) velocity limits, rad/s.
    """

    names: tuple[str, ...]
    lower_rad: np.ndarray
    upper_rad: np.ndarray
    velocity_limit_rad_s: np.ndarray

    @classmethod
    def from_model(cls, model) -> JointTable:
        """Hard limits and velocity limits of a ``phil_description`` ``RobotModel``."""
        return cls(
            tuple(model.joint_names),
            np.array(model.lower_rad, dtype=float),
            np.array(model.upper_rad, dtype=float),
            np.array(model.velocity_limit_rad_s, dtype=float),
        )

    def index(self, name: str) -> int | Rejection:
        """Vector index of ``name``, or an UNKNOWN_JOINT rejection listing the valid names."""
        try:
            return self.names.index(name)
        except ValueError:
            return Rejection(
                RejectReason.UNKNOWN_JOINT,
                f'unknown joint {name!r}; valid joints: {", ".join(self.names)}',
                name,
            )


def check_duration(
    duration_s: float, maximum_s: float, what: str = 'duration_s'
) -> Rejection | None:
    """A duration must be a finite number in (0, maximum_s].

    Args:
        duration_s: The value to check, s.
        maximum_s: Largest accepted value, s.
        what: Name used in the message.
    """
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float, np.floating)):
        return Rejection(RejectReason.BAD_DURATION, f'{what} must be a number, got {duration_s!r}')
    if not math.isfinite(duration_s) or not 0.0 < duration_s <= maximum_s:
        return Rejection(
            RejectReason.BAD_DURATION,
            f'{what} must be in (0, {maximum_s:g}] s, got {duration_s!r}',
        )
    return None


def check_targets(
    table: JointTable, targets: Sequence[tuple[int, float]], what: str = 'target'
) -> Rejection | None:
    """Targets must be finite and inside the hard limits.

    Args:
        table: Joint limits.
        targets: (joint index, position rad) pairs.
        what: Word used in the message (e.g. ``'target'``, ``'pose value'``).
    """
    for index, value in targets:
        name = table.names[index]
        if not math.isfinite(value):
            return Rejection(RejectReason.NOT_FINITE, f'{name} {what} is {value}', name)
    for index, value in targets:
        name = table.names[index]
        lower, upper = float(table.lower_rad[index]), float(table.upper_rad[index])
        if not lower <= value <= upper:
            return Rejection(
                RejectReason.OUTSIDE_LIMITS,
                f'{name} {what} {value:.4f} rad ({math.degrees(value):.2f} deg) is outside '
                f'[{math.degrees(lower):.2f}, {math.degrees(upper):.2f}] deg',
                name,
            )
    return None


def check_segment_speed(table: JointTable, segment: TimedSegment, label: str) -> Rejection | None:
    """The peak speed of every joint over one segment must not exceed its velocity limit.

    Peak speed scales with 1 / duration for the rest-to-rest profiles, so the shortest allowed
    duration is duration * max(peak / limit).

    Args:
        table: Velocity limits.
        segment: The segment to check.
        label: What the segment is, for the message (e.g. ``'MOVE'``, ``'wave step 2'``).
    """
    peaks = segment_peak_velocities(segment)
    ratios = peaks / table.velocity_limit_rad_s
    worst = int(np.argmax(ratios))
    if ratios[worst] <= 1.0 + _VELOCITY_RELATIVE_SLACK:
        return None
    name = table.names[worst]
    duration = segment.end_s - segment.start_s
    return Rejection(
        RejectReason.TOO_FAST,
        f'{label}: {name} would need {peaks[worst]:.3f} rad/s, allowed '
        f'{table.velocity_limit_rad_s[worst]:.3f} rad/s; the shortest allowed duration is '
        f'{duration * float(np.max(ratios)):.3f} s (requested {duration:.3f} s)',
        name,
    )


def check_chunk(table: JointTable, chunk: Chunk) -> Rejection | None:
    """Intrinsic checks of a chunk from another node (continuity is the planner's job).

    A chunk must be valid (``validate_chunk``); the planner also reads it back as cubic Hermite
    segments from its start (``chunk_to_trajectory``), so it needs at least two points, the first
    at time_from_start 0, and velocities. Its positions must be inside the hard limits, and
    neither its point velocities nor its mean speed between points may exceed a joint's velocity
    limit.
    """
    times = np.asarray(chunk.times_from_start_s, dtype=float)
    count = times.shape[0] if times.ndim == 1 else 0
    if count < 2:
        return Rejection(RejectReason.MALFORMED, f'chunk needs at least 2 points, has {count}')
    problem = validate_chunk(chunk, table.names)
    if problem is not None:
        return Rejection(_REJECT_REASONS[problem.reason], problem.detail, problem.joint)
    names = chunk.joint_names
    if chunk.velocities_rad_s is None:
        return Rejection(
            RejectReason.MALFORMED,
            f'chunk velocities are required with shape {(count, len(names))} '
            '(cubic Hermite splicing)',
        )
    if times[0] != 0.0:
        return Rejection(
            RejectReason.MALFORMED,
            f'chunk point times must start at 0, got {times[:4].tolist()}...',
        )
    columns = [table.names.index(name) for name in names]
    for point in range(count):
        problem = check_targets(
            table,
            list(zip(columns, np.asarray(chunk.positions_rad[point], dtype=float), strict=True)),
            f'position at point {point}',
        )
        if problem is not None:
            return problem
    limits = table.velocity_limit_rad_s[columns] * (1.0 + _VELOCITY_RELATIVE_SLACK)
    mean_speeds = np.abs(np.diff(chunk.positions_rad, axis=0)) / np.diff(times)[:, np.newaxis]
    for label, speeds in (
        ('velocity', np.abs(chunk.velocities_rad_s)),
        ('mean speed between points', mean_speeds),
    ):
        over = speeds > limits
        if over.any():
            point, joint = np.argwhere(over)[0]
            return Rejection(
                RejectReason.TOO_FAST,
                f'{names[joint]} {label} at point {point} is {speeds[point, joint]:.3f} rad/s, '
                f'allowed {table.velocity_limit_rad_s[columns[joint]]:.3f} rad/s',
                names[joint],
            )
    return None


def rejection_from_ik(failure: IkFailure) -> Rejection:
    """Turn a typed IK failure into a rejection that keeps the reason and the joint."""
    reason = {
        IkFailureReason.NOT_FINITE: RejectReason.NOT_FINITE,
        IkFailureReason.JOINT_LIMIT: RejectReason.OUTSIDE_LIMITS,
        IkFailureReason.UNREACHABLE: RejectReason.IK_FAILURE,
    }[failure.reason]
    return Rejection(reason, f'IK {failure.reason.name.lower()}: {failure.detail}', failure.joint)
