"""Dynamixel Protocol 2.0 messages (XM430 head servos), pure functions on ``bytes``: the
instructions, the control table, the packets the controller sends and the status packets it
reads, and the tick <-> angle convention.

The framing (header, byte stuffing, CRC-16, cutting a stream into packets) is in
:mod:`.dynamixel_packet` (``build_packet``, ``split_packets`` and ``BROADCAST_ID``, which the
messages use, are importable from here too). A status packet is a packet with ``INST = 0x55``
whose first parameter is the error byte.

Tick convention of this robot (sign inverted relative to the usual DXL one):
``tick = round(2048 - motor_deg * 4096 / 360)`` with ``motor_deg`` clamped to +-180.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import NamedTuple

from .conversions import INT32_RANGE, require_finite, round_half_away, saturate
from .dynamixel_packet import (
    BROADCAST_ID,
    MAX_PACKET_LENGTH,
    build_packet,
    check_id,
    open_packet,
    split_packets,
)
from .frame import CodecError

_ADDRESS_LENGTH = struct.Struct('<HH')
_PROFILE_GOAL = struct.Struct('<iii')
_INT32 = struct.Struct('<i')

TICKS_PER_REV = 4096
CENTER_TICK = 2048
MOTOR_DEG_LIMIT = 180.0


class Instruction(IntEnum):
    """Protocol 2.0 instruction byte."""

    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    FACTORY_RESET = 0x06
    REBOOT = 0x08
    CLEAR = 0x10
    STATUS = 0x55
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


class ControlTable(IntEnum):
    """XM430 control-table addresses used by the controller."""

    TORQUE_ENABLE = 64
    HARDWARE_ERROR_STATUS = 70
    PROFILE_ACCELERATION = 108
    PROFILE_VELOCITY = 112
    GOAL_POSITION = 116
    PRESENT_CURRENT = 126
    PRESENT_POSITION = 132


PROFILE_GOAL_LENGTH = _PROFILE_GOAL.size
PRESENT_POSITION_LENGTH = 4
ERROR_ALERT_BIT = 0x80
STATUS_ERROR_TEXT = MappingProxyType(
    {
        0: 'no error',
        1: 'result fail',
        2: 'instruction error',
        3: 'CRC error',
        4: 'data range error',
        5: 'data length error',
        6: 'data limit error',
        7: 'access error',
    }
)
"""Meaning of the low 7 bits of a status packet's error byte (bit 7 is the hardware alert)."""


class StatusPacket(NamedTuple):
    """A validated status packet: servo id, error byte, parameters (unstuffed)."""

    dxl_id: int
    error: int
    params: bytes


class InstructionPacket(NamedTuple):
    """A validated instruction packet (what a simulated servo receives)."""

    dxl_id: int
    instruction: int
    params: bytes


class ProfileGoal(NamedTuple):
    """One 12-byte sync-write record at address 108 (all raw control-table units)."""

    profile_acceleration: int
    profile_velocity: int
    goal_position_tick: int


def build_ping(dxl_id: int) -> bytes:
    """Build PING."""
    return build_packet(dxl_id, Instruction.PING)


def build_read(dxl_id: int, address: int, length: int) -> bytes:
    """Build READ of ``length`` bytes at ``address``."""
    return build_packet(dxl_id, Instruction.READ, _ADDRESS_LENGTH.pack(address, length))


def build_write(dxl_id: int, address: int, data: bytes) -> bytes:
    """Build WRITE of ``data`` (little-endian control-table bytes) at ``address``."""
    return build_packet(dxl_id, Instruction.WRITE, address.to_bytes(2, 'little') + bytes(data))


def build_sync_read(address: int, length: int, dxl_ids: Iterable[int]) -> bytes:
    """Build SYNC_READ (broadcast); each listed servo answers with one status packet."""
    ids = bytes(dxl_ids)
    for dxl_id in ids:
        check_id(dxl_id, allow_broadcast=False)
    return build_packet(
        BROADCAST_ID, Instruction.SYNC_READ, _ADDRESS_LENGTH.pack(address, length) + ids
    )


def build_sync_write(address: int, length: int, records: Mapping[int, bytes]) -> bytes:
    """Build SYNC_WRITE (broadcast, no reply) of one ``length``-byte record per servo id.

    Raises:
        CodecError: If a record is not exactly ``length`` bytes or an id is invalid.
    """
    params = bytearray(_ADDRESS_LENGTH.pack(address, length))
    for dxl_id, data in records.items():
        check_id(dxl_id, allow_broadcast=False)
        if len(data) != length:
            raise CodecError(
                f'sync write record for id {dxl_id} has {len(data)} bytes, expected {length}'
            )
        params.append(dxl_id)
        params += data
    return build_packet(BROADCAST_ID, Instruction.SYNC_WRITE, bytes(params))


def build_status_packet(dxl_id: int, error: int = 0, params: bytes = b'') -> bytes:
    """Build a status packet as a servo would send it (simulators, tests)."""
    check_id(dxl_id, allow_broadcast=False)
    if not 0 <= error <= 0xFF:
        raise CodecError(f'status error byte must be 0..255, got {error}')
    return build_packet(dxl_id, Instruction.STATUS, bytes((error,)) + bytes(params))


def build_profile_goal_sync_write(goals: Mapping[int, ProfileGoal]) -> bytes:
    """Build the per-cycle SYNC_WRITE of (acceleration, velocity, goal tick) at address 108."""
    records = {}
    for dxl_id, goal in goals.items():
        for value in goal:
            if not INT32_RANGE[0] <= value <= INT32_RANGE[1]:
                raise CodecError(f'sync write value {value} for id {dxl_id} exceeds int32')
        records[dxl_id] = _PROFILE_GOAL.pack(*goal)
    return build_sync_write(ControlTable.PROFILE_ACCELERATION, PROFILE_GOAL_LENGTH, records)


def build_present_position_sync_read(dxl_ids: Iterable[int]) -> bytes:
    """Build the SYNC_READ of Present Position (address 132, 4 bytes)."""
    return build_sync_read(ControlTable.PRESENT_POSITION, PRESENT_POSITION_LENGTH, dxl_ids)


def parse_status_packet(packet: bytes, *, crc_checked: bool = False) -> StatusPacket:
    """Validate header, length, CRC and instruction of one status packet and unstuff it.

    Args:
        packet: One whole packet.
        crc_checked: The CRC was checked already (a packet :func:`split_packets` cut out).

    Raises:
        CodecError: Naming which check failed.
    """
    dxl_id, body = open_packet(bytes(packet), crc_checked=crc_checked)
    if body[0] != Instruction.STATUS:
        raise CodecError(
            f'Dynamixel packet (id {dxl_id}) is not a status packet: instruction 0x{body[0]:02X}'
        )
    if len(body) < 2:
        raise CodecError(f'Dynamixel status packet (id {dxl_id}) has no error byte')
    return StatusPacket(dxl_id, body[1], body[2:])


def parse_instruction_packet(packet: bytes) -> InstructionPacket:
    """Validate and unstuff one instruction packet (rejects status packets)."""
    dxl_id, body = open_packet(bytes(packet))
    if body[0] == Instruction.STATUS:
        raise CodecError(f'Dynamixel packet (id {dxl_id}) is a status packet, not an instruction')
    return InstructionPacket(dxl_id, body[0], body[1:])


def parse_sync_write_params(params: bytes) -> tuple[int, int, dict[int, bytes]]:
    """Split SYNC_WRITE params into (address, record length, {id: record})."""
    if len(params) < _ADDRESS_LENGTH.size:
        raise CodecError(f'SYNC_WRITE params too short: {len(params)} bytes')
    address, length = _ADDRESS_LENGTH.unpack_from(params)
    records_bytes = params[_ADDRESS_LENGTH.size :]
    if len(records_bytes) % (length + 1):
        raise CodecError(
            f'SYNC_WRITE: {len(records_bytes)} record bytes is not a multiple of {length + 1}'
        )
    step = length + 1
    records = {
        records_bytes[i]: bytes(records_bytes[i + 1 : i + step])
        for i in range(0, len(records_bytes), step)
    }
    return address, length, records


def parse_address_length_params(params: bytes) -> tuple[int, int, bytes]:
    """Split READ / SYNC_READ params into (address, length, trailing bytes e.g. the ids)."""
    if len(params) < _ADDRESS_LENGTH.size:
        raise CodecError(f'address/length params too short: {len(params)} bytes')
    address, length = _ADDRESS_LENGTH.unpack_from(params)
    return address, length, bytes(params[_ADDRESS_LENGTH.size :])


def decode_present_position(status: StatusPacket) -> int:
    """Return the signed Present Position tick from a 4-byte read's status packet."""
    if len(status.params) != PRESENT_POSITION_LENGTH:
        raise CodecError(
            f'Dynamixel id {status.dxl_id}: present position needs 4 params, '
            f'got {len(status.params)}'
        )
    return _INT32.unpack(status.params)[0]


def describe_status_error(error: int) -> str:
    """Return text for a status error byte, e.g. 'hardware alert; data range error'."""
    parts = ['hardware alert'] if error & ERROR_ALERT_BIT else []
    code = error & ~ERROR_ALERT_BIT
    if code or not parts:
        parts.append(STATUS_ERROR_TEXT.get(code, f'unknown error {code}'))
    return '; '.join(parts)


class StatusPacketReader:
    """Incremental status-packet parser for a serial stream (no I/O; feed it bytes).

    Attributes:
        discarded_bytes: Bytes dropped as garbage so far.
        ignored_packets: Valid non-status packets skipped (e.g. an echoed instruction).
    """

    def __init__(self, max_length: int = MAX_PACKET_LENGTH) -> None:
        """Create an empty reader accepting LEN fields up to ``max_length``."""
        self._buffer = b''
        self._max_length = max_length
        self.discarded_bytes = 0
        self.ignored_packets = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes held back waiting for the rest of a packet."""
        return len(self._buffer)

    def clear(self) -> None:
        """Drop any partial packet (e.g. after a timeout)."""
        self.discarded_bytes += len(self._buffer)
        self._buffer = b''

    def feed(self, data: bytes) -> list[StatusPacket]:
        """Add received bytes; return every status packet completed by them, in order."""
        buffer = self._buffer + bytes(data)
        packets, self._buffer = split_packets(buffer, self._max_length)
        self.discarded_bytes += len(buffer) - len(self._buffer) - sum(map(len, packets))
        statuses = []
        for packet in packets:
            try:
                statuses.append(parse_status_packet(packet, crc_checked=True))
            except CodecError:
                self.ignored_packets += 1
        return statuses


def motor_deg_to_tick(motor_deg: float) -> int:
    """Motor angle [deg] -> goal tick, ``round(2048 - deg*4096/360)``, deg clamped to +-180."""
    clamped = saturate(require_finite(motor_deg, 'motor_deg'), -MOTOR_DEG_LIMIT, MOTOR_DEG_LIMIT)
    return round_half_away(CENTER_TICK - clamped * TICKS_PER_REV / 360.0)


def tick_to_motor_deg(tick: int) -> float:
    """Tick -> motor angle [deg], ``(2048 - tick)*360/4096``."""
    return (CENTER_TICK - tick) * 360.0 / TICKS_PER_REV


def motor_rad_to_tick(motor_rad: float) -> int:
    """Motor angle [rad] -> tick (see :func:`motor_deg_to_tick`)."""
    return motor_deg_to_tick(math.degrees(require_finite(motor_rad, 'motor_rad')))


def tick_to_motor_rad(tick: int) -> float:
    """Tick -> motor angle [rad]."""
    return math.radians(tick_to_motor_deg(tick))
