"""Numeric helpers shared by the codecs: rounding, integer saturation, joint <-> motor angles.

Rounding rule used by every codec: round to nearest, ties away from zero (``round_half_away``),
which is what C++ ``std::round`` / ``std::lround`` do upstream. Python's built-in ``round`` rounds
ties to even and is deliberately not used.
"""

from __future__ import annotations

import math

from .frame import CodecError

INT8_RANGE = (-(2**7), 2**7 - 1)
INT16_RANGE = (-(2**15), 2**15 - 1)
INT32_RANGE = (-(2**31), 2**31 - 1)
UINT8_RANGE = (0, 2**8 - 1)
UINT16_RANGE = (0, 2**16 - 1)
UINT32_RANGE = (0, 2**32 - 1)


def require_finite(value: float, what: str) -> float:
    """Return ``value`` unchanged, or raise if it is NaN or infinite.

    Args:
        value: Number to check.
        what: Name of the quantity (with unit) for the error message.

    Raises:
        CodecError: If ``value`` is NaN or +-inf.
    """
    if not math.isfinite(value):
        raise CodecError(f'{what} must be finite, got {value!r}')
    return value


def round_half_away(value: float) -> int:
    """Round to the nearest integer, ties away from zero (C++ ``std::lround``).

    Args:
        value: A finite number.

    Returns:
        The rounded integer, e.g. 2.5 -> 3, -2.5 -> -3, 3982.22 -> 3982.
    """
    magnitude = math.floor(abs(value) + 0.5)
    return magnitude if value >= 0 else -magnitude


def saturate(value: float, lower: float, upper: float) -> float:
    """Clamp ``value`` into ``[lower, upper]``."""
    return min(max(value, lower), upper)


def saturating_int(value: float, int_range: tuple[int, int], what: str) -> int:
    """Round a finite number and saturate it into an integer range instead of overflowing.

    Args:
        value: Scaled quantity to put on the wire.
        int_range: Inclusive (minimum, maximum), e.g. :data:`INT32_RANGE`.
        what: Name of the quantity for the error message.

    Returns:
        ``round_half_away(value)`` clamped to ``int_range``.

    Raises:
        CodecError: If ``value`` is NaN or infinite (saturating NaN has no meaning).
    """
    require_finite(value, what)
    lower, upper = int_range
    if value <= lower:
        return lower
    if value >= upper:
        return upper
    return round_half_away(value)


def _check_direction_sign(direction_sign: int) -> None:
    if direction_sign not in (1, -1):
        raise ValueError(f'direction_sign must be +1 or -1, got {direction_sign!r}')


def joint_to_motor_rad(joint_rad: float, initial_joint_rad: float, direction_sign: int) -> float:
    """Convert a production joint angle to the angle the actuator sees.

    ``motor = (joint - initial) * direction_sign``; motor 0 is the pinned power-on pose.

    Args:
        joint_rad: Joint angle [rad].
        initial_joint_rad: Joint angle of the power-on (pinned) pose [rad].
        direction_sign: +1 or -1.

    Returns:
        Motor (output-shaft) angle [rad].

    Raises:
        ValueError: If ``direction_sign`` is not +1 or -1.
    """
    _check_direction_sign(direction_sign)
    return (joint_rad - initial_joint_rad) * direction_sign


def motor_to_joint_rad(motor_rad: float, initial_joint_rad: float, direction_sign: int) -> float:
    """Convert an actuator angle back to the production joint angle.

    ``joint = motor * direction_sign + initial``.

    Args:
        motor_rad: Motor (output-shaft) angle [rad].
        initial_joint_rad: Joint angle of the power-on (pinned) pose [rad].
        direction_sign: +1 or -1.

    Returns:
        Joint angle [rad].

    Raises:
        ValueError: If ``direction_sign`` is not +1 or -1.
    """
    _check_direction_sign(direction_sign)
    return motor_rad * direction_sign + initial_joint_rad
