"""Generic CANopen (CiA 301) frames: NMT, SYNC and expedited SDO requests and responses.

Choices: NMT frames are the standard 2-byte frames (upstream pads them to DLC 8, available with
``pad_to_dlc8=True``). SDO downloads are expedited and size-indicated (0x2F/0x2B/0x27/0x23) by
default; upstream's "size not indicated" form (0x22) is built with ``size_indicated=False``.
Segmented and block transfers are not supported (every object Phil touches fits 4 bytes).
"""

from __future__ import annotations

import struct
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import NamedTuple

from .frame import CanFrame, CodecError, make_frame, require_length

NMT_COB_ID = 0x000
SYNC_COB_ID = 0x080
SDO_RESPONSE_BASE = 0x580
SDO_REQUEST_BASE = 0x600
SDO_LENGTH = 8

_SDO = struct.Struct('<BHB4s')
_ABORT_CODE = struct.Struct('<I')


class NmtCommand(IntEnum):
    """NMT command specifier (byte 0 of COB 0x000)."""

    START_REMOTE_NODE = 0x01
    STOP_REMOTE_NODE = 0x02
    ENTER_PRE_OPERATIONAL = 0x80
    RESET_NODE = 0x81
    RESET_COMMUNICATION = 0x82


SDO_ABORT_TEXT = MappingProxyType(
    {
        0x05030000: 'Toggle bit not alternated',
        0x05040000: 'SDO protocol timed out',
        0x05040001: 'Client/server command specifier not valid or unknown',
        0x05040005: 'Out of memory',
        0x06010000: 'Unsupported access to an object',
        0x06010001: 'Attempt to read a write only object',
        0x06010002: 'Attempt to write a read only object',
        0x06020000: 'Object does not exist in the object dictionary',
        0x06040041: 'Object cannot be mapped to the PDO',
        0x06040042: 'Number and length of objects to be mapped would exceed PDO length',
        0x06040043: 'General parameter incompatibility reason',
        0x06040047: 'General internal incompatibility in the device',
        0x06060000: 'Access failed due to a hardware error',
        0x06070010: 'Data type does not match, length of service parameter does not match',
        0x06070012: 'Data type does not match, length of service parameter too high',
        0x06070013: 'Data type does not match, length of service parameter too low',
        0x06090011: 'Sub-index does not exist',
        0x06090030: 'Value range of parameter exceeded',
        0x06090031: 'Value of parameter written too high',
        0x06090032: 'Value of parameter written too low',
        0x06090036: 'Maximum value is less than minimum value',
        0x060A0023: 'Resource not available: SDO connection',
        0x08000000: 'General error',
        0x08000020: 'Data cannot be transferred or stored to the application',
        0x08000021: 'Data cannot be transferred or stored because of local control',
        0x08000022: 'Data cannot be transferred or stored because of the present device state',
        0x08000023: 'Object dictionary dynamic generation fails or no object dictionary present',
    }
)
"""CiA 301 SDO abort codes -> text."""


class SdoService(Enum):
    """What an SDO frame does."""

    DOWNLOAD = 'download'
    UPLOAD = 'upload'
    ABORT = 'abort'


class SdoMessage(NamedTuple):
    """A decoded expedited SDO request or response.

    Attributes:
        node_id: Node id (1..127).
        service: Download (write), upload (read) or abort.
        index: Object index.
        subindex: Object sub-index.
        data: Transferred bytes (empty for an upload request, a download ack and an abort).
        abort_code: CiA 301 abort code of an abort, else None.
    """

    node_id: int
    service: SdoService
    index: int
    subindex: int
    data: bytes = b''
    abort_code: int | None = None

    def value(self, signed: bool = False) -> int:
        """Return :attr:`data` as a little-endian integer."""
        return int.from_bytes(self.data, 'little', signed=signed)

    @property
    def abort_text(self) -> str:
        """Text of :attr:`abort_code` ('' when this is not an abort)."""
        if self.abort_code is None:
            return ''
        return SDO_ABORT_TEXT.get(self.abort_code, f'unknown abort code 0x{self.abort_code:08X}')


class NmtMessage(NamedTuple):
    """A decoded NMT frame; node id 0 addresses all nodes."""

    command: NmtCommand
    node_id: int


def check_node(node_id: int) -> None:
    """Raise :class:`CodecError` unless ``node_id`` is a CANopen node id (1..127)."""
    if not 1 <= node_id <= 127:
        raise CodecError(f'CANopen node id must be 1..127, got {node_id}')


def node_from_id(frame: CanFrame, base: int, what: str) -> int:
    """Return the node id of a ``base + n`` frame, or raise :class:`CodecError` naming ``what``."""
    node_id = frame.arbitration_id - base
    if frame.is_extended_id or not 1 <= node_id <= 127:
        raise CodecError(
            f'frame {frame.describe_id()} is not a valid {what} frame: expected id '
            f'{base:#05x}+n with n in 1..127'
        )
    return node_id


def encode_nmt(command: NmtCommand, node_id: int, *, pad_to_dlc8: bool = False) -> CanFrame:
    """Encode an NMT frame ``[command, node_id]`` on COB 0x000 (node 0 = all nodes).

    Args:
        command: NMT command.
        node_id: Target node 1..127, or 0 for broadcast.
        pad_to_dlc8: Pad with zeros to DLC 8 like upstream; default is the standard DLC 2.
    """
    if not 0 <= node_id <= 127:
        raise CodecError(f'NMT node id must be 0..127, got {node_id}')
    data = bytes((NmtCommand(command), node_id))
    return make_frame(NMT_COB_ID, data.ljust(8, b'\0') if pad_to_dlc8 else data)


def decode_nmt(frame: CanFrame) -> NmtMessage:
    """Decode an NMT frame (DLC 2, or upstream's zero-padded DLC 8)."""
    if frame.arbitration_id != NMT_COB_ID or frame.is_extended_id:
        raise CodecError(f'frame {frame.describe_id()} is not an NMT frame (id 0x000)')
    require_length(frame, 2, 'NMT')
    try:
        command = NmtCommand(frame.data[0])
    except ValueError:
        raise CodecError(
            f'NMT frame {frame.describe_id()}: unknown command specifier {frame.data[0]:#04x}'
        ) from None
    return NmtMessage(command, frame.data[1])


def encode_sync() -> CanFrame:
    """Encode the SYNC frame: id 0x080, no data."""
    return CanFrame(SYNC_COB_ID, b'')


def _sdo_frame(
    base: int, node_id: int, command: int, index: int, subindex: int, payload: bytes = b''
) -> CanFrame:
    check_node(node_id)
    if not 0 <= index <= 0xFFFF or not 0 <= subindex <= 0xFF:
        raise CodecError(f'SDO object {index:#x}/{subindex:#x} out of range')
    return make_frame(base + node_id, _SDO.pack(command, index, subindex, payload))


def encode_sdo_download(
    node_id: int, index: int, subindex: int, value: int, size: int, *, size_indicated: bool = True
) -> CanFrame:
    """Encode an expedited SDO download (write) request on 0x600+n.

    Args:
        node_id: Node id 1..127.
        index: Object index, e.g. ``ObjectIndex.MODES_OF_OPERATION``.
        subindex: Object sub-index.
        value: Integer to write; signed or unsigned, must fit ``size`` bytes.
        size: Object size in bytes (1..4); the value is little-endian, zero-padded to 4.
        size_indicated: True gives command 0x2F/0x2B/0x27/0x23 by size; False gives the
            upstream form 0x22 (size not indicated).

    Raises:
        CodecError: If ``size`` is not 1..4 or ``value`` does not fit it.
    """
    if size not in (1, 2, 3, 4):
        raise CodecError(f'expedited SDO size must be 1..4 bytes, got {size}')
    if not -(1 << (8 * size - 1)) <= value < (1 << (8 * size)):
        raise CodecError(f'SDO value {value} for {index:#06x}/{subindex} does not fit {size} B')
    payload = (value & ((1 << (8 * size)) - 1)).to_bytes(size, 'little')
    command = 0x23 | ((4 - size) << 2) if size_indicated else 0x22
    return _sdo_frame(SDO_REQUEST_BASE, node_id, command, index, subindex, payload)


def encode_sdo_upload_request(node_id: int, index: int, subindex: int) -> CanFrame:
    """Encode an SDO upload (read) request, command 0x40, on 0x600+n."""
    return _sdo_frame(SDO_REQUEST_BASE, node_id, 0x40, index, subindex)


def encode_sdo_probe(node_id: int) -> CanFrame:
    """Encode upstream's discovery frame: 0x600+n with 8 zero bytes; any 0x580+n reply counts."""
    check_node(node_id)
    return make_frame(SDO_REQUEST_BASE + node_id, bytes(8))


def encode_sdo_download_ack(node_id: int, index: int, subindex: int) -> CanFrame:
    """Encode the server's download acknowledge (0x60) on 0x580+n."""
    return _sdo_frame(SDO_RESPONSE_BASE, node_id, 0x60, index, subindex)


def encode_sdo_upload_response(
    node_id: int, index: int, subindex: int, data: bytes, *, size_indicated: bool = True
) -> CanFrame:
    """Encode an expedited upload response (0x4F/0x4B/0x47/0x43, or 0x42 for 4 bytes)."""
    if not 1 <= len(data) <= 4 or (not size_indicated and len(data) != 4):
        raise CodecError(f'expedited upload of {len(data)} bytes is not possible')
    command = 0x43 | ((4 - len(data)) << 2) if size_indicated else 0x42
    return _sdo_frame(SDO_RESPONSE_BASE, node_id, command, index, subindex, bytes(data))


def encode_sdo_abort(
    node_id: int, index: int, subindex: int, abort_code: int, *, from_server: bool = True
) -> CanFrame:
    """Encode an SDO abort (0x80) with a CiA 301 abort code, by the server (0x580+n) or client."""
    if not 0 <= abort_code <= 0xFFFF_FFFF:
        raise CodecError(f'SDO abort code must fit 32 bits, got {abort_code:#x}')
    base = SDO_RESPONSE_BASE if from_server else SDO_REQUEST_BASE
    return _sdo_frame(base, node_id, 0x80, index, subindex, _ABORT_CODE.pack(abort_code))


# Command specifier (top 3 bits of the command byte) -> service, per direction.
_RESPONSE_SERVICES = {3: SdoService.DOWNLOAD, 2: SdoService.UPLOAD, 4: SdoService.ABORT}
_REQUEST_SERVICES = {1: SdoService.DOWNLOAD, 2: SdoService.UPLOAD, 4: SdoService.ABORT}


def _expedited_data(frame: CanFrame, command: int) -> bytes:
    if not command & 0x02:
        raise CodecError(
            f'SDO frame {frame.describe_id()}: segmented transfer '
            f'(command {command:#04x}) is not supported'
        )
    size = 4 - ((command >> 2) & 0x03) if command & 0x01 else 4
    return frame.data[4 : 4 + size]


def _decode_sdo(
    frame: CanFrame,
    base: int,
    what: str,
    services: dict[int, SdoService],
    data_service: SdoService,
) -> SdoMessage:
    node_id = node_from_id(frame, base, what)
    require_length(frame, SDO_LENGTH, what)
    command, index, subindex, _ = _SDO.unpack_from(frame.data)
    service = services.get(command >> 5)
    if service is None:
        raise CodecError(
            f'{what} frame {frame.describe_id()}: unsupported command byte {command:#04x}'
        )
    if service is SdoService.ABORT:
        (code,) = _ABORT_CODE.unpack_from(frame.data, 4)
        return SdoMessage(node_id, service, index, subindex, abort_code=code)
    data = _expedited_data(frame, command) if service is data_service else b''
    return SdoMessage(node_id, service, index, subindex, data)


def decode_sdo_response(frame: CanFrame) -> SdoMessage:
    """Decode a server response on 0x580+n: download ack, expedited upload, or abort.

    Raises:
        CodecError: On a wrong id, short frame, segmented or unknown command.
    """
    return _decode_sdo(
        frame, SDO_RESPONSE_BASE, 'SDO response', _RESPONSE_SERVICES, SdoService.UPLOAD
    )


def decode_sdo_request(frame: CanFrame) -> SdoMessage:
    """Decode a client request on 0x600+n: expedited download, upload request, or abort."""
    return _decode_sdo(
        frame, SDO_REQUEST_BASE, 'SDO request', _REQUEST_SERVICES, SdoService.DOWNLOAD
    )
