"""Dynamixel Protocol 2.0 packet codec (XM430 head servos), pure functions on ``bytes``.

Packet: ``FF FF FD 00 | ID | LEN_L LEN_H | INST | params | CRC_L CRC_H`` with
``LEN = len(stuffed INST + params) + 2``. Byte stuffing (an extra ``FD`` after every ``FF FF FD``)
applies to INST..params; the CRC-16 (polynomial 0x8005) covers header..last stuffed byte.
A status packet is the same with ``INST = 0x55`` followed by the error byte.

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
from .frame import CodecError

HEADER = b'\xff\xff\xfd\x00'
BROADCAST_ID = 0xFE
MAX_ID = 252
MAX_PACKET_LENGTH = 1024
MIN_PACKET_SIZE = 10
MIN_STATUS_PACKET_SIZE = 11
_PREFIX_SIZE = 7  # header + id + length field
_STUFFING_PATTERN = b'\xff\xff\xfd'
_STUFFING_BYTE = 0xFD
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


def _build_crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


CRC_TABLE = _build_crc_table()
"""CRC-16 table, polynomial 0x8005, MSB first (the table printed in the ROBOTIS manual)."""


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


def crc16(data: bytes, crc: int = 0) -> int:
    """Return the Protocol 2.0 CRC-16 of ``data`` (start value ``crc``)."""
    for byte in data:
        crc = ((crc << 8) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xFF]) & 0xFFFF
    return crc


def stuff(body: bytes) -> bytes:
    """Insert an extra 0xFD after every ``FF FF FD`` in INST..params."""
    if _STUFFING_PATTERN not in body:  # nearly every packet: no byte loop
        return bytes(body)
    stuffed = bytearray()
    for position, byte in enumerate(body):
        stuffed.append(byte)
        if byte == _STUFFING_BYTE and body[max(0, position - 2) : position] == b'\xff\xff':
            stuffed.append(_STUFFING_BYTE)
    return bytes(stuffed)


def unstuff(body: bytes) -> bytes:
    """Remove the 0xFD inserted by :func:`stuff`.

    Raises:
        CodecError: If an ``FF FF FD`` is not followed by the stuffing byte.
    """
    if _STUFFING_PATTERN not in body:
        return bytes(body)
    result = bytearray()
    position = 0
    while position < len(body):
        byte = body[position]
        result.append(byte)
        position += 1
        if byte == _STUFFING_BYTE and body[max(0, position - 3) : position] == _STUFFING_PATTERN:
            if position >= len(body) or body[position] != _STUFFING_BYTE:
                raise CodecError(f'unstuffed FF FF FD at offset {position - 3} of packet body')
            position += 1
    return bytes(result)


def _check_id(dxl_id: int, *, allow_broadcast: bool) -> None:
    if not (0 <= dxl_id <= MAX_ID or (allow_broadcast and dxl_id == BROADCAST_ID)):
        raise CodecError(f'Dynamixel id must be 0..{MAX_ID}, got {dxl_id}')


def build_packet(dxl_id: int, instruction: int, params: bytes = b'') -> bytes:
    """Build a complete, stuffed, CRC-protected packet.

    Args:
        dxl_id: Servo id 0..252 or 0xFE (broadcast).
        instruction: Instruction byte (:class:`Instruction`), 0x55 for a status packet.
        params: Unstuffed parameters (for a status packet: error byte + parameters).
    """
    _check_id(dxl_id, allow_broadcast=True)
    body = stuff(bytes((instruction,)) + bytes(params))
    length = len(body) + 2
    if length > MAX_PACKET_LENGTH:
        raise CodecError(f'Dynamixel packet for id {dxl_id} too long: LEN {length}')
    packet = HEADER + bytes((dxl_id,)) + length.to_bytes(2, 'little') + body
    return packet + crc16(packet).to_bytes(2, 'little')


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
        _check_id(dxl_id, allow_broadcast=False)
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
        _check_id(dxl_id, allow_broadcast=False)
        if len(data) != length:
            raise CodecError(
                f'sync write record for id {dxl_id} has {len(data)} bytes, expected {length}'
            )
        params.append(dxl_id)
        params += data
    return build_packet(BROADCAST_ID, Instruction.SYNC_WRITE, bytes(params))


def build_status_packet(dxl_id: int, error: int = 0, params: bytes = b'') -> bytes:
    """Build a status packet as a servo would send it (simulators, tests)."""
    _check_id(dxl_id, allow_broadcast=False)
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


def _split_validated(packet: bytes) -> tuple[int, bytes]:
    if len(packet) < MIN_PACKET_SIZE:
        raise CodecError(
            f'Dynamixel packet too short: {len(packet)} bytes, minimum {MIN_PACKET_SIZE}'
        )
    if packet[:4] != HEADER:
        raise CodecError(f'Dynamixel packet has a bad header {packet[:4].hex(" ")}')
    dxl_id = packet[4]
    length = int.from_bytes(packet[5:7], 'little')
    if length < 3 or len(packet) != _PREFIX_SIZE + length:
        raise CodecError(
            f'Dynamixel packet (id {dxl_id}): length field {length} does not '
            f'match {len(packet)} received bytes'
        )
    received_crc = int.from_bytes(packet[-2:], 'little')
    computed_crc = crc16(packet[:-2])
    if received_crc != computed_crc:
        raise CodecError(
            f'Dynamixel packet (id {dxl_id}): CRC mismatch, received '
            f'0x{received_crc:04X}, computed 0x{computed_crc:04X}'
        )
    return dxl_id, unstuff(packet[_PREFIX_SIZE:-2])


def parse_status_packet(packet: bytes) -> StatusPacket:
    """Validate header, length, CRC and instruction of one status packet and unstuff it.

    Raises:
        CodecError: Naming which check failed.
    """
    dxl_id, body = _split_validated(bytes(packet))
    if body[0] != Instruction.STATUS:
        raise CodecError(
            f'Dynamixel packet (id {dxl_id}) is not a status packet: instruction 0x{body[0]:02X}'
        )
    if len(body) < 2:
        raise CodecError(f'Dynamixel status packet (id {dxl_id}) has no error byte')
    return StatusPacket(dxl_id, body[1], body[2:])


def parse_instruction_packet(packet: bytes) -> InstructionPacket:
    """Validate and unstuff one instruction packet (rejects status packets)."""
    dxl_id, body = _split_validated(bytes(packet))
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


def _partial_header_length(tail: bytes) -> int:
    for size in (3, 2, 1):
        if tail.endswith(HEADER[:size]):
            return size
    return 0


def split_packets(buffer: bytes, max_length: int = MAX_PACKET_LENGTH) -> tuple[list[bytes], bytes]:
    """Cut complete CRC-valid packets out of a byte stream, resynchronising on garbage.

    Bytes before a header, and candidates whose length field is impossible or whose CRC fails,
    are dropped one byte at a time so a real header inside them is still found.

    Args:
        buffer: Received bytes (possibly starting or ending mid-packet).
        max_length: Largest LEN field considered plausible.

    Returns:
        (complete raw packets in order, bytes to keep for the next call).
    """
    buffer = bytes(buffer)
    packets: list[bytes] = []
    position = 0
    while True:
        start = buffer.find(HEADER, position)
        if start < 0:
            tail = buffer[position:]
            return packets, tail[len(tail) - _partial_header_length(tail) :]
        if len(buffer) - start < _PREFIX_SIZE:
            return packets, buffer[start:]
        length = int.from_bytes(buffer[start + 5 : start + 7], 'little')
        end = start + _PREFIX_SIZE + length
        if not 3 <= length <= max_length:
            position = start + 1
            continue
        if end > len(buffer):
            return packets, buffer[start:]
        candidate = buffer[start:end]
        if crc16(candidate[:-2]) == int.from_bytes(candidate[-2:], 'little'):
            packets.append(candidate)
            position = end
        else:
            position = start + 1


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
                statuses.append(parse_status_packet(packet))
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
