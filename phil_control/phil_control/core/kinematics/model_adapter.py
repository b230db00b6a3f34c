"""Kinematics inputs from the robot description, and the IK -> URDF FK round trip.

The URDF (``phil_description``'s ``RobotModel``) is the single source of link lengths and limits;
this module turns it into the closed-form solver's ``ArmGeometry`` and ``JointLimits`` and maps
between the solver's nine-joint vectors (``ARM_JOINT_NAMES``) and the model's 13-joint vectors.
The round-trip helpers check a solution with the URDF's own forward kinematics (not a DH model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.kinematics.geometry import ARM_JOINT_NAMES, ArmGeometry, JointLimits
from phil_control.core.kinematics.ik import IkSolution

if TYPE_CHECKING:
    from phil_description.core import RobotModel


def arm_geometry(model: RobotModel) -> ArmGeometry:
    """Link lengths of the arms, m, as read from the URDF joint origins."""
    lengths = model.arm_lengths
    return ArmGeometry(
        shoulder_offset_m=lengths.shoulder_offset_m,
        upper_arm_m=lengths.upper_arm_m,
        forearm_m=lengths.forearm_m,
        stick_m=lengths.stick_m,
    )


def joint_limits(model: RobotModel, soft: bool = True) -> JointLimits:
    """Limits of every joint of the model, rad.

    Args:
        model: The robot model.
        soft: True (default) for the planning/IK limits (URDF ``<safety_controller>``, upstream's
            kinematics.json), False for the hard ``<limit>`` range (upstream's motors.json).
    """
    return JointLimits(
        {
            joint.name: (
                (joint.soft_lower_rad, joint.soft_upper_rad)
                if soft
                else (joint.lower_rad, joint.upper_rad)
            )
            for joint in model.joints
        }
    )


def arm_joint_indices(model: RobotModel) -> np.ndarray:
    """(9,) model-vector index of each joint of ``ARM_JOINT_NAMES``."""
    return np.array([model.joint(name).index for name in ARM_JOINT_NAMES])


def to_model_positions(
    model: RobotModel, arm_positions_rad: ArrayLike, base_rad: ArrayLike | None = None
) -> np.ndarray:
    """Embed nine-joint IK vectors into model joint vectors.

    Args:
        model: The robot model.
        arm_positions_rad: (9,) or (N, 9) in ``ARM_JOINT_NAMES`` order, rad (or an
            ``IkSolution``).
        base_rad: (13,) values of the other joints (head, pedals); default the ``init`` pose.

    Returns:
        (13,) or (N, 13) positions in model joint order, rad.
    """
    if isinstance(arm_positions_rad, IkSolution):
        arm_positions_rad = arm_positions_rad.positions_rad
    arm = np.asarray(arm_positions_rad, dtype=float)
    base = np.asarray(model.poses['init'] if base_rad is None else base_rad, dtype=float)
    positions = np.broadcast_to(base, arm.shape[:-1] + base.shape).copy()
    positions[..., arm_joint_indices(model)] = arm
    return positions


def from_model_positions(model: RobotModel, positions_rad: ArrayLike) -> np.ndarray:
    """The nine IK joints, (9,) or (N, 9), out of model joint vectors (13,) or (N, 13)."""
    return np.asarray(positions_rad, dtype=float)[..., arm_joint_indices(model)]


def urdf_stick_tips(
    model: RobotModel, arm_positions_rad: ArrayLike, base_rad: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(right, left) stick tips in the kinematic frame, m, by the URDF's forward kinematics.

    Args:
        model: The robot model.
        arm_positions_rad: (9,) or (N, 9) IK joint vectors (or an ``IkSolution``), rad.
        base_rad: (13,) values of the joints the IK does not use; default the ``init`` pose.
    """
    return model.stick_tip_positions(to_model_positions(model, arm_positions_rad, base_rad))


def round_trip_errors_m(
    model: RobotModel,
    arm_positions_rad: ArrayLike,
    right_tips_m: ArrayLike,
    left_tips_m: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """Distance between the URDF FK tips of IK solutions and the targets they were solved for.

    Args:
        model: The robot model.
        arm_positions_rad: (9,) or (N, 9) IK solutions (or an ``IkSolution``), rad.
        right_tips_m: (3,) or (N, 3) right targets, m.
        left_tips_m: (3,) or (N, 3) left targets, m.

    Returns:
        Right and left errors, m, shape () or (N,).
    """
    right, left = urdf_stick_tips(model, arm_positions_rad)
    return (
        np.linalg.norm(right - np.asarray(right_tips_m, dtype=float), axis=-1),
        np.linalg.norm(left - np.asarray(left_tips_m, dtype=float), axis=-1),
    )
