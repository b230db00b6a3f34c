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
        max_lines_per_s: Lines of one client handled per second at most (a second's worth may
            come at once); faster ones wait their turn, unread (TCP flow control holds the
            client back), never refused. 0 = no limit.
        max_commands_per_s: Commands of all clients together passed to the handler per second
            at most (same rules). The command path runs real-time, and a command costs it about
            6 ms of CPU (bridge and planner, measured on the 2-core VM, refused ones too): at
            100 a second a flood kept the simulated drives from running for a second
            (FEEDBACK_TIMEOUT); 20 a second leaves them room and is far above what a brain or a
            person sends.
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
    max_lines_per_s: float = 100.0
    max_commands_per_s: float = 20.0

    def __post_init__(self) -> None:
        for label in (
            'max_line_bytes',
            'max_output_bytes',
            'max_clients',
            'read_chunk_bytes',
            'backlog',
        ):
            if getattr(self, label) <= 0:
                raise ValueError(f'{label} must be positive, got {getattr(self, label)}')
        if not (math.isfinite(self.idle_timeout_s) and self.idle_timeout_s >= 0.0):
            raise ValueError(f'idle_timeout_s must be >= 0 (0 = never), got {self.idle_timeout_s}')
        if not 0 <= self.port <= 65535:
            raise ValueError(f'port must be in 0..65535, got {self.port}')
        for label in ('max_lines_per_s', 'max_commands_per_s'):
            value = getattr(self, label)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'{label} must be >= 0 (0 = no limit), got {value}')


class TokenBucket:
    """``rate_per_s`` tokens a second, a second's worth saved at most; 0 = never empty."""

    def __init__(self, rate_per_s: float, now_s: float) -> None:
        self.rate_per_s = rate_per_s
        self._tokens = max(rate_per_s, 1.0)
        self._at_s = now_s

    def wait_s(self, now_s: float) -> float:
        """How long until a token is there (0: now)."""
        if not self.rate_per_s:
            return 0.0
        self._tokens = min(
            max(self.rate_per_s, 1.0), self._tokens + (now_s - self._at_s) * self.rate_per_s
        )
        self._at_s = now_s
        return 0.0 if self._tokens >= 1.0 else (1.0 - self._tokens) / self.rate_per_s

    def take(self, now_s: float) -> None:
        """Use one token (after ``wait_s`` said 0)."""
        if self.rate_per_s:
            self.wait_s(now_s)
            self._tokens -= 1.0


def wire_text(text: str) -> str:
    """Make free text safe inside one reply field: no `|`, no line breaks, bounded length."""
    clean = text.replace('|', '/').replace('\r', ' ').replace('\n', ' ')
    return clean if len(clean) <= _MAX_REASON_CHARS else clean[:_MAX_REASON_CHARS] + '...'
