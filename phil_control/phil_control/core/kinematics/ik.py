"""Closed-form inverse kinematics of both arms (upstream's analytic solver).

Frame: origin on the waist axis at shoulder height, x = robot's right, y = forward, z = up. The
waist angle and both wrist angles are inputs, not unknowns; each arm is a planar two-link chain
once the forearm and stick are folded into one virtual link whose shape depends on the wrist angle.

Error design: a target the robot cannot take is data, not a bug, so the solvers never raise for it.
``solve_arms`` returns ``IkSolution | IkFailure``; ``solve_arms_batch`` returns per-row codes.
Only a malformed call (wrong array shapes) raises ``ValueError``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.kinematics.geometry import ARM_JOINT_NAMES, ArmGeometry, JointLimits

_WAIST, _RIGHT_WRIST, _LEFT_WRIST = 0, 7, 8
# Columns that come out of atan2 and may sit one turn away from their joint range.
_SOLVED_COLUMNS = np.arange(1, 7)
_NO_JOINT = -1
_RELATIVE_ROUNDING = 1e-12


class IkFailureReason(enum.IntEnum):
    """Why a target has no solution (the integer value is the code of ``IkBatchResult``)."""

    UNREACHABLE = 1
    JOINT_LIMIT = 2
    NOT_FINITE = 3


@dataclass(frozen=True)
class IkSolution:
    """Joint positions of the nine arm joints.

    Attributes:
        positions_rad: In ``ARM_JOINT_NAMES`` order, rad.
    """

    positions_rad: tuple[float, ...]

    def position(self, joint: str) -> float:
        """Return one joint's position in rad.

        Raises:
            KeyError: If ``joint`` is not an arm joint.
        """
        if joint not in ARM_JOINT_NAMES:
            raise KeyError(f'{joint!r} is not an arm joint ({", ".join(ARM_JOINT_NAMES)})')
        return self.positions_rad[ARM_JOINT_NAMES.index(joint)]

    def by_name(self) -> dict[str, float]:
        """Return joint name -> position in rad."""
        return dict(zip(ARM_JOINT_NAMES, self.positions_rad, strict=True))


@dataclass(frozen=True)
class IkFailure:
    """A target without a valid solution.

    Attributes:
        reason: The kind of failure.
        joint: For JOINT_LIMIT the first joint (``ARM_JOINT_NAMES`` order) outside its range; for
            UNREACHABLE the elbow of the arm whose chain cannot span the distance (no elbow angle
            exists); for NOT_FINITE the first given joint (waist, wrists) that is NaN/Inf, or None
            when only a tip coordinate is.
        detail: Human-readable explanation with the numbers involved.
    """

    reason: IkFailureReason
    joint: str | None
    detail: str


@dataclass(frozen=True, eq=False)
class IkBatchResult:
    """Solutions of ``solve_arms_batch``, one row per target.

    Attributes:
        positions_rad: (N, 9) joint positions in ``ARM_JOINT_NAMES`` order, rad. Rows that failed
            UNREACHABLE or NOT_FINITE are NaN; JOINT_LIMIT rows keep the offending values.
        ok: (N,) True where the row is a valid solution.
        failure_codes: (N,) int8, 0 where ok, else an ``IkFailureReason`` value.
        failure_joints: (N,) int8 index into ``ARM_JOINT_NAMES`` of ``IkFailure.joint``, or -1.
    """

    positions_rad: np.ndarray
    ok: np.ndarray
    failure_codes: np.ndarray
    failure_joints: np.ndarray
    _right_tips_m: np.ndarray = field(repr=False)
    _left_tips_m: np.ndarray = field(repr=False)
    _inputs_rad: np.ndarray = field(repr=False)
    _geometry: ArmGeometry = field(repr=False)
    _limits: JointLimits = field(repr=False)

    def __len__(self) -> int:
        """Return the number of rows N."""
        return int(self.ok.shape[0])

    def result(self, index: int) -> IkSolution | IkFailure:
        """Return row ``index`` as the scalar result type of ``solve_arms``."""
        code = int(self.failure_codes[index])
        if code == 0:
            return IkSolution(tuple(float(q) for q in self.positions_rad[index]))
        reason = IkFailureReason(code)
        joint_index = int(self.failure_joints[index])
        joint = ARM_JOINT_NAMES[joint_index] if joint_index != _NO_JOINT else None
        return IkFailure(reason, joint, self._detail(index, reason, joint_index))

    def _detail(self, index: int, reason: IkFailureReason, joint_index: int) -> str:
        right_tip, left_tip = self._right_tips_m[index], self._left_tips_m[index]
        waist, right_wrist, left_wrist = self._inputs_rad[index]
        if reason is IkFailureReason.NOT_FINITE:
            return (
                f'non-finite input: right tip {right_tip.tolist()} m, left tip '
                f'{left_tip.tolist()} m, waist {waist} rad, wrists {right_wrist}/{left_wrist} rad'
            )
        name = ARM_JOINT_NAMES[joint_index]
        if reason is IkFailureReason.JOINT_LIMIT:
            lower, upper = self._limits.bounds_rad[name]
            value = self.positions_rad[index, joint_index]
            return (
                f'{name} = {math.degrees(value):.2f} deg is outside '
                f'[{math.degrees(lower):.2f}, {math.degrees(upper):.2f}] deg'
            )
        side = 1.0 if name.startswith('right') else -1.0
        tip = right_tip if side > 0 else left_tip
        wrist = right_wrist if side > 0 else left_wrist
        shoulder = _shoulder_xy(self._geometry, side, np.array(waist))
        distance = math.sqrt(float(np.sum((tip[:2] - shoulder) ** 2)) + float(tip[2]) ** 2)
        virtual_length, _ = _virtual_link(self._geometry, np.array(wrist))
        upper_arm = self._geometry.upper_arm_m
        return (
            f'{name.split("_")[0]} arm cannot reach tip {tip.tolist()} m at waist '
            f'{math.degrees(waist):.2f} deg: {distance:.4f} m from the shoulder, reach is '
            f'[{abs(upper_arm - float(virtual_length)):.4f}, '
            f'{upper_arm + float(virtual_length):.4f}] m'
        )


def solve_arms(
    geometry: ArmGeometry,
    limits: JointLimits,
    right_tip_m: Sequence[float],
    left_tip_m: Sequence[float],
    waist_rad: float,
    right_wrist_rad: float,
    left_wrist_rad: float,
) -> IkSolution | IkFailure:
    """Solve the nine arm joints for one pair of stick-tip targets.

    Args:
        geometry: Link lengths.
        limits: Joint limits; every one of the nine joints is checked, including the given ones.
        right_tip_m: Right stick tip (x, y, z) in the kinematic frame, m.
        left_tip_m: Left stick tip (x, y, z), m.
        waist_rad: Waist angle (given, not solved), rad.
        right_wrist_rad: Right wrist angle (given), rad.
        left_wrist_rad: Left wrist angle (given), rad.

    Returns:
        ``IkSolution`` or an ``IkFailure`` saying why there is none.

    Raises:
        ValueError: If a tip is not three numbers (a programming error, not a target problem).
    """
    for name, tip in (('right_tip_m', right_tip_m), ('left_tip_m', left_tip_m)):
        if np.shape(tip) != (3,):
            raise ValueError(f'{name} must be (x, y, z), got shape {np.shape(tip)}')
    batch = solve_arms_batch(
        geometry,
        limits,
        np.asarray(right_tip_m, dtype=float)[np.newaxis],
        np.asarray(left_tip_m, dtype=float)[np.newaxis],
        waist_rad,
        right_wrist_rad,
        left_wrist_rad,
    )
    return batch.result(0)


def solve_arms_batch(
    geometry: ArmGeometry,
    limits: JointLimits,
    right_tips_m: ArrayLike,
    left_tips_m: ArrayLike,
    waist_rad: ArrayLike,
    right_wrist_rad: ArrayLike,
    left_wrist_rad: ArrayLike,
) -> IkBatchResult:
    """Solve many targets and/or waist angles in one vectorised call.

    Every argument broadcasts against the others to N rows: tips are (N, 3) or (3,), angles are
    (N,) or scalars. A waist scan passes one tip pair and an (N,) waist array.

    Args:
        geometry: Link lengths.
        limits: Joint limits.
        right_tips_m: Right stick tips, m.
        left_tips_m: Left stick tips, m.
        waist_rad: Waist angles, rad.
        right_wrist_rad: Right wrist angles, rad.
        left_wrist_rad: Left wrist angles, rad.

    Returns:
        Per-row positions, ok mask and failure codes; ``result(i)`` gives the scalar view.

    Raises:
        ValueError: If a tip array does not end in 3 or the arguments do not broadcast to (N,).
    """
    right_tips = _as_tips(right_tips_m, 'right_tips_m')
    left_tips = _as_tips(left_tips_m, 'left_tips_m')
    angles = [
        np.asarray(value, dtype=float) for value in (waist_rad, right_wrist_rad, left_wrist_rad)
    ]
    try:
        row_shape = np.broadcast_shapes(
            right_tips.shape[:-1], left_tips.shape[:-1], *(angle.shape for angle in angles)
        )
    except ValueError:
        raise ValueError(
            'solve_arms_batch: tips (N, 3) and angles (N,) do not broadcast to one row count: '
            f'{right_tips.shape}, {left_tips.shape}, {[angle.shape for angle in angles]}'
        ) from None
    if len(row_shape) > 1:
        raise ValueError(f'solve_arms_batch: rows must be one-dimensional, got {row_shape}')
    rows = row_shape[0] if row_shape else 1
    right_tips = np.broadcast_to(right_tips, (rows, 3))
    left_tips = np.broadcast_to(left_tips, (rows, 3))
    inputs = np.stack([np.broadcast_to(angle, (rows,)) for angle in angles], axis=1)
    waist, right_wrist, left_wrist = inputs.T

    finite_inputs = (
        np.isfinite(right_tips).all(axis=1)
        & np.isfinite(left_tips).all(axis=1)
        & np.isfinite(inputs).all(axis=1)
    )
    with np.errstate(invalid='ignore'):
        right_shoulder_1, right_shoulder_2, right_elbow, right_reachable = _solve_arm(
            geometry, 1.0, right_tips, waist, right_wrist
        )
        left_shoulder_1, left_shoulder_2, left_elbow, left_reachable = _solve_arm(
            geometry, -1.0, left_tips, waist, left_wrist
        )
    positions = np.stack(
        [
            waist,
            right_shoulder_1,
            left_shoulder_1,
            right_shoulder_2,
            right_elbow,
            left_shoulder_2,
            left_elbow,
            right_wrist,
            left_wrist,
        ],
        axis=1,
    )
    positions[:, _SOLVED_COLUMNS] = _shift_into_range(
        positions[:, _SOLVED_COLUMNS],
        limits.arm_lower_rad[_SOLVED_COLUMNS],
        limits.arm_upper_rad[_SOLVED_COLUMNS],
    )

    outside = (positions < limits.arm_lower_rad) | (positions > limits.arm_upper_rad)
    codes = np.zeros(rows, dtype=np.int8)
    joints = np.full(rows, _NO_JOINT, dtype=np.int8)
    # Assigned from the lowest to the highest priority so the strongest reason wins.
    limit_rows = outside.any(axis=1)
    codes[limit_rows] = IkFailureReason.JOINT_LIMIT
    joints[limit_rows] = np.argmax(outside[limit_rows], axis=1)
    for reachable, elbow_name in (
        (left_reachable, 'left_elbow'),
        (right_reachable, 'right_elbow'),
    ):
        codes[~reachable] = IkFailureReason.UNREACHABLE
        joints[~reachable] = ARM_JOINT_NAMES.index(elbow_name)
    codes[~finite_inputs] = IkFailureReason.NOT_FINITE
    joints[~finite_inputs] = _first_non_finite_angle(inputs[~finite_inputs])
    no_solution = (codes == IkFailureReason.UNREACHABLE) | (codes == IkFailureReason.NOT_FINITE)
    positions[no_solution] = np.nan
    return IkBatchResult(
        positions, codes == 0, codes, joints, right_tips, left_tips, inputs, geometry, limits
    )


def _solve_arm(
    geometry: ArmGeometry,
    side: float,
    tips: np.ndarray,
    waist: np.ndarray,
    wrist: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Solve shoulder_1, shoulder_2, elbow of one arm (side +1 right, -1 left) and reachability."""
    shoulder_x, shoulder_y = _shoulder_xy(geometry, side, waist)
    delta_x, delta_y = tips[:, 0] - shoulder_x, tips[:, 1] - shoulder_y
    shoulder_1 = np.arctan2(delta_y, delta_x) - waist
    horizontal = np.hypot(delta_x, delta_y)
    depth = -tips[:, 2]
    virtual_length, virtual_angle = _virtual_link(geometry, wrist)
    upper_arm = geometry.upper_arm_m
    cosine_term = depth**2 + horizontal**2 - upper_arm**2 - virtual_length**2
    full_span = 4.0 * upper_arm**2 * virtual_length**2
    discriminant = full_span - cosine_term**2
    # A fully stretched or folded arm gives a discriminant of 0 that rounds to a hair below.
    reachable = discriminant >= -_RELATIVE_ROUNDING * full_span
    elbow = np.arctan2(np.sqrt(np.maximum(discriminant, 0.0)), cosine_term)
    shoulder_2 = np.arctan2(horizontal, depth) - np.arctan2(
        virtual_length * np.sin(elbow), upper_arm + virtual_length * np.cos(elbow)
    )
    return shoulder_1, shoulder_2, elbow - virtual_angle, reachable


def _shoulder_xy(
    geometry: ArmGeometry, side: float, waist: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    offset = side * geometry.shoulder_offset_m
    return offset * np.cos(waist), offset * np.sin(waist)


def _virtual_link(geometry: ArmGeometry, wrist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Length and angle (from the forearm) of the elbow-to-tip segment for a wrist angle."""
    along = geometry.forearm_m + geometry.stick_m * np.cos(wrist)
    across = geometry.stick_m * np.sin(wrist)
    return np.hypot(along, across), np.arctan2(across, along)


def _shift_into_range(angles: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Move angles by a whole turn where that lands them inside [lower, upper].

    atan2 differences live in (-3 pi, 3 pi), while e.g. left_shoulder_1 ranges over 30..180 deg, so
    a valid pose can come out one turn off. Angles that no shift makes valid are returned wrapped
    to (-pi, pi] for reporting.
    """
    inside = (angles >= lower) & (angles <= upper)
    shifted = lower + np.mod(angles - lower, 2.0 * np.pi)
    principal = np.pi - np.mod(np.pi - angles, 2.0 * np.pi)
    return np.where(inside, angles, np.where(shifted <= upper, shifted, principal))


def _first_non_finite_angle(inputs: np.ndarray) -> np.ndarray:
    """Index in ``ARM_JOINT_NAMES`` of the first NaN/Inf given angle per row, else -1."""
    bad = ~np.isfinite(inputs)
    columns = np.array([_WAIST, _RIGHT_WRIST, _LEFT_WRIST], dtype=np.int8)
    return np.where(bad.any(axis=1), columns[np.argmax(bad, axis=1)], _NO_JOINT).astype(np.int8)


def _as_tips(tips: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(tips, dtype=float)
    if array.ndim not in (1, 2) or array.shape[-1] != 3:
        raise ValueError(f'{name} must have shape (N, 3) or (3,), got {array.shape}')
    return array
