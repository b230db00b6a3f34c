"""Closed-form inverse kinematics of both arms (upstream's analytic solver).

Frame: origin on the waist axis at shoulder height, x = robot's right, y = forward, z = up. The
waist angle and both wrist angles are inputs, not unknowns; each arm is a planar two-link chain
once the forearm and stick are folded into one virtual link whose shape depends on the wrist angle.
That one-arm solution is `arm_chain`'s; this module solves both arms and reports failures.

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

from phil_control.core.kinematics.arm_chain import (
    shift_into_range,
    shoulder_xy,
    solve_arm_chain,
    virtual_link,
)
from phil_control.core.kinematics.geometry import ARM_JOINT_NAMES, ArmGeometry, JointLimits

_WAIST, _RIGHT_WRIST, _LEFT_WRIST = 0, 7, 8
# Columns that come out of atan2 and may sit one turn away from their joint range.
_SOLVED_COLUMNS = np.arange(1, 7)
_NO_JOINT = -1


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
        shoulder = shoulder_xy(self._geometry, side, np.array(waist))
        distance = math.sqrt(float(np.sum((tip[:2] - shoulder) ** 2)) + float(tip[2]) ** 2)
        virtual_length, _ = virtual_link(self._geometry, np.array(wrist))
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
    right_tips, left_tips, inputs = _broadcast_rows(
        right_tips_m, left_tips_m, waist_rad, right_wrist_rad, left_wrist_rad
    )
    positions, right_reachable, left_reachable = _solve_positions(
        geometry, limits, right_tips, left_tips, inputs
    )
    finite_inputs = (
        np.isfinite(right_tips).all(axis=1)
        & np.isfinite(left_tips).all(axis=1)
        & np.isfinite(inputs).all(axis=1)
    )
    codes, joints = _failure_codes(
        positions, limits, right_reachable, left_reachable, finite_inputs, inputs
    )
    no_solution = (codes == IkFailureReason.UNREACHABLE) | (codes == IkFailureReason.NOT_FINITE)
    positions[no_solution] = np.nan
    return IkBatchResult(
        positions, codes == 0, codes, joints, right_tips, left_tips, inputs, geometry, limits
    )


def _broadcast_rows(
    right_tips_m: ArrayLike,
    left_tips_m: ArrayLike,
    waist_rad: ArrayLike,
    right_wrist_rad: ArrayLike,
    left_wrist_rad: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right tips (N, 3), left tips (N, 3) and the given angles (N, 3: waist, right wrist, left
    wrist) of ``solve_arms_batch``'s arguments broadcast to N rows.

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
    return right_tips, left_tips, inputs


def _solve_positions(
    geometry: ArmGeometry,
    limits: JointLimits,
    right_tips: np.ndarray,
    left_tips: np.ndarray,
    inputs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint positions (N, 9) in ``ARM_JOINT_NAMES`` order, solved columns shifted into their
    range where a whole turn does that, and each arm's reachability (N,)."""
    waist, right_wrist, left_wrist = inputs.T
    with np.errstate(invalid='ignore'):
        right_shoulder_1, right_shoulder_2, right_elbow, right_reachable = solve_arm_chain(
            geometry, 1.0, right_tips, waist, right_wrist
        )
        left_shoulder_1, left_shoulder_2, left_elbow, left_reachable = solve_arm_chain(
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
    positions[:, _SOLVED_COLUMNS] = shift_into_range(
        positions[:, _SOLVED_COLUMNS],
        limits.arm_lower_rad[_SOLVED_COLUMNS],
        limits.arm_upper_rad[_SOLVED_COLUMNS],
    )
    return positions, right_reachable, left_reachable


def _failure_codes(
    positions: np.ndarray,
    limits: JointLimits,
    right_reachable: np.ndarray,
    left_reachable: np.ndarray,
    finite_inputs: np.ndarray,
    inputs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row ``IkFailureReason`` codes (0: ok) and failing joints (``_NO_JOINT``: none); a
    non-finite input outranks an unreachable arm, which outranks a joint limit."""
    rows = positions.shape[0]
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
    return codes, joints


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
