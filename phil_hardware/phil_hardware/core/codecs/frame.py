"""Transport-neutral CAN frame type and the one error type every codec raises."""

from __future__ import annotations

from typing import NamedTuple

STANDARD_ID_MAX = 0x7FF
EXTENDED_ID_MAX = 0x1FFF_FFFF
CLASSIC_CAN_MAX_DLC = 8


class CodecError(ValueError):
    """A frame or packet could not be encoded or decoded.

    The message always names the frame (id) or packet and what was wrong with it.
    """


class CanFrame(NamedTuple):
    """One classic CAN data frame, immutable and free of any bus library.

    Attributes:
        arbitration_id: 11-bit (standard) or 29-bit (extended) identifier.
        data: Payload, 0 to 8 bytes; its length is the DLC.
        is_extended_id: True for a 29-bit identifier.
    """

    arbitration_id: int
    data: bytes
    is_extended_id: bool = False

    @property
    def dlc(self) -> int:
        """Number of payload bytes."""
        return len(self.data)

    def describe_id(self) -> str:
        """Return the identifier as hex text, 8 digits when extended, 3 digits when standard."""
        return format_can_id(self.arbitration_id, self.is_extended_id)


def format_can_id(arbitration_id: int, is_extended_id: bool) -> str:
    """Return a CAN identifier as hex text for error messages and logs.

    Args:
        arbitration_id: The identifier.
        is_extended_id: True for a 29-bit identifier (printed with 8 hex digits).

    Returns:
        For example ``'0x00000304'`` (extended) or ``'0x607'`` (standard).
    """
    return f'0x{arbitration_id:08X}' if is_extended_id else f'0x{arbitration_id:03X}'


def make_frame(
    arbitration_id: int, data: bytes | bytearray, is_extended_id: bool = False
) -> CanFrame:
    """Build a validated :class:`CanFrame`.

    Args:
        arbitration_id: Identifier; must fit 11 bits (standard) or 29 bits (extended).
        data: Payload of at most 8 bytes.
        is_extended_id: True for a 29-bit identifier.

    Returns:
        The frame with ``data`` converted to immutable ``bytes``.

    Raises:
        CodecError: If the identifier does not fit or the payload is longer than 8 bytes.
    """
    id_max = EXTENDED_ID_MAX if is_extended_id else STANDARD_ID_MAX
    if not 0 <= arbitration_id <= id_max:
        raise CodecError(
            f'CAN id {arbitration_id:#x} does not fit a '
            f'{"29" if is_extended_id else "11"}-bit identifier'
        )
    if len(data) > CLASSIC_CAN_MAX_DLC:
        raise CodecError(
            f'frame {format_can_id(arbitration_id, is_extended_id)}: payload of {len(data)} '
            f'bytes exceeds the classic CAN maximum of {CLASSIC_CAN_MAX_DLC}'
        )
    return CanFrame(arbitration_id, bytes(data), is_extended_id)


def require_length(frame: CanFrame, expected: int, what: str, *, exact: bool = False) -> None:
    """Raise :class:`CodecError` if a frame's payload is too short (or not exactly sized).

    Args:
        frame: The frame to check.
        expected: Minimum (or, with ``exact``, the only accepted) payload length in bytes.
        what: Name of the frame kind for the message, e.g. ``'TMotor feedback'``.
        exact: Also reject longer payloads.

    Raises:
        CodecError: Naming the frame id, the kind and the lengths.
    """
    length = len(frame.data)
    if length < expected or (exact and length != expected):
        adjective = 'short' if length < expected else 'long'
        raise CodecError(
            f'{what} frame {frame.describe_id()} is too {adjective}: expected '
            f'{expected} data bytes, got {length}'
        )


def frame_bits(dlc: int, is_extended_id: bool) -> int:
    """Worst-case bits of one classic data frame on the wire, stuffing included.

    Unstuffed: 47 bits (standard) / 67 bits (extended) of overhead plus 8 per data byte; the
    stuffable part (SOF..CRC, 34 / 54 bits + data) can gain one bit per four, and the 3-bit
    interframe space is counted as bus time too.

    Args:
        dlc: Payload bytes (0..8).
        is_extended_id: 29-bit identifier.
    """
    stuffable = (54 if is_extended_id else 34) + 8 * dlc
    return stuffable + (stuffable - 1) // 4 + 13


# FRAME_BITS[is_extended_id][dlc]: frame_bits() as a table for hot paths.
FRAME_BITS = tuple(tuple(frame_bits(dlc, ext) for dlc in range(9)) for ext in (False, True))
