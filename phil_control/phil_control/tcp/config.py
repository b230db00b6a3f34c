"""The TCP server's configuration and the reply-field helper (no asyncio, no ROS)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from phil_control.core.protocol.framing import DEFAULT_MAX_LINE_BYTES

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 1951
DEFAULT_IDLE_TIMEOUT_S = 3600.0
_MAX_REASON_CHARS = 1000


@dataclass(frozen=True)
class TcpServerConfig:
    """Where the server listens and its per-client bounds.

    Attributes:
        host: Address to bind ('127.0.0.1', '::1', '0.0.0.0' to serve other machines).
        port: TCP port; 0 picks a free one (tests), see `TcpServer.address`.
        max_line_bytes: Longest accepted line.
        max_output_bytes: Unsent reply bytes a client may hold before it is dropped.
        max_clients: Connections served at once; a further one is admitted and the client idle
            longest is evicted.
        idle_timeout_s: A client that sent nothing (and has nothing being handled) for this
            long is closed, s; 0 = never. Long by default: a brain may wait minutes for a person.
        read_chunk_bytes: Bytes read per receive call (and so the most unhandled input read
            ahead per client).
        backlog: Listen backlog.
        socket_send_buffer_bytes: SO_SNDBUF of accepted sockets; None = system default.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_output_bytes: int = 64 * 1024
    max_clients: int = 16
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    read_chunk_bytes: int = 1024
    backlog: int = 16
    socket_send_buffer_bytes: int | None = None

    def __post_init__(self) -> None:
        for label in ('max_line_bytes', 'max_output_bytes', 'max_clients', 'read_chunk_bytes',
                      'backlog'):
            if getattr(self, label) <= 0:
                raise ValueError(f'{label} must be positive, got {getattr(self, label)}')
        if not (math.isfinite(self.idle_timeout_s) and self.idle_timeout_s >= 0.0):
            raise ValueError(f'idle_timeout_s must be >= 0 (0 = never), got '
                             f'{self.idle_timeout_s}')
        if not 0 <= self.port <= 65535:
            raise ValueError(f'port must be in 0..65535, got {self.port}')


def wire_text(text: str) -> str:
    """Make free text safe inside one reply field: no `|`, no line breaks, bounded length."""
    clean = text.replace('|', '/').replace('\r', ' ').replace('\n', ' ')
    return clean if len(clean) <= _MAX_REASON_CHARS else clean[:_MAX_REASON_CHARS] + '...'
