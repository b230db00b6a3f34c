"""TMotor (CubeMars) AK servo-mode CAN codec and the upstream velocity-mode control law.

Wire format (upstream's): extended 29-bit id ``node_id | packet << 8``; every multi-byte
payload is big-endian signed. Encoders round to nearest (ties away from zero) and **saturate** a
value that does not fit its integer field to the field's limit instead of letting it wrap, so a
huge command can never turn into a huge command of the opposite sign. NaN/inf raise
:class:`CodecError`.

The status frame the motor broadcasts by itself is matched by ``arbitration_id & 0xFF`` only, so
both the 11-bit id the SIL sends and an extended id with the node in the low byte are accepted.
"""

from __future__ import annotations

import math
import struct
from enum import IntEnum
from types import MappingProxyType
from typing import NamedTuple

from .conversions import (
    INT8_RANGE,
    INT16_RANGE,
    INT32_RANGE,
    require_finite,
    round_half_away,
    saturate,
    saturating_int,
)
from .frame import CanFrame, CodecError, make_frame, require_length

POLE_PAIRS = 21
ERPM_LIMIT = 100_000
FEEDBACK_LENGTH = 8
POSITION_COUNTS_PER_DEG = 10_000
CURRENT_COUNTS_PER_A = 1_000
DUTY_COUNTS_PER_UNIT = 100_000
SPEED_ERPM_PER_COUNT = 10
ACCEL_ERPM_S_PER_COUNT = 10
FEEDBACK_DEG_PER_COUNT = 0.1
FEEDBACK_ERPM_PER_COUNT = 10
FEEDBACK_A_PER_COUNT = 0.01

_INT32_BE = struct.Struct('>i')
_POS_SPD = struct.Struct('>ihh')
_FEEDBACK = struct.Struct('>hhhbB')


class TMotorPacket(IntEnum):
    """Servo-mode packet id (bits 8..15 of the extended CAN id)."""

    SET_DUTY = 0
    SET_CURRENT = 1
    SET_CURRENT_BRAKE = 2
    SET_RPM = 3
    SET_POS = 4
    SET_ORIGIN_HERE = 5
    SET_POS_SPD = 6


class OriginMode(IntEnum):
    """Payload byte of SET_ORIGIN_HERE."""

    TEMPORARY = 0
    PERMANENT = 1


ERROR_CODE_TEXT = MappingProxyType(
    {
        0: 'no fault',
        1: 'motor over-temperature',
        2: 'over-current',
        3: 'over-voltage',
        4: 'under-voltage',
        5: 'encoder fault',
        6: 'phase current unbalance',
    }
)
"""Meaning of the feedback frame's error byte."""


class TMotorFeedback(NamedTuple):
    """Decoded status broadcast of one AK motor.

    Attributes:
        node_id: CAN node id (low byte of the arbitration id).
        position_rad: Output-shaft motor angle [rad] (0.1 deg resolution on the wire).
        speed_erpm: Electrical speed [ERPM].
        current_a: Phase current [A], signed.
        temperature_c: Driver temperature [degC].
        error_code: Fault code, see :data:`ERROR_CODE_TEXT`.
    """

    node_id: int
    position_rad: float
    speed_erpm: int
    current_a: float
    temperature_c: int
    error_code: int

    @property
    def error_text(self) -> str:
        """Human-readable meaning of :attr:`error_code`."""
        return ERROR_CODE_TEXT.get(self.error_code, f'unknown error code {self.error_code}')


class TMotorCommand(NamedTuple):
    """A decoded servo-mode command; only the fields of its packet kind are set.

    Attributes:
        node_id: Addressed node.
        packet: Packet kind.
        erpm: SET_RPM speed [ERPM].
        position_rad: SET_POS / SET_POS_SPD target, output-shaft motor angle [rad].
        speed_erpm: SET_POS_SPD speed limit [ERPM].
        accel_erpm_s: SET_POS_SPD acceleration limit [ERPM/s].
        current_a: SET_CURRENT / SET_CURRENT_BRAKE current [A].
        duty: SET_DUTY duty cycle [fraction, -1..1].
        origin_mode: SET_ORIGIN_HERE mode.
    """

    node_id: int
    packet: TMotorPacket
    erpm: int | None = None
    position_rad: float | None = None
    speed_erpm: int | None = None
    accel_erpm_s: int | None = None
    current_a: float | None = None
    duty: float | None = None
    origin_mode: OriginMode | None = None


def servo_arbitration_id(node_id: int, packet: TMotorPacket) -> int:
    """Return the extended CAN id ``node_id | packet << 8``.

    Raises:
        CodecError: If ``node_id`` does not fit one byte.
    """
    if not 0 <= node_id <= 0xFF:
        raise CodecError(f'TMotor node id must be 0..255, got {node_id}')
    return node_id | (int(packet) << 8)


def _servo_frame(node_id: int, packet: TMotorPacket, payload: bytes) -> CanFrame:
    return make_frame(servo_arbitration_id(node_id, packet), payload, is_extended_id=True)


def _int32_frame(node_id: int, packet: TMotorPacket, scaled: float, what: str) -> CanFrame:
    return _servo_frame(node_id, packet, _INT32_BE.pack(saturating_int(scaled, INT32_RANGE, what)))


def encode_set_rpm(node_id: int, erpm: float) -> CanFrame:
    """Encode SET_RPM: int32 electrical RPM (saturated to int32)."""
    return _int32_frame(node_id, TMotorPacket.SET_RPM, erpm, 'erpm')


def encode_set_position(node_id: int, position_rad: float) -> CanFrame:
    """Encode SET_POS: int32 = output-shaft degrees x 10000 (saturated to int32).

    Args:
        node_id: Motor node id.
        position_rad: Output-shaft motor angle [rad].
    """
    scaled = math.degrees(require_finite(position_rad, 'position_rad')) * POSITION_COUNTS_PER_DEG
    return _int32_frame(node_id, TMotorPacket.SET_POS, scaled, 'position_rad')


def encode_set_position_speed(
    node_id: int, position_rad: float, speed_erpm: float, accel_erpm_s: float
) -> CanFrame:
    """Encode SET_POS_SPD: int32 deg x 10000, int16 speed / 10, int16 acceleration / 10.

    Each field saturates to its own integer range.

    Args:
        node_id: Motor node id.
        position_rad: Output-shaft motor angle [rad].
        speed_erpm: Speed limit [ERPM].
        accel_erpm_s: Acceleration limit [ERPM/s].
    """
    degrees = math.degrees(require_finite(position_rad, 'position_rad'))
    payload = _POS_SPD.pack(
        saturating_int(degrees * POSITION_COUNTS_PER_DEG, INT32_RANGE, 'position_rad'),
        saturating_int(speed_erpm / SPEED_ERPM_PER_COUNT, INT16_RANGE, 'speed_erpm'),
        saturating_int(accel_erpm_s / ACCEL_ERPM_S_PER_COUNT, INT16_RANGE, 'accel_erpm_s'),
    )
    return _servo_frame(node_id, TMotorPacket.SET_POS_SPD, payload)


def encode_set_origin(node_id: int, mode: OriginMode = OriginMode.TEMPORARY) -> CanFrame:
    """Encode SET_ORIGIN_HERE (1 byte): the current position becomes 0 (upstream: temporary)."""
    return _servo_frame(node_id, TMotorPacket.SET_ORIGIN_HERE, bytes((OriginMode(mode),)))


def encode_current_brake(node_id: int, current_a: float) -> CanFrame:
    """Encode SET_CURRENT_BRAKE: int32 = current [A] x 1000 (saturated to int32)."""
    scaled = require_finite(current_a, 'current_a') * CURRENT_COUNTS_PER_A
    return _int32_frame(node_id, TMotorPacket.SET_CURRENT_BRAKE, scaled, 'current_a')


def encode_set_current(node_id: int, current_a: float) -> CanFrame:
    """Encode SET_CURRENT: int32 = current [A] x 1000 (saturated to int32)."""
    scaled = require_finite(current_a, 'current_a') * CURRENT_COUNTS_PER_A
    return _int32_frame(node_id, TMotorPacket.SET_CURRENT, scaled, 'current_a')


def encode_set_duty(node_id: int, duty: float) -> CanFrame:
    """Encode SET_DUTY: int32 = duty [fraction] x 100000 (CubeMars scale; saturated to int32)."""
    scaled = require_finite(duty, 'duty') * DUTY_COUNTS_PER_UNIT
    return _int32_frame(node_id, TMotorPacket.SET_DUTY, scaled, 'duty')


def decode_servo_command(frame: CanFrame) -> TMotorCommand:
    """Decode a servo-mode command frame (what a simulated motor receives).

    Raises:
        CodecError: If the id is not extended, the packet id is unknown, or the payload is short.
    """
    if not frame.is_extended_id:
        raise CodecError(f'frame {frame.describe_id()} is not a servo-mode command (standard id)')
    node_id = frame.arbitration_id & 0xFF
    packet_number = (frame.arbitration_id >> 8) & 0xFF
    try:
        packet = TMotorPacket(packet_number)
    except ValueError:
        raise CodecError(
            f'frame {frame.describe_id()}: unknown servo packet id {packet_number}'
        ) from None
    what = f'TMotor {packet.name}'
    if packet is TMotorPacket.SET_ORIGIN_HERE:
        require_length(frame, 1, what)
        try:
            mode = OriginMode(frame.data[0])
        except ValueError:
            raise CodecError(
                f'{what} frame {frame.describe_id()}: unknown origin mode {frame.data[0]}'
            ) from None
        return TMotorCommand(node_id, packet, origin_mode=mode)
    if packet is TMotorPacket.SET_POS_SPD:
        require_length(frame, _POS_SPD.size, what)
        position, speed, accel = _POS_SPD.unpack_from(frame.data)
        return TMotorCommand(
            node_id,
            packet,
            position_rad=math.radians(position / POSITION_COUNTS_PER_DEG),
            speed_erpm=speed * SPEED_ERPM_PER_COUNT,
            accel_erpm_s=accel * ACCEL_ERPM_S_PER_COUNT,
        )
    require_length(frame, _INT32_BE.size, what)
    (value,) = _INT32_BE.unpack_from(frame.data)
    if packet is TMotorPacket.SET_RPM:
        return TMotorCommand(node_id, packet, erpm=value)
    if packet is TMotorPacket.SET_POS:
        return TMotorCommand(
            node_id, packet, position_rad=math.radians(value / POSITION_COUNTS_PER_DEG)
        )
    if packet is TMotorPacket.SET_DUTY:
        return TMotorCommand(node_id, packet, duty=value / DUTY_COUNTS_PER_UNIT)
    return TMotorCommand(node_id, packet, current_a=value / CURRENT_COUNTS_PER_A)


def decode_feedback(frame: CanFrame) -> TMotorFeedback:
    """Decode the 8-byte status frame a motor broadcasts.

    Layout: int16 position x 0.1 deg, int16 speed x 10 ERPM, int16 current x 0.01 A,
    int8 temperature degC, uint8 error code (all big-endian).

    Raises:
        CodecError: If the payload is not exactly 8 bytes.
    """
    require_length(frame, FEEDBACK_LENGTH, 'TMotor feedback', exact=True)
    position, speed, current, temperature, error_code = _FEEDBACK.unpack(frame.data)
    return TMotorFeedback(
        node_id=frame.arbitration_id & 0xFF,
        position_rad=math.radians(position * FEEDBACK_DEG_PER_COUNT),
        speed_erpm=speed * FEEDBACK_ERPM_PER_COUNT,
        current_a=current * FEEDBACK_A_PER_COUNT,
        temperature_c=temperature,
        error_code=error_code,
    )


def encode_feedback(
    node_id: int,
    position_rad: float,
    speed_erpm: float = 0.0,
    current_a: float = 0.0,
    temperature_c: float = 25.0,
    error_code: int = 0,
    *,
    is_extended_id: bool = False,
) -> CanFrame:
    """Encode a status frame as a motor would send it (for simulators and tests).

    Every field saturates to its integer range. The default standard id equals the node id,
    like the upstream SIL.

    Args:
        node_id: Node id (0..255).
        position_rad: Output-shaft motor angle [rad].
        speed_erpm: Electrical speed [ERPM].
        current_a: Phase current [A].
        temperature_c: Temperature [degC].
        error_code: Fault code 0..255, see :data:`ERROR_CODE_TEXT`.
        is_extended_id: Send with a 29-bit id (node in the low byte) instead.

    Raises:
        CodecError: On a node id or error code out of range, or a non-finite value.
    """
    if not 0 <= node_id <= 0xFF:
        raise CodecError(f'TMotor node id must be 0..255, got {node_id}')
    if not 0 <= error_code <= 0xFF:
        raise CodecError(f'TMotor error code must be 0..255, got {error_code}')
    degrees = math.degrees(require_finite(position_rad, 'position_rad'))
    payload = _FEEDBACK.pack(
        saturating_int(degrees / FEEDBACK_DEG_PER_COUNT, INT16_RANGE, 'position_rad'),
        saturating_int(speed_erpm / FEEDBACK_ERPM_PER_COUNT, INT16_RANGE, 'speed_erpm'),
        saturating_int(current_a / FEEDBACK_A_PER_COUNT, INT16_RANGE, 'current_a'),
        saturating_int(temperature_c, INT8_RANGE, 'temperature_c'),
        error_code,
    )
    return make_frame(node_id, payload, is_extended_id=is_extended_id)


def joint_velocity_to_erpm(
    joint_velocity_rad_s: float, direction_sign: int, gear_ratio: float, pole_pairs: int
) -> float:
    """Return the feed-forward ERPM for a joint velocity: ``dir*qd*pole_pairs*gear*60/(2*pi)``."""
    return direction_sign * joint_velocity_rad_s * pole_pairs * gear_ratio * 60.0 / (2.0 * math.pi)


def erpm_to_joint_velocity_rad_s(
    erpm: float, direction_sign: int, gear_ratio: float, pole_pairs: int
) -> float:
    """Inverse of :func:`joint_velocity_to_erpm` [rad/s of the joint]."""
    return direction_sign * erpm * 2.0 * math.pi / (pole_pairs * gear_ratio * 60.0)


def velocity_law_erpm(
    target_motor_rad: float,
    target_joint_velocity_rad_s: float,
    measured_motor_rad: float,
    direction_sign: int,
    gear_ratio: float,
    pole_pairs: int,
    control_gain: float,
    erpm_limit: int = ERPM_LIMIT,
) -> int:
    """Upstream velocity-mode law for every TMotor, evaluated each 5 ms.

    ``erpm = dir*qd*pole_pairs*gear*60/(2*pi) + control_gain*(p* - p)``, clamped to
    ``+-erpm_limit`` and rounded to the nearest integer (ties away from zero).

    Args:
        target_motor_rad: Target motor angle p* [rad].
        target_joint_velocity_rad_s: Target joint velocity qd [rad/s] (feed-forward).
        measured_motor_rad: Measured motor angle p [rad].
        direction_sign: Joint direction sign, +1 or -1.
        gear_ratio: Gear reduction (e.g. 9 or 10).
        pole_pairs: Pole pairs used for ERPM (upstream 21).
        control_gain: Position gain [ERPM per motor rad].
        erpm_limit: Symmetric output clamp [ERPM].

    Returns:
        Command for :func:`encode_set_rpm` [ERPM].

    Raises:
        ValueError: If any input is NaN or infinite.
    """
    feed_forward = joint_velocity_to_erpm(
        target_joint_velocity_rad_s, direction_sign, gear_ratio, pole_pairs
    )
    erpm = feed_forward + control_gain * (target_motor_rad - measured_motor_rad)
    require_finite(erpm, 'velocity law ERPM')
    return round_half_away(saturate(erpm, -erpm_limit, erpm_limit))
