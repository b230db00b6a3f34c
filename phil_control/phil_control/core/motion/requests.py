"""Typed motion requests (upstream MOVE, LOOK, POSE, GESTURE) and their defaults.

Requests are plain values and are not validated on construction: ``validation`` and
``primitives`` check them and return a ``Rejection`` with the reason, so a bad request coming from
a message never raises inside a node. ``None`` for a duration or profile means "the default".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Union

from phil_control.core.profiles import Profile

#: Upstream's durations, s.
DEFAULT_MOVE_DURATION_S = 3.0
DEFAULT_LOOK_DURATION_S = 1.0
DEFAULT_POSE_DURATION_S = 3.0
#: Longest single motion accepted, s; a longer one is almost certainly a unit mistake (ms for s).
DEFAULT_MAX_DURATION_S = 60.0


@dataclass(frozen=True)
class MotionDefaults:
    """Durations and profiles used when a request leaves them open.

    Attributes:
        move_duration_s: MOVE duration, s (upstream 3.0).
        look_duration_s: LOOK duration, s (upstream 1.0).
        pose_duration_s: POSE duration, s (upstream 3.0).
        max_duration_s: Upper bound for any requested duration, s.
        move_profile: MOVE profile (upstream COSINE).
        look_profile: LOOK profile (upstream COSINE).
        pose_profile: POSE profile (upstream TRAPEZOIDAL).
    """

    move_duration_s: float = DEFAULT_MOVE_DURATION_S
    look_duration_s: float = DEFAULT_LOOK_DURATION_S
    pose_duration_s: float = DEFAULT_POSE_DURATION_S
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    move_profile: Profile = Profile.COSINE
    look_profile: Profile = Profile.COSINE
    pose_profile: Profile = Profile.TRAPEZOIDAL

    def __post_init__(self) -> None:
        """Reject non-positive or non-finite durations and defaults above the maximum.

        Raises:
            ValueError: Naming the field.
        """
        for name in ('move_duration_s', 'look_duration_s', 'pose_duration_s', 'max_duration_s'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'MotionDefaults.{name} must be a number, got {value!r}')
            if not math.isfinite(value) or value <= 0.0:
                raise ValueError(f'MotionDefaults.{name} must be positive and finite, got {value}')
            if value > self.max_duration_s:
                raise ValueError(
                    f'MotionDefaults.{name} = {value} s exceeds max_duration_s '
                    f'{self.max_duration_s} s'
                )
        for name in ('move_profile', 'look_profile', 'pose_profile'):
            if not isinstance(getattr(self, name), Profile):
                raise ValueError(f'MotionDefaults.{name} must be a Profile')


@dataclass(frozen=True)
class MoveRequest:
    """MOVE: any set of joints to absolute targets at the same time.

    Attributes:
        targets_rad: Joint name -> absolute target, rad (stored read-only).
        duration_s: Duration, s; None = ``MotionDefaults.move_duration_s``.
        profile: Time profile; None = ``MotionDefaults.move_profile``.
    """

    targets_rad: Mapping[str, float]
    duration_s: float | None = None
    profile: Profile | None = None

    def __post_init__(self) -> None:
        """Freeze the target table (values are checked by the planner, not here)."""
        object.__setattr__(self, 'targets_rad', MappingProxyType(dict(self.targets_rad)))


@dataclass(frozen=True)
class LookRequest:
    """LOOK: turn the head to absolute joint angles.

    Attributes:
        pan_rad: head_yaw target, rad (positive = left).
        tilt_rad: head_pitch target, rad (positive = down).
        duration_s: Duration, s; None = ``MotionDefaults.look_duration_s``.
    """

    pan_rad: float
    tilt_rad: float
    duration_s: float | None = None


@dataclass(frozen=True)
class PoseRequest:
    """POSE: every joint to a named pose of the robot description.

    Attributes:
        pose: Pose name (init, home, ready, shutdown).
        duration_s: Duration, s; None = ``MotionDefaults.pose_duration_s``.
    """

    pose: str
    duration_s: float | None = None


@dataclass(frozen=True)
class GestureRequest:
    """GESTURE: a fixed sequence of steps (nod, shake, wave = hi, hurray = happy).

    Attributes:
        gesture: Gesture name (matched case-insensitively).
    """

    gesture: str


MotionRequest = Union[MoveRequest, LookRequest, PoseRequest, GestureRequest]


def parse_profile(name: str) -> Profile | None:
    """Map a profile name to a ``Profile``.

    Args:
        name: ``cosine``, ``cubic``, ``quintic`` or ``trapezoidal`` (any case); empty = default.

    Returns:
        The profile, or None for an empty name.

    Raises:
        ValueError: Listing the valid names.
    """
    key = name.strip().lower()
    if not key:
        return None
    for profile in Profile:
        if profile.value == key:
            return profile
    valid = ', '.join(profile.value for profile in Profile)
    raise ValueError(f'unknown profile {name!r}; valid profiles: {valid}')
