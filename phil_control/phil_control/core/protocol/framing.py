"""Split a byte stream into command lines, with a bounded line length.

Lines end with `\\n`; a `\\r` before it is dropped, so `\\r\\n` works too. Several lines may come
in one chunk and one line may be split over many chunks. A line longer than the bound is
reported once, as soon as the bound is crossed, and its bytes are discarded up to the next
`\\n`: the framer never holds more than `max_line_bytes` bytes, whatever the peer sends.
Bytes after the last `\\n` are held until more data comes; `pending_bytes` says how many.

Upstream treated every `recv()` as one command; clients that write one command per `send()`
and end it with `\\n` (the reference client does) behave the same here.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Default bound of one line, bytes (terminator excluded).
DEFAULT_MAX_LINE_BYTES = 4096


@dataclass(frozen=True)
class FramedLine:
    """One complete line, without `\\n` and without a trailing `\\r`."""

    data: bytes


@dataclass(frozen=True)
class LineTooLong:
    """A line crossed the length bound; it is discarded up to its `\\n`.

    Attributes:
        limit_bytes: The bound that was crossed.
    """

    limit_bytes: int


class LineFramer:
    """Incremental line splitter for one connection (not thread-safe).

    Args:
        max_line_bytes: Longest accepted line, terminator excluded (a `\\r` before the `\\n`
            counts).

    Raises:
        ValueError: `max_line_bytes` is not positive.
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes <= 0:
            raise ValueError(f'max_line_bytes must be positive, got {max_line_bytes}')
        self._limit = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False

    @property
    def max_line_bytes(self) -> int:
        """The line length bound, bytes."""
        return self._limit

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line held (never more than `max_line_bytes`)."""
        return len(self._buffer)

    @property
    def discarding(self) -> bool:
        """True while the rest of an over-long line is being skipped."""
        return self._discarding

    def feed(self, data: bytes) -> list[FramedLine | LineTooLong]:
        """Add received bytes; return the lines completed and the over-long lines crossed."""
        events: list[FramedLine | LineTooLong] = []
        start = 0
        while True:
            end = data.find(b'\n', start)
            piece = data[start:] if end < 0 else data[start:end]
            if self._discarding:
                if end >= 0:
                    self._discarding = False
            elif len(self._buffer) + len(piece) > self._limit:
                self._buffer.clear()
                self._discarding = end < 0
                events.append(LineTooLong(self._limit))
            elif end >= 0:
                line = bytes(self._buffer) + piece
                self._buffer.clear()
                events.append(FramedLine(line[:-1] if line.endswith(b'\r') else line))
            else:
                self._buffer += piece
            if end < 0:
                return events
            start = end + 1

    def reset(self) -> None:
        """Drop any unfinished line."""
        self._buffer.clear()
        self._discarding = False
