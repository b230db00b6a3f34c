"""Maxon EPOS4 over CANopen: the upstream PDO layout, the objects touched, scalings, CST law.

Everything generic lives in :mod:`.cia301` (NMT, SYNC, SDO) and :mod:`.cia402` (controlword,
modes of operation, power state) and is re-exported here, so ``epos4.encode_sdo_download``,
``epos4.cia402_state`` and friends work. Choices:

* NMT frames are the standard 2-byte frames; upstream pads them to DLC 8 (``pad_to_dlc8=True``).
* SDO downloads are expedited and size-indicated (0x2F/0x2B/0x27/0x23) by default; the upstream
  "size not indicated" form (0x22) is built with ``size_indicated=False``.
* The controlword RPDO uses DLC 2; upstream's DLC 8 with ``pad_to_dlc8=True`` (the drive maps
  16 bits either way). Which form the controller sends is the URDF's choice per drive
  (``CanopenFrameForm``).
* Scaled values are rounded to nearest (ties away from zero) and saturated to their field.
* Torques are in mNm; positions are output-shaft motor angles in rad.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple

from .cia301 import (
    NMT_COB_ID,
    SDO_ABORT_TEXT,
    SDO_REQUEST_BASE,
    SDO_RESPONSE_BASE,
    SYNC_COB_ID,
    NmtCommand,
    NmtMessage,
    SdoMessage,
    SdoService,
    check_node,
    decode_nmt,
    decode_sdo_request,
    decode_sdo_response,
    encode_nmt,
    encode_sdo_abort,
    encode_sdo_download,
    encode_sdo_download_ack,
    encode_sdo_probe,
    encode_sdo_upload_request,
    encode_sdo_upload_response,
    encode_sync,
    node_from_id,
)
from .cia402 import Cia402State, Controlword, ModeOfOperation, cia402_state
from .conversions import INT16_RANGE, INT32_RANGE, require_finite, saturate, saturating_int
from .frame import CanFrame, CodecError, make_frame, require_length

__all__ = [
    'NMT_COB_ID',
    'SDO_ABORT_TEXT',
    'SDO_REQUEST_BASE',
    'SDO_RESPONSE_BASE',
    'SYNC_COB_ID',
    'NmtCommand',
    'NmtMessage',
    'SdoMessage',
    'SdoService',
    'decode_nmt',
    'decode_sdo_request',
    'decode_sdo_response',
    'encode_nmt',
    'encode_sdo_abort',
    'encode_sdo_download',
    'encode_sdo_download_ack',
    'encode_sdo_probe',
    'encode_sdo_upload_request',
    'encode_sdo_upload_response',
    'encode_sync',
    'Cia402State',
    'Controlword',
    'ModeOfOperation',
    'cia402_state',
    'TPDO1_BASE',
    'TPDO2_BASE',
    'RPDO_CONTROLWORD_BASE',
    'RPDO_TARGET_POSITION_BASE',
    'RPDO_TARGET_VELOCITY_BASE',
    'RPDO_TARGET_TORQUE_BASE',
    'ENCODER_COUNTS_PER_MOTOR_REV',
    'DEFAULT_GEAR_RATIO',
    'RATED_TORQUE_MNM',
    'TORQUE_LIMIT_MNM',
    'HOMING_METHOD_CURRENT_POSITION',
    'CONTROL_PERIOD_S',
    'DERIVATIVE_FILTER_ALPHA',
    'WRIST_MASS_KG',
    'WRIST_LEVER_M',
    'GRAVITY_M_S2',
    'ObjectIndex',
    'Epos4Feedback',
    'Epos4Command',
    'counts_per_output_rev',
    'position_rad_to_counts',
    'counts_to_position_rad',
    'torque_mnm_to_permille',
    'permille_to_torque_mnm',
    'encode_controlword',
    'encode_target_position',
    'encode_target_torque',
    'decode_rpdo',
    'decode_feedback',
    'encode_feedback',
    'gravity_torque_mnm',
    'cst_torque_law',
]

TPDO1_BASE = 0x180
TPDO2_BASE = 0x280
RPDO_CONTROLWORD_BASE = 0x200
RPDO_TARGET_POSITION_BASE = 0x300
RPDO_TARGET_VELOCITY_BASE = 0x400
RPDO_TARGET_TORQUE_BASE = 0x500

ENCODER_COUNTS_PER_MOTOR_REV = 4096
DEFAULT_GEAR_RATIO = 35
RATED_TORQUE_MNM = 31.052
TORQUE_LIMIT_MNM = 293.8
HOMING_METHOD_CURRENT_POSITION = 37
CONTROL_PERIOD_S = 0.001
DERIVATIVE_FILTER_ALPHA = 0.2
WRIST_MASS_KG = 0.0845
WRIST_LEVER_M = 0.121
GRAVITY_M_S2 = 9.81

_TPDO = struct.Struct('<Hih')


class ObjectIndex(IntEnum):
    """Object dictionary indices the controller touches."""

    DEVICE_TYPE = 0x1000
    HOME_POSITION = 0x30B0
    HOME_OFFSET_MOVE_DISTANCE = 0x30B1
    HOMING_CURRENT_THRESHOLD = 0x30B2
    CONTROLWORD = 0x6040
    STATUSWORD = 0x6041
    MODES_OF_OPERATION = 0x6060
    MODES_OF_OPERATION_DISPLAY = 0x6061
    POSITION_ACTUAL_VALUE = 0x6064
    FOLLOWING_ERROR_WINDOW = 0x6065
    VELOCITY_ACTUAL_VALUE = 0x606C
    TARGET_TORQUE = 0x6071
    TORQUE_ACTUAL_VALUE = 0x6077
    TARGET_POSITION = 0x607A
    HOMING_METHOD = 0x6098
    TARGET_VELOCITY = 0x60FF
    POSITION_OFFSET = 0x60B0
    VELOCITY_OFFSET = 0x60B1
    TORQUE_OFFSET = 0x60B2


class Epos4Feedback(NamedTuple):
    """Decoded TPDO 0x180+n.

    Attributes:
        node_id: Node id.
        statusword: Full statusword from bytes 0-1 (LE).
        position_rad: Position actual, output-shaft motor angle [rad].
        torque_mnm: Torque actual [mNm].
    """

    node_id: int
    statusword: int
    position_rad: float
    torque_mnm: float

    @property
    def statusword_high_byte(self) -> int:
        """Byte 1 of the TPDO, the only status byte upstream keeps."""
        return self.statusword >> 8


class Epos4Command(NamedTuple):
    """A decoded RPDO; only the field of its kind is set."""

    node_id: int
    controlword: int | None = None
    position_rad: float | None = None
    torque_mnm: float | None = None


def counts_per_output_rev(gear_ratio: float = DEFAULT_GEAR_RATIO) -> float:
    """Encoder counts per output-shaft revolution: 4096 x gear (35 -> 143360)."""
    return ENCODER_COUNTS_PER_MOTOR_REV * gear_ratio


def position_rad_to_counts(position_rad: float, gear_ratio: float = DEFAULT_GEAR_RATIO) -> int:
    """Output-shaft angle [rad] -> int32 encoder counts (rounded, saturated).

    Raises:
        CodecError: ``position_rad`` is NaN or infinite (saturating_int's check: the scaled
            value is non-finite exactly then; the bus loop encodes four of these a tick).
    """
    scaled = position_rad * (ENCODER_COUNTS_PER_MOTOR_REV * gear_ratio)
    return saturating_int(scaled / (2.0 * math.pi), INT32_RANGE, 'position_rad')


def counts_to_position_rad(counts: int, gear_ratio: float = DEFAULT_GEAR_RATIO) -> float:
    """Encoder counts -> output-shaft angle [rad]."""
    return counts * 2.0 * math.pi / counts_per_output_rev(gear_ratio)


def torque_mnm_to_permille(
    torque_mnm: float,
    rated_torque_mnm: float = RATED_TORQUE_MNM,
    torque_limit_mnm: float = TORQUE_LIMIT_MNM,
) -> int:
    """Torque [mNm] -> per-mille of rated torque, saturated at +-limit first, then to int16."""
    limited = saturate(
        require_finite(torque_mnm, 'torque_mnm'), -torque_limit_mnm, torque_limit_mnm
    )
    return saturating_int(limited / rated_torque_mnm * 1000.0, INT16_RANGE, 'torque_mnm')


def permille_to_torque_mnm(permille: int, rated_torque_mnm: float = RATED_TORQUE_MNM) -> float:
    """Per-mille of rated torque -> torque [mNm]."""
    return permille * rated_torque_mnm / 1000.0


def encode_controlword(node_id: int, controlword: int, *, pad_to_dlc8: bool = False) -> CanFrame:
    """Encode RPDO 0x200+n: uint16 LE controlword, DLC 2 (upstream's zero-padded DLC 8 with
    ``pad_to_dlc8``; the drive applies the 16 mapped bits either way)."""
    check_node(node_id)
    if not 0 <= controlword <= 0xFFFF:
        raise CodecError(f'controlword must be 0..0xFFFF, got {controlword}')
    data = controlword.to_bytes(2, 'little')
    return make_frame(
        RPDO_CONTROLWORD_BASE + node_id, data.ljust(8, b'\0') if pad_to_dlc8 else data
    )


def encode_target_position(
    node_id: int, position_rad: float, gear_ratio: float = DEFAULT_GEAR_RATIO
) -> CanFrame:
    """Encode RPDO 0x300+n: int32 LE target position in encoder counts (CSP)."""
    check_node(node_id)  # the id then fits 11 bits and the payload is 4 bytes: a valid frame
    counts = position_rad_to_counts(position_rad, gear_ratio)
    return CanFrame(RPDO_TARGET_POSITION_BASE + node_id, counts.to_bytes(4, 'little', signed=True))


def encode_target_torque(
    node_id: int,
    torque_mnm: float,
    rated_torque_mnm: float = RATED_TORQUE_MNM,
    torque_limit_mnm: float = TORQUE_LIMIT_MNM,
) -> CanFrame:
    """Encode RPDO 0x500+n: int16 LE target torque in per-mille of rated torque (CST)."""
    check_node(node_id)
    permille = torque_mnm_to_permille(torque_mnm, rated_torque_mnm, torque_limit_mnm)
    return make_frame(
        RPDO_TARGET_TORQUE_BASE + node_id, permille.to_bytes(2, 'little', signed=True)
    )


def decode_rpdo(
    frame: CanFrame,
    gear_ratio: float = DEFAULT_GEAR_RATIO,
    rated_torque_mnm: float = RATED_TORQUE_MNM,
) -> Epos4Command:
    """Decode a controlword, target position or target torque RPDO (what a drive receives)."""
    base = frame.arbitration_id & 0x780
    if base == RPDO_CONTROLWORD_BASE:
        node_id = node_from_id(frame, base, 'controlword RPDO')
        require_length(frame, 2, 'controlword RPDO')
        return Epos4Command(node_id, controlword=int.from_bytes(frame.data[:2], 'little'))
    if base == RPDO_TARGET_POSITION_BASE:
        node_id = node_from_id(frame, base, 'target position RPDO')
        require_length(frame, 4, 'target position RPDO')
        counts = int.from_bytes(frame.data[:4], 'little', signed=True)
        return Epos4Command(node_id, position_rad=counts_to_position_rad(counts, gear_ratio))
    if base == RPDO_TARGET_TORQUE_BASE:
        node_id = node_from_id(frame, base, 'target torque RPDO')
        require_length(frame, 2, 'target torque RPDO')
        permille = int.from_bytes(frame.data[:2], 'little', signed=True)
        return Epos4Command(node_id, torque_mnm=permille_to_torque_mnm(permille, rated_torque_mnm))
    raise CodecError(f'frame {frame.describe_id()} is not a known EPOS4 RPDO')


def decode_feedback(
    frame: CanFrame,
    gear_ratio: float = DEFAULT_GEAR_RATIO,
    rated_torque_mnm: float = RATED_TORQUE_MNM,
) -> Epos4Feedback:
    """Decode TPDO 0x180+n: statusword u16, position int32 counts, torque int16 per-mille (LE).

    Raises:
        CodecError: On a wrong id or fewer than 8 data bytes.
    """
    node_id = node_from_id(frame, TPDO1_BASE, 'EPOS4 TPDO')
    require_length(frame, _TPDO.size, 'EPOS4 TPDO')
    statusword, counts, permille = _TPDO.unpack_from(frame.data)
    return Epos4Feedback(
        node_id,
        statusword,
        counts_to_position_rad(counts, gear_ratio),
        permille_to_torque_mnm(permille, rated_torque_mnm),
    )


def encode_feedback(
    node_id: int,
    statusword: int,
    position_rad: float,
    torque_mnm: float = 0.0,
    gear_ratio: float = DEFAULT_GEAR_RATIO,
    rated_torque_mnm: float = RATED_TORQUE_MNM,
) -> CanFrame:
    """Encode TPDO 0x180+n as a drive would send it (simulators, tests); values saturate."""
    check_node(node_id)
    if not 0 <= statusword <= 0xFFFF:
        raise CodecError(f'statusword must be 0..0xFFFF, got {statusword}')
    permille = saturating_int(torque_mnm / rated_torque_mnm * 1000.0, INT16_RANGE, 'torque_mnm')
    payload = _TPDO.pack(statusword, position_rad_to_counts(position_rad, gear_ratio), permille)
    return make_frame(TPDO1_BASE + node_id, payload)


def gravity_torque_mnm(
    arm_joint_angles_rad: Iterable[float],
    mass_kg: float = WRIST_MASS_KG,
    lever_m: float = WRIST_LEVER_M,
    gear_ratio: float = DEFAULT_GEAR_RATIO,
    gravity_m_s2: float = GRAVITY_M_S2,
) -> float:
    """Wrist gravity term at the motor [mNm]: ``m*g*l*sin(sum of angles)/gear*1000``.

    Args:
        arm_joint_angles_rad: Measured joint angles of shoulder_2, elbow and wrist of one arm.
        mass_kg: Stick + hand mass.
        lever_m: Distance of the mass from the wrist axis.
        gear_ratio: Wrist gear reduction.
        gravity_m_s2: Gravitational acceleration.
    """
    moment_nm = mass_kg * gravity_m_s2 * lever_m * math.sin(sum(arm_joint_angles_rad))
    return moment_nm / gear_ratio * 1000.0


def cst_torque_law(
    error_rad: float,
    previous_error_rad: float,
    previous_filtered_derivative_rad_s: float,
    kp: float,
    kd: float,
    gravity_mnm: float,
    dt_s: float = CONTROL_PERIOD_S,
    filter_alpha: float = DERIVATIVE_FILTER_ALPHA,
) -> tuple[float, float]:
    """Upstream wrist CST law (evaluated every 1 ms), unsaturated.

    ``e_dot = (e - e_prev)/dt``; ``f = alpha*e_dot + (1-alpha)*f_prev``;
    ``tau = kp*e + kd*f - gravity``.

    Args:
        error_rad: e = target - measured motor angle [rad].
        previous_error_rad: e of the previous evaluation [rad].
        previous_filtered_derivative_rad_s: Filtered derivative of the previous evaluation.
        kp: Proportional gain [mNm/rad].
        kd: Derivative gain [mNm s/rad].
        gravity_mnm: Gravity term from :func:`gravity_torque_mnm` [mNm].
        dt_s: Evaluation period [s].
        filter_alpha: Low-pass weight of the new derivative sample.

    Returns:
        (torque command [mNm], new filtered derivative [rad/s]).
    """
    error_derivative = (error_rad - previous_error_rad) / dt_s
    filtered = filter_alpha * error_derivative + (1.0 - filter_alpha) * (
        previous_filtered_derivative_rad_s
    )
    return kp * error_rad + kd * filtered - gravity_mnm, filtered
