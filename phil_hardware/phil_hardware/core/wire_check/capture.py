"""A wire capture: every CAN frame and serial byte block a controller sent, one line each.

CAN lines are candump's log format (``candump -l``), so a capture taken on the robot with
``candump -l can0 can1 can2 can3`` reads as well::

    (1700000000.123456) can3 307#39E30000        standard id: 3 hex digits
    (1700000000.123502) can1 00000303#000003E8   extended id: 8 hex digits

Serial lines name a serial bus and carry the bytes as they were read, in hex without ``#``
(a packet may span two lines)::

    (1700000000.124001) dxl FFFFFD00FE0B00834C000C00...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, TextIO


class CaptureError(ValueError):
    """A capture line that is neither a CAN frame nor a serial block (names file and line)."""


class CapturedCan(NamedTuple):
    time_s: float
    bus: str
    can_id: int
    extended: bool
    data: bytes


class CapturedSerial(NamedTuple):
    time_s: float
    bus: str
    data: bytes


def can_line(time_s: float, bus: str, can_id: int, extended: bool, data: bytes) -> str:
    """One CAN frame in candump's log format (with its newline)."""
    identifier = f'{can_id:08X}' if extended else f'{can_id:03X}'
    return f'({time_s:.6f}) {bus} {identifier}#{data.hex().upper()}\n'


def serial_line(time_s: float, bus: str, data: bytes) -> str:
    """One block of serial bytes (with its newline)."""
    return f'({time_s:.6f}) {bus} {data.hex().upper()}\n'


def parse_line(line: str, where: str = '') -> CapturedCan | CapturedSerial:
    """One capture line.

    Raises:
        CaptureError: Naming ``where`` and what is wrong.
    """
    words = line.split()
    try:
        if len(words) != 3 or not (words[0].startswith('(') and words[0].endswith(')')):
            raise ValueError('expected "(seconds) bus ID#DATA" or "(seconds) bus HEX"')
        time_s = float(words[0][1:-1])
        identifier, hash_mark, payload = words[2].partition('#')
        if not hash_mark:
            return CapturedSerial(time_s, words[1], bytes.fromhex(identifier))
        if len(identifier) not in (3, 8) or payload.startswith(('#', 'R')):
            raise ValueError('only classic CAN data frames (3 or 8 hex digit ids) are read')
        data = bytes.fromhex(payload)
        if len(data) > 8:
            raise ValueError(f'{len(data)} data bytes (classic CAN carries at most 8)')
        return CapturedCan(time_s, words[1], int(identifier, 16), len(identifier) == 8, data)
    except ValueError as error:
        raise CaptureError(f'{where}: {error}: {line.strip()!r}') from None


def read_capture(path: Path) -> Iterator[CapturedCan | CapturedSerial]:
    """Every line of a capture file, in order (blank lines skipped).

    Raises:
        CaptureError: On the first line that cannot be read.
        OSError: The file cannot be opened.
    """
    with path.open(encoding='ascii', errors='replace') as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield parse_line(line, f'{path}:{number}')


class CaptureWriter:
    """Appends frames and serial blocks to a text stream (buffered; ``close`` flushes)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def can(self, time_s: float, bus: str, frames: Iterable[tuple[int, bytes, bool]]) -> None:
        """Frames (``CanFrame``s or ``(id, data, extended)``) on ``bus`` at ``time_s``."""
        for can_id, data, extended in frames:
            self._stream.write(can_line(time_s, bus, can_id, extended, data))

    def serial(self, time_s: float, bus: str, data: bytes) -> None:
        if data:
            self._stream.write(serial_line(time_s, bus, data))

    def close(self) -> None:
        self._stream.close()
