"""Closed-form arm kinematics in upstream's frame (x right, y forward, z up, origin on the waist
axis at shoulder height): geometry and limits, IK (scalar and vectorised) and waist selection.

Forward kinematics comes from the robot description (URDF), not from here.
"""

from phil_control.core.kinematics.geometry import ARM_JOINT_NAMES, ArmGeometry, JointLimits
from phil_control.core.kinematics.ik import (
    IkBatchResult,
    IkFailure,
    IkFailureReason,
    IkSolution,
    solve_arms,
    solve_arms_batch,
)
from phil_control.core.kinematics.waist import (
    DEFAULT_WAIST_STEP_RAD,
    UpcomingWaist,
    WaistChoice,
    WaistFailure,
    WaistKeyframe,
    WaistSegment,
    choose_waist,
    monotone_slopes,
    plan_waist_segment,
    waist_scan_angles,
)

__all__ = [
    'ARM_JOINT_NAMES',
    'DEFAULT_WAIST_STEP_RAD',
    'ArmGeometry',
    'IkBatchResult',
    'IkFailure',
    'IkFailureReason',
    'IkSolution',
    'JointLimits',
    'UpcomingWaist',
    'WaistChoice',
    'WaistFailure',
    'WaistKeyframe',
    'WaistSegment',
    'choose_waist',
    'monotone_slopes',
    'plan_waist_segment',
    'solve_arms',
    'solve_arms_batch',
    'waist_scan_angles',
]
