"""An independent decoder of what a controller sends, written from the protocol documents
alone (it imports none of the project's codecs): the CubeMars AK servo-mode CAN protocol,
CANopen CiA 301 (NMT, SYNC, expedited SDO) with Phil's EPOS4 RPDOs (CiA 402 objects, the
layout of ``codecs/epos4_pdo_layout.py`` as documented in FACTS 4) and ROBOTIS Dynamixel
Protocol 2.0 (framing, byte stuffing, CRC-16, instructions).

Every command becomes a :class:`WireCommand` of raw wire values (counts, ERPM, ticks): what
is on the wire, before any scaling. Anything it does not understand is a :class:`WireError`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple


class WireError(ValueError):
    """Bytes that are not a command of these protocols (the message says why)."""


class WireCommand(NamedTuple):
    """One command as the wire carries it.

    Attributes:
        device: ``tmotor``, ``epos4``, ``dynamixel`` or ``can`` (NMT and SYNC).
        node: CAN node id, Dynamixel id, or the node an NMT frame addresses (0 = all).
        kind: e.g. ``set_rpm``, ``target_position``, ``sdo_download``, ``profile_goal``.
        values: Raw values in wire order (signed where the field is).
    """

    device: str
    node: int
    kind: str
    values: tuple[int, ...] = ()


# --- CubeMars AK servo mode: extended id = packet << 8 | node, big-endian payloads -------------
_TMOTOR_INT32 = {0: 'set_duty', 1: 'set_current', 2: 'set_current_brake', 3: 'set_rpm',
                 4: 'set_position'}  # fmt: skip
_TMOTOR_ORIGIN, _TMOTOR_POSITION_SPEED = 5, 6

# --- CANopen: function code (id & 0x780) + node (id & 0x7F) ------------------------------------
_NMT_COMMANDS = {0x01, 0x02, 0x80, 0x81, 0x82}  # start, stop, pre-op, reset node, reset comm
_RPDOS = {0x200: ('controlword', '<H'), 0x300: ('target_position', '<i'),
          0x400: ('target_velocity', '<i'), 0x500: ('target_torque', '<h')}  # fmt: skip
_SDO_REQUEST = 0x600
_CCS_DOWNLOAD_SEGMENT, _CCS_DOWNLOAD, _CCS_UPLOAD = 0, 1, 2


def decode_can(can_id: int, extended: bool, data: bytes) -> WireCommand:
    """One CAN frame a controller sent.

    Raises:
        WireError: The frame is not a command of these protocols.
    """
    if extended:
        return _tmotor(can_id, data)
    if can_id == 0x000:
        if len(data) < 2 or data[0] not in _NMT_COMMANDS:
            raise WireError(f'NMT frame {data.hex()}: not [command, node]')
        return WireCommand('can', data[1], 'nmt', (data[0],))
    if can_id == 0x080:
        if data:
            raise WireError(f'SYNC with data {data.hex()} (this bus sends no SYNC counter)')
        return WireCommand('can', 0, 'sync')
    function, node = can_id & 0x780, can_id & 0x7F
    if not 1 <= node <= 127:
        raise WireError(f'id 0x{can_id:03X}: node {node} is not a CANopen node id')
    if function in _RPDOS:
        kind, layout = _RPDOS[function]
        size = struct.calcsize(layout)
        if len(data) < size:
            raise WireError(f'{kind} RPDO 0x{can_id:03X}: {len(data)} bytes, needs {size}')
        return WireCommand('epos4', node, kind, struct.unpack_from(layout, data))
    if function == _SDO_REQUEST:
        return _sdo_request(node, data)
    raise WireError(f'standard id 0x{can_id:03X} is no request of NMT, SYNC, RPDO or SDO')


def _tmotor(can_id: int, data: bytes) -> WireCommand:
    packet, node = (can_id >> 8) & 0xFF, can_id & 0xFF
    if can_id >> 16:
        raise WireError(f'extended id 0x{can_id:08X}: bits above the packet id are set')
    if packet in _TMOTOR_INT32:
        if len(data) < 4:
            raise WireError(f'TMotor packet {packet}: {len(data)} bytes, needs 4')
        return WireCommand('tmotor', node, _TMOTOR_INT32[packet], struct.unpack_from('>i', data))
    if packet == _TMOTOR_ORIGIN and len(data) >= 1:
        return WireCommand('tmotor', node, 'set_origin', (data[0],))
    if packet == _TMOTOR_POSITION_SPEED and len(data) >= 8:
        return WireCommand('tmotor', node, 'set_position_speed', struct.unpack_from('>ihh', data))
    raise WireError(f'TMotor packet {packet} with {len(data)} bytes is no servo-mode command')


def _sdo_request(node: int, data: bytes) -> WireCommand:
    if len(data) != 8:
        raise WireError(f'SDO request to node {node}: {len(data)} bytes (SDO frames carry 8)')
    command = data[0]
    index, subindex = int.from_bytes(data[1:3], 'little'), data[3]
    specifier = command >> 5
    if specifier == _CCS_DOWNLOAD_SEGMENT:
        # Outside a transfer the server answers with an abort: upstream's discovery probe.
        return WireCommand(
            'epos4', node, 'sdo_segment', (command, int.from_bytes(data[1:], 'little'))
        )
    if specifier == _CCS_UPLOAD:
        return WireCommand('epos4', node, 'sdo_upload', (index, subindex))
    expedited, size_indicated = bool(command & 0x02), bool(command & 0x01)
    if specifier != _CCS_DOWNLOAD or not expedited:
        raise WireError(f'SDO 0x{command:02X} to node {node}: not an expedited up- or download')
    size = 4 - ((command >> 2) & 0x03) if size_indicated else 0  # 0: the object's size
    value = int.from_bytes(data[4 : 4 + (size or 4)], 'little')
    return WireCommand('epos4', node, 'sdo_download', (index, subindex, value, size))


# --- ROBOTIS Protocol 2.0 --------------------------------------------------------------------
_HEADER = b'\xff\xff\xfd\x00'
_BROADCAST = 0xFE
_PING, _READ, _WRITE, _SYNC_READ, _SYNC_WRITE = 0x01, 0x02, 0x03, 0x82, 0x83
_PROFILE_ACCELERATION, _PROFILE_GOAL_LENGTH = 108, 12


def crc16(data: bytes) -> int:
    """Protocol 2.0's CRC-16: polynomial 0x8005, start 0, most significant bit first."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def split_serial(stream: bytes) -> tuple[list[tuple[int, int, bytes]], bytes]:
    """Complete instruction packets ``(id, instruction, unstuffed params)`` from a byte stream,
    and the bytes of a packet not yet complete.

    Raises:
        WireError: Bytes outside a packet, or a packet whose CRC or length is wrong.
    """
    packets, at = [], 0
    while at < len(stream):
        if not stream.startswith(_HEADER, at):
            if _HEADER.startswith(stream[at : at + len(_HEADER)]):
                break  # a header cut at the end of what was read
            raise WireError(f'bytes outside a packet: {stream[at : at + 16].hex()}')
        if len(stream) - at < 7:
            break
        length = int.from_bytes(stream[at + 5 : at + 7], 'little')
        end = at + 7 + length
        if length < 3:
            raise WireError(f'packet length {length} (instruction and CRC need 3)')
        if end > len(stream):
            break
        if crc16(stream[at : end - 2]) != int.from_bytes(stream[end - 2 : end], 'little'):
            raise WireError(f'packet with a wrong CRC: {stream[at:end].hex()}')
        params = stream[at + 8 : end - 2].replace(b'\xff\xff\xfd\xfd', b'\xff\xff\xfd')
        packets.append((stream[at + 4], stream[at + 7], params))
        at = end
    return packets, stream[at:]


def decode_dynamixel(dxl_id: int, instruction: int, params: bytes) -> list[WireCommand]:
    """The commands of one instruction packet (a sync read or write: one per servo).

    Raises:
        WireError: An instruction a controller does not send, or malformed parameters.
    """
    if instruction == _PING:
        return [WireCommand('dynamixel', dxl_id, 'ping')]
    if instruction == _WRITE and len(params) >= 3:  # address, then at least one byte
        address = int.from_bytes(params[:2], 'little')
        return [WireCommand('dynamixel', dxl_id, 'write', (address, *params[2:]))]
    if len(params) < 4 or instruction == _WRITE:
        raise WireError(f'instruction 0x{instruction:02X} to id {dxl_id}: {params.hex()}')
    address, length = struct.unpack_from('<HH', params)
    if instruction == _READ:
        return [WireCommand('dynamixel', dxl_id, 'read', (address, length))]
    if dxl_id != _BROADCAST:
        raise WireError(f'instruction 0x{instruction:02X} to id {dxl_id}, not broadcast')
    if instruction == _SYNC_READ:
        return [WireCommand('dynamixel', i, 'sync_read', (address, length)) for i in params[4:]]
    if instruction != _SYNC_WRITE:
        raise WireError(f'instruction 0x{instruction:02X} is not sent by a controller')
    records, stride = params[4:], 1 + length
    if length == 0 or len(records) % stride:
        raise WireError(f'sync write at {address}: records of {stride} bytes do not fit')
    commands = []
    for at in range(0, len(records), stride):
        servo, data = records[at], records[at + 1 : at + stride]
        if address == _PROFILE_ACCELERATION and length == _PROFILE_GOAL_LENGTH:
            commands.append(
                WireCommand('dynamixel', servo, 'profile_goal', struct.unpack('<iii', data))
            )
        else:
            commands.append(WireCommand('dynamixel', servo, 'sync_write', (address, *data)))
    return commands
