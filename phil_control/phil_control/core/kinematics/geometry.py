"""Arm geometry and joint limits used by the closed-form kinematics.

Both types are plain validated values. Link lengths and limits come from the robot description (the
URDF is the single source); this module holds no robot numbers of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

#: The nine joints the arm IK solves or takes as input, in the order of every joint vector here.
ARM_JOINT_NAMES: tuple[str, ...] = (
    'waist',
    'right_shoulder_1',
    'left_shoulder_1',
    'right_shoulder_2',
    'right_elbow',
    'left_shoulder_2',
    'left_elbow',
    'right_wrist',
    'left_wrist',
)


@dataclass(frozen=True)
class ArmGeometry:
    """Link lengths of both arms (the arms are mirror images of each other).

    Attributes:
        shoulder_offset_m: Distance from the waist axis to each shoulder_1 axis, i.e. half the
            shoulder spacing, in metres.
        upper_arm_m: shoulder_2 axis to elbow axis, in metres.
        forearm_m: Elbow axis to wrist axis, in metres.
        stick_m: Wrist axis to stick tip, in metres.
    """

    shoulder_offset_m: float
    upper_arm_m: float
    forearm_m: float
    stick_m: float

    def __post_init__(self) -> None:
        """Reject lengths that are not positive finite numbers.

        Raises:
            ValueError: Naming the first offending field.
        """
        for name in ('shoulder_offset_m', 'upper_arm_m', 'forearm_m', 'stick_m'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'ArmGeometry.{name} must be a number, got {value!r}')
            if not math.isfinite(value) or value <= 0.0:
                raise ValueError(
                    f'ArmGeometry.{name} must be a positive finite length in m, got {value!r}'
                )
            object.__setattr__(self, name, float(value))


@dataclass(frozen=True)
class JointLimits:
    """Position limits per joint name, in rad.

    The nine names of ``ARM_JOINT_NAMES`` are required; further joints (head, pedals) may be
    present so the whole table of the robot description can be passed unchanged.

    Attributes:
        bounds_rad: Joint name -> (lower, upper) in rad; stored as a read-only mapping.
    """

    bounds_rad: Mapping[str, tuple[float, float]]
    _arm_lower_rad: np.ndarray = field(init=False, repr=False, compare=False)
    _arm_upper_rad: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Validate and freeze the table.

        Raises:
            ValueError: If an arm joint is missing, a bound is not finite, or lower >= upper.
        """
        if not isinstance(self.bounds_rad, Mapping):
            raise ValueError(f'JointLimits.bounds_rad must be a mapping, got {self.bounds_rad!r}')
        missing = [name for name in ARM_JOINT_NAMES if name not in self.bounds_rad]
        if missing:
            raise ValueError(f'JointLimits.bounds_rad lacks arm joints: {", ".join(missing)}')
        frozen: dict[str, tuple[float, float]] = {}
        for name, bounds in self.bounds_rad.items():
            try:
                lower, upper = (float(bound) for bound in bounds)
            except (TypeError, ValueError):
                raise ValueError(
                    f'JointLimits: {name!r} needs a (lower, upper) pair in rad, got {bounds!r}'
                ) from None
            if not (math.isfinite(lower) and math.isfinite(upper)):
                raise ValueError(f'JointLimits: {name!r} bounds must be finite, got {bounds!r}')
            if lower >= upper:
                raise ValueError(
                    f'JointLimits: {name!r} lower bound {lower} rad must be below upper '
                    f'{upper} rad'
                )
            frozen[name] = (lower, upper)
        object.__setattr__(self, 'bounds_rad', MappingProxyType(frozen))
        lower_rad = np.array([frozen[name][0] for name in ARM_JOINT_NAMES])
        upper_rad = np.array([frozen[name][1] for name in ARM_JOINT_NAMES])
        lower_rad.flags.writeable = False
        upper_rad.flags.writeable = False
        object.__setattr__(self, '_arm_lower_rad', lower_rad)
        object.__setattr__(self, '_arm_upper_rad', upper_rad)

    def __hash__(self) -> int:
        """Hash the table so limits can key caches (a mapping field is not hashable itself)."""
        return hash(tuple(sorted(self.bounds_rad.items())))

    @classmethod
    def from_degrees(cls, bounds_deg: Mapping[str, tuple[float, float]]) -> JointLimits:
        """Build limits from a table in degrees (the unit of upstream's JSON files).

        Args:
            bounds_deg: Joint name -> (lower, upper) in degrees.

        Returns:
            The same limits in rad.
        """
        return cls(
            {
                name: (math.radians(lower), math.radians(upper))
                for name, (lower, upper) in bounds_deg.items()
            }
        )

    @property
    def arm_lower_rad(self) -> np.ndarray:
        """Lower bounds of the nine arm joints in ``ARM_JOINT_NAMES`` order (read-only, rad)."""
        return self._arm_lower_rad

    @property
    def arm_upper_rad(self) -> np.ndarray:
        """Upper bounds of the nine arm joints in ``ARM_JOINT_NAMES`` order (read-only, rad)."""
        return self._arm_upper_rad
