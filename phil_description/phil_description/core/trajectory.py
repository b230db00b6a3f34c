"""Trajectory chunks, their control modes and their validation, shared by the control and
hardware packages (ROS-free).

A chunk is the plain form of ``phil_msgs/TrajectoryChunk``: a slice of a joint trajectory with
an absolute start time on the robot clock and points at ``time_from_start`` relative to it. The
bus loop samples the active chunk at its actual send time; before the first point it runs from
the target it takes over to that point, so a single point is a goal to reach at its time (a
hold when it is the current target).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np


class ControlMode(enum.IntEnum):
    """Per-joint control mode of a chunk (the values of phil_msgs/TrajectoryChunk MODE_*)."""

    POSITION = 0  # TMotor velocity law, EPOS4 CSP, Dynamixel goal position
    TORQUE = 1  # EPOS4 CST: kp/kd tracking plus gravity compensation


class ChunkError(ValueError):
    """A chunk is malformed; the message says what is wrong."""


@dataclass(frozen=True, eq=False)
class Chunk:
    """A slice of a joint trajectory with an absolute start time (plain TrajectoryChunk).

    Attributes:
        joint_names: Joints this chunk commands (a subset of the robot's joints, any order).
        start_s: Absolute start time on the robot clock, s.
        times_from_start_s: (K,) point times relative to ``start_s``, s, increasing.
        positions_rad: (K, J) positions, rad.
        velocities_rad_s: (K, J) velocities, rad/s, or None (the bus loop then interpolates
            linearly).
        control_modes: One :class:`ControlMode` per joint name, or empty for all POSITION.
        replace: Drop queued motion from ``start_s`` on.
        sequence: Producer's sequence number (reported back, not interpreted).
    """

    joint_names: tuple[str, ...]
    start_s: float
    times_from_start_s: np.ndarray
    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray | None = None
    control_modes: tuple[int, ...] = ()
    replace: bool = False
    sequence: int = 0

    def __post_init__(self) -> None:
        """Convert sequences to float arrays; raise :class:`ChunkError` on ragged input."""
        try:
            object.__setattr__(self, 'joint_names', tuple(self.joint_names))
            object.__setattr__(
                self, 'times_from_start_s', np.asarray(self.times_from_start_s, dtype=float)
            )
            object.__setattr__(self, 'positions_rad', np.asarray(self.positions_rad, dtype=float))
            if self.velocities_rad_s is not None:
                object.__setattr__(
                    self, 'velocities_rad_s', np.asarray(self.velocities_rad_s, dtype=float)
                )
            object.__setattr__(self, 'control_modes', tuple(int(m) for m in self.control_modes))
        except (TypeError, ValueError) as error:
            raise ChunkError(f'chunk {self.sequence}: malformed arrays ({error})') from None

    @property
    def end_s(self) -> float:
        """Absolute time of the last point, s."""
        return float(self.start_s + self.times_from_start_s[-1])


class ChunkFault(enum.Enum):
    """The kind of problem that makes a chunk invalid."""

    MALFORMED = 'malformed'
    NOT_FINITE = 'not finite'
    UNKNOWN_JOINT = 'unknown joint'


@dataclass(frozen=True)
class Rejection:
    """A refused motion: a chunk (reason a :class:`ChunkFault`) or, in the planner, a request
    (reason one of its own enum's).

    Attributes:
        reason: The kind of problem.
        detail: Human-readable explanation with the joint and the numbers.
        joint: The joint concerned, if one is.
    """

    reason: enum.Enum
    detail: str
    joint: str | None = None

    def __str__(self) -> str:
        """``'<reason>: <detail>'``, the text for an action result."""
        return f'{self.reason.value}: {self.detail}'


def validate_chunk(
    chunk: object, joint_names: Collection[str], torque_joints: Iterable[str] | None = None
) -> Rejection | None:
    """Why ``chunk`` cannot be carried out as sent, or None when it is valid.

    A valid chunk has a finite start, names known joints once each, has at least one point with
    finite time_from_start values >= 0 that strictly increase, finite positions (and velocities,
    if it has any) of shape (points, joints), and empty control modes or one known mode per
    joint. Limits and continuity are the receiver's to check.

    Returns:
        None, or a rejection whose reason is a :class:`ChunkFault`.

    Args:
        chunk: Candidate (anything may arrive through a pipe).
        joint_names: The known joints (a mapping's keys will do).
        torque_joints: Joints that accept :attr:`ControlMode.TORQUE`; None: any joint.
    """
    if not isinstance(chunk, Chunk):
        return _malformed(f'not a TrajectoryChunk but {type(chunk).__name__}')
    try:
        return _structure_problem(chunk, joint_names, torque_joints)
    except (TypeError, ValueError, AttributeError, IndexError) as error:
        return _malformed(f'malformed chunk: {error}')


def _structure_problem(
    chunk: Chunk, known: Collection[str], torque_joints: Iterable[str] | None
) -> Rejection | None:
    if not math.isfinite(chunk.start_s):
        return Rejection(ChunkFault.NOT_FINITE, f'start time {chunk.start_s!r} is not finite')
    names = chunk.joint_names
    if not names:
        return _malformed('chunk names no joints')
    unknown = [name for name in names if name not in known]
    if unknown:
        return Rejection(
            ChunkFault.UNKNOWN_JOINT,
            f'unknown joint(s) {", ".join(map(repr, unknown))}; valid joints: {", ".join(known)}',
            unknown[0],
        )
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        return _malformed(f'duplicate joint names: {twice!r} twice', twice)
    times = chunk.times_from_start_s
    if times.ndim != 1 or times.size == 0:
        return _malformed('needs at least one point')
    if not np.isfinite(times).all():
        return Rejection(ChunkFault.NOT_FINITE, 'non-finite time_from_start')
    if times[0] < 0.0:
        return _malformed(
            'point times must increase (time_from_start >= 0 and strictly increasing): '
            f'the first is {times[0]:g} s'
        )
    if times.size > 1 and not (np.diff(times) > 0.0).all():
        late = int(np.argmin(np.diff(times) > 0.0)) + 1
        return _malformed(
            f'point times must increase (time_from_start >= 0 and strictly increasing): '
            f'point {late} of {times.size} '
            f'at {times[late]:.9g} s '
            f'is not after point {late - 1} at {times[late - 1]:.9g} s'
        )
    shape = (times.size, len(names))
    arrays = [('position', chunk.positions_rad), ('velocity', chunk.velocities_rad_s)]
    for label, values in arrays:
        if values is None:
            continue
        plural = 'positions' if label == 'position' else 'velocities'
        if values.shape != shape:
            return _malformed(f'{plural} shape {values.shape} != {shape} (points, joints)')
        problem = _first_non_finite(values, names, label)
        if problem is not None:
            return problem
    return _mode_problem(names, chunk.control_modes, torque_joints)


def _mode_problem(
    names: Sequence[str], modes: Sequence[int], torque_joints: Iterable[str] | None
) -> Rejection | None:
    if not modes:
        return None
    if len(modes) != len(names):
        return _malformed(
            f'{len(modes)} control modes for {len(names)} joints '
            '(control_modes: empty or one per joint)'
        )
    allowed = None if torque_joints is None else frozenset(torque_joints)
    for name, mode in zip(names, modes, strict=True):
        if mode not in (ControlMode.POSITION, ControlMode.TORQUE):
            known_modes = ', '.join(f'{known:d} {known.name.lower()}' for known in ControlMode)
            return _malformed(
                f'unknown control mode {mode} for {name!r} (control_modes: {known_modes})', name
            )
        if mode == ControlMode.TORQUE and allowed is not None and name not in allowed:
            return _malformed(f'torque mode is not available for {name!r}', name)
    return None


def _first_non_finite(values: np.ndarray, names: Sequence[str], label: str) -> Rejection | None:
    finite = np.isfinite(values)
    if finite.all():
        return None
    point, column = np.argwhere(~finite)[0]
    return Rejection(
        ChunkFault.NOT_FINITE,
        f'non-finite {label} for {names[column]!r} at point {point}',
        names[column],
    )


def _malformed(detail: str, joint: str | None = None) -> Rejection:
    return Rejection(ChunkFault.MALFORMED, detail, joint)
