"""What the play generators need to know about the robot, taken from the robot model once.

`PlayRobot.from_model(model)` reads the arm geometry, the IK joint limits (the URDF soft limits),
velocity limits, the `ready` pose and the strike points of the kit. It holds no numbers of its
own; everything comes from the robot description.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from phil_control.core.kinematics import ArmGeometry, JointLimits
from phil_control.core.kinematics.model_adapter import arm_geometry, joint_limits
from phil_control.core.score.instruments import MAX_DRUM_ID

HANDS = ('right', 'left')
JOINT_COUNT = 13


class UnknownDrumError(KeyError):
    """A drum id without a strike point for the requested hand."""


@dataclass(frozen=True)
class StrikeTarget:
    """Where a stick tip meets an instrument and the wrist angle there.

    Attributes:
        position_m: Tip position (x right, y forward, z up; origin on the waist axis at
            shoulder height), m.
        wrist_rad: Wrist joint angle at impact, rad.
    """

    position_m: tuple[float, float, float]
    wrist_rad: float


@dataclass(frozen=True, eq=False)
class PlayRobot:
    """Robot data used by play-motion synthesis.

    Attributes:
        joint_names: The 13 joint names in upstream index order.
        geometry: Arm link lengths for the closed-form IK.
        limits: IK joint limits (URDF soft limits), rad.
        soft_lower_rad: (13,) soft lower limits, rad.
        soft_upper_rad: (13,) soft upper limits, rad.
        velocity_limit_rad_s: (13,) URDF velocity limits, rad/s.
        ready_rad: (13,) the `ready` pose, rad.
        targets: (hand, drum id 1..9) -> strike target.
        head_yaw_rate_rad_s: Fastest world-frame head yaw the head generator plans, rad/s.
    """

    joint_names: tuple[str, ...]
    geometry: ArmGeometry
    limits: JointLimits
    soft_lower_rad: np.ndarray
    soft_upper_rad: np.ndarray
    velocity_limit_rad_s: np.ndarray
    ready_rad: np.ndarray
    targets: Mapping[tuple[str, int], StrikeTarget]
    head_yaw_rate_rad_s: float
    _index: Mapping[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Freeze the tables and check the joint count.

        Raises:
            ValueError: Not 13 joints, or an array of the wrong shape.
        """
        if len(self.joint_names) != JOINT_COUNT:
            raise ValueError(f'PlayRobot needs {JOINT_COUNT} joints, got {len(self.joint_names)}')
        for name in ('soft_lower_rad', 'soft_upper_rad', 'velocity_limit_rad_s', 'ready_rad'):
            array = np.array(getattr(self, name), dtype=float)
            if array.shape != (JOINT_COUNT,):
                raise ValueError(f'PlayRobot.{name} must have shape ({JOINT_COUNT},)')
            array.flags.writeable = False
            object.__setattr__(self, name, array)
        object.__setattr__(self, 'targets', MappingProxyType(dict(self.targets)))
        index = {name: i for i, name in enumerate(self.joint_names)}
        object.__setattr__(self, '_index', MappingProxyType(index))

    @classmethod
    def from_model(cls, model: Any, head_yaw_rate_fraction: float = 0.5) -> PlayRobot:
        """Build from a `phil_description` RobotModel.

        Args:
            model: The robot model (joints, arm_lengths, poses, kit).
            head_yaw_rate_fraction: Share of the head_yaw velocity limit the head generator may
                plan for its world-frame yaw (the rest is left for the waist it compensates).

        Raises:
            ValueError: The model lacks the `ready` pose or a kit strike point is malformed.
        """
        geometry = arm_geometry(model)
        limits = joint_limits(model, soft=True)
        if 'ready' not in model.poses:
            raise ValueError('the robot model has no ready pose')
        targets = {}
        for instrument in model.kit.instruments:
            if not 1 <= instrument.id <= MAX_DRUM_ID:
                continue
            for hand, strike in instrument.strikes.items():
                position = tuple(float(value) for value in strike.position_m)
                targets[(hand, instrument.id)] = StrikeTarget(
                    position_m=position, wrist_rad=float(strike.wrist_angle_rad)
                )
        head_index = model.joint('head_yaw').index
        return cls(
            joint_names=tuple(model.joint_names),
            geometry=geometry,
            limits=limits,
            soft_lower_rad=model.soft_lower_rad,
            soft_upper_rad=model.soft_upper_rad,
            velocity_limit_rad_s=model.velocity_limit_rad_s,
            ready_rad=model.poses['ready'],
            targets=targets,
            head_yaw_rate_rad_s=head_yaw_rate_fraction
            * float(model.velocity_limit_rad_s[head_index]),
        )

    def index(self, joint: str) -> int:
        """Index of a joint in the 13-joint vector.

        Raises:
            KeyError: Unknown joint name.
        """
        try:
            return self._index[joint]
        except KeyError:
            raise KeyError(f'unknown joint {joint!r}') from None

    def target(self, hand: str, drum_id: int) -> StrikeTarget:
        """Strike target of a drum coordinate id (1..9) for one hand.

        Raises:
            UnknownDrumError: No strike point for that hand and id.
        """
        try:
            return self.targets[(hand, drum_id)]
        except KeyError:
            raise UnknownDrumError(
                f'no {hand}-hand strike point for drum id {drum_id!r} in the kit'
            ) from None

    def look_angle_rad(self, drum_id: int) -> float:
        """Direction of a drum's right-hand strike point, atan2(y, x), rad (pi/2 = ahead).

        Raises:
            UnknownDrumError: No right-hand strike point for the id.
        """
        x, y, _ = self.target('right', drum_id).position_m
        return math.atan2(y, x)
