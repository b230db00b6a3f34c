"""What the TCP server holds for one client: its stream, line framer, mode and input state."""

from __future__ import annotations

import asyncio
from collections import deque

from phil_control.core.protocol.framing import FramedLine, LineFramer, LineTooLong
from phil_control.tcp.config import TokenBucket


class Connection:
    """One client of the server (see the reading loop in :mod:`phil_control.tcp.clients`)."""

    def __init__(
        self, client_id: int, writer: asyncio.StreamWriter, max_line_bytes: int, now_s: float
    ):
        self.client_id = client_id
        self.writer = writer
        self.framer = LineFramer(max_line_bytes)
        self.ack = False
        self.closing = False
        self.close_reason = ''
        # Lines read but not handled yet; the next chunk is read only once this is empty.
        self.unhandled: deque[FramedLine | LineTooLong] = deque()
        self.busy = False  # a line of it is being handled
        self.handling: asyncio.Future | None = None  # the handler call in flight
        self.last_active_s = now_s  # loop time it last sent something or had a line handled
        self.lines: TokenBucket | None = None  # its max_lines_per_s
