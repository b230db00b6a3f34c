"""Dynamixel Protocol 2.0 packet framing, pure functions on ``bytes``: the header, byte
stuffing, the CRC-16, building one packet and cutting packets out of a byte stream.

Packet: ``FF FF FD 00 | ID | LEN_L LEN_H | INST | params | CRC_L CRC_H`` with
``LEN = len(stuffed INST + params) + 2``. Byte stuffing (an extra ``FD`` after every ``FF FF FD``)
applies to INST..params; the CRC-16 (polynomial 0x8005) covers header..last stuffed byte.
What the instruction and its parameters mean is :mod:`.dynamixel`'s business.
"""

from __future__ import annotations

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


def check_id(dxl_id: int, *, allow_broadcast: bool) -> None:
    """Raise :class:`CodecError` unless ``dxl_id`` is 0..252 (or 0xFE, when allowed)."""
    if not (0 <= dxl_id <= MAX_ID or (allow_broadcast and dxl_id == BROADCAST_ID)):
        raise CodecError(f'Dynamixel id must be 0..{MAX_ID}, got {dxl_id}')


def build_packet(dxl_id: int, instruction: int, params: bytes = b'') -> bytes:
    """Build a complete, stuffed, CRC-protected packet.

    Args:
        dxl_id: Servo id 0..252 or 0xFE (broadcast).
        instruction: Instruction byte (:class:`~.dynamixel.Instruction`), 0x55 for a status
            packet.
        params: Unstuffed parameters (for a status packet: error byte + parameters).
    """
    check_id(dxl_id, allow_broadcast=True)
    body = stuff(bytes((instruction,)) + bytes(params))
    length = len(body) + 2
    if length > MAX_PACKET_LENGTH:
        raise CodecError(f'Dynamixel packet for id {dxl_id} too long: LEN {length}')
    packet = HEADER + bytes((dxl_id,)) + length.to_bytes(2, 'little') + body
    return packet + crc16(packet).to_bytes(2, 'little')


def open_packet(packet: bytes, *, crc_checked: bool = False) -> tuple[int, bytes]:
    """Check header, length field and CRC of one packet; return (id, unstuffed INST..params).

    Args:
        packet: One whole packet.
        crc_checked: The CRC was checked already (a packet :func:`split_packets` cut out).

    Raises:
        CodecError: Naming which check failed.
    """
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
    computed_crc = received_crc if crc_checked else crc16(packet[:-2])
    if received_crc != computed_crc:
        raise CodecError(
            f'Dynamixel packet (id {dxl_id}): CRC mismatch, received '
            f'0x{received_crc:04X}, computed 0x{computed_crc:04X}'
        )
    return dxl_id, unstuff(packet[_PREFIX_SIZE:-2])


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
