"""The names and ranges a command line is checked against: joints, poses, instruments, limits."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from phil_control.core.protocol.commands import GESTURE_NAMES
from phil_control.core.score.instruments import HIT_INSTRUMENT_IDS

#: Longest accepted motion time (MOVE duration), s.
DEFAULT_MAX_DURATION_S = 60.0
#: Largest accepted angle magnitude when no joint limit applies, deg.
DEFAULT_MAX_ABS_ANGLE_DEG = 360.0


#: The joints LOOK|pan|tilt moves (pan, tilt).
LOOK_JOINTS = ('head_yaw', 'head_pitch')


@dataclass(frozen=True)
class ProtocolVocabulary:
    """What a valid command may name, and the ranges its numbers must lie in.

    Attributes:
        joint_names: MOVE joint names, in the model's joint order.
        pose_names: POSE names.
        instrument_names: HIT names (exact strings, e.g. 'closed hihat').
        gesture_names: GESTURE names.
        play_ids: PLAY ids; None = any non-empty id (the play list is checked later).
        joint_limits_rad: Optional (lower, upper) per joint; MOVE angles outside are rejected.
        look_joints: Optional (pan joint, tilt joint); with `joint_limits_rad`, LOOK angles are
            checked against their limits.
        max_duration_s: Longest MOVE duration; durations must lie in (0, max_duration_s].
        max_abs_angle_deg: Angles beyond +/- this many degrees are rejected in any case.

    Raises:
        ValueError: A name list is empty or holds duplicates, a limit names an unknown joint, or a
            range is not positive and finite.
    """

    joint_names: tuple[str, ...]
    pose_names: tuple[str, ...]
    instrument_names: tuple[str, ...] = tuple(HIT_INSTRUMENT_IDS)
    gesture_names: tuple[str, ...] = GESTURE_NAMES
    play_ids: frozenset[str] | None = None
    joint_limits_rad: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    look_joints: tuple[str, str] | None = None
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    max_abs_angle_deg: float = DEFAULT_MAX_ABS_ANGLE_DEG

    def __post_init__(self) -> None:
        for label in ('joint_names', 'pose_names', 'instrument_names', 'gesture_names'):
            names = tuple(getattr(self, label))
            object.__setattr__(self, label, names)
            if not names:
                raise ValueError(f'{label} is empty')
            if len(set(names)) != len(names):
                raise ValueError(f'{label} holds duplicates: {names}')
        limits = MappingProxyType(
            {
                str(name): (float(lower), float(upper))
                for name, (lower, upper) in self.joint_limits_rad.items()
            }
        )
        object.__setattr__(self, 'joint_limits_rad', limits)
        unknown = sorted(set(limits) - set(self.joint_names))
        if unknown:
            raise ValueError(f'joint_limits_rad names unknown joint(s) {", ".join(unknown)}')
        if self.look_joints is not None:
            object.__setattr__(self, 'look_joints', tuple(self.look_joints))
            missing = [name for name in self.look_joints if name not in self.joint_names]
            if len(self.look_joints) != 2 or missing:
                raise ValueError(
                    f'look_joints must be two of {self.joint_names}, got {self.look_joints}'
                )
        if self.play_ids is not None:
            object.__setattr__(self, 'play_ids', frozenset(self.play_ids))
        for label in ('max_duration_s', 'max_abs_angle_deg'):
            value = getattr(self, label)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'{label} must be positive and finite, got {value}')

    @classmethod
    def from_robot_model(
        cls,
        model: Any,
        look_joints: Iterable[str] | None = None,
        play_ids: Iterable[str] | None = None,
        **overrides: Any,
    ) -> ProtocolVocabulary:
        """Build the vocabulary of a `phil_description` robot model.

        Joint names, hard joint limits, pose names and the kit's HIT names come from the model.

        Args:
            model: A `phil_description.core.RobotModel` (anything with `joint_names`,
                `joint(name).lower_rad/upper_rad`, `poses` and `kit.names`).
            look_joints: (pan joint, tilt joint) to check LOOK angles against their limits.
            play_ids: Valid PLAY ids, or None to accept any id.
            **overrides: Further `ProtocolVocabulary` fields (e.g. `max_duration_s`).
        """
        joint_names = tuple(model.joint_names)
        limits = {
            name: (model.joint(name).lower_rad, model.joint(name).upper_rad)
            for name in joint_names
        }
        return cls(
            joint_names=joint_names,
            pose_names=tuple(model.poses),
            instrument_names=tuple(model.kit.names),
            play_ids=None if play_ids is None else frozenset(play_ids),
            joint_limits_rad=limits,
            look_joints=None if look_joints is None else tuple(look_joints),
            **overrides,
        )
