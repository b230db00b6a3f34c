"""Helpers of the TCP server tests (no tests here): a recording handler, a line client, a server.

Every socket talks to 127.0.0.1 or ::1 on an ephemeral port and has a timeout, so a broken server
fails a test instead of hanging it. Waiting is always for an event (a reply line, a counter),
never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from phil_control.core.protocol import Command, ProtocolVocabulary, format_status
from phil_control.tcp import HandlerReply, TcpServer, TcpServerConfig
from phil_description.core import default_robot_model

MODEL = default_robot_model()
VOCABULARY = ProtocolVocabulary.from_robot_model(MODEL, look_joints=('head_yaw', 'head_pitch'))
TIMEOUT_S = 10.0
STATUS_LINE = format_status('IDLE', MODEL.poses['ready'], 1.0)
_OPEN_CLIENTS: list[LineClient] = []


class RecordingHandler:
    """Accepts everything except what `reject` names; records every call."""

    def __init__(self, reject: dict[str, str] | None = None, status: str = STATUS_LINE):
        self.calls: list[tuple[Command, int]] = []
        self.reject = reject or {}
        self.status = status
        self.status_calls = 0
        self._lock = threading.Lock()

    def handle(self, command: Command, client_id: int) -> HandlerReply:
        with self._lock:
            self.calls.append((command, client_id))
        reason = self.reject.get(command.opcode.value)
        return HandlerReply(False, reason) if reason else HandlerReply(True)

    def status_line(self) -> str:
        self.status_calls += 1
        return self.status

    def commands(self) -> list[Command]:
        with self._lock:
            return [command for command, _ in self.calls]


class GatedHandler(RecordingHandler):
    """Holds each command of the clients in `gated` until the test lets it through, like a
    planner slow to answer; `passes(n)` lets n more through, `open()` all from then on."""

    def __init__(self, gated: set[int] | None = None):
        super().__init__()
        self.gated = gated
        self._gate = threading.Semaphore(0)
        self._open = threading.Event()

    def handle(self, command: Command, client_id: int) -> HandlerReply:
        reply = super().handle(command, client_id)
        if self.gated is None or client_id in self.gated:
            deadline = time.monotonic() + TIMEOUT_S  # a failed test must not hang the pool
            while not self._open.is_set() and not self._gate.acquire(timeout=0.01):
                if time.monotonic() > deadline:
                    break
        return reply

    def passes(self, count: int) -> None:
        self._gate.release(count)

    def open(self) -> None:
        self._open.set()

    def calls_of(self, client_id: int) -> list[Command]:
        with self._lock:
            return [command for command, caller in self.calls if caller == client_id]


class LineClient:
    """A blocking client that reads whole reply lines."""

    def __init__(self, address: tuple[str, int], **socket_options: int):
        family = socket.AF_INET6 if ':' in address[0] else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        _OPEN_CLIENTS.append(self)
        for option, value in socket_options.items():
            self.sock.setsockopt(socket.SOL_SOCKET, getattr(socket, option), value)
        self.sock.settimeout(TIMEOUT_S)
        self.sock.connect(address)
        self._buffer = b''

    def send(self, text: str | bytes) -> None:
        self.sock.sendall(text.encode() if isinstance(text, str) else text)

    def line(self) -> str:
        while b'\n' not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f'closed with {self._buffer!r} unread')
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b'\n')
        return line.decode()

    def lines(self, count: int) -> list[str]:
        return [self.line() for _ in range(count)]

    def status(self) -> str:
        self.send('GET_STATUS\n')
        return self.line()

    def ack(self) -> None:
        self.send('PROTOCOL|2\n')
        assert self.line() == 'OK|PROTOCOL'

    def nothing_within(self, seconds: float) -> bool:
        """No complete line arrives within ``seconds`` (what does arrive stays buffered)."""
        if b'\n' in self._buffer:
            return False
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(TIMEOUT_S)
        self._buffer += chunk
        return b'\n' not in self._buffer and bool(chunk)

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(65536) == b''
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def wait_until(predicate, what: str, timeout_s: float = TIMEOUT_S) -> None:
    """Poll an event (bounded); fail with `what` if it never happens."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.005)


@contextlib.contextmanager
def running_server(
    handler=None, host: str = '127.0.0.1', log=None, pace_clock=time.monotonic, **config
):
    """A started server on an ephemeral port; stopped (and checked stopped) afterwards. Its
    input rates are not limited unless a test says so (``max_lines_per_s``,
    ``max_commands_per_s``): floods here test fairness and bounds, not pacing."""
    handler = handler or RecordingHandler()
    config = {'max_lines_per_s': 0.0, 'max_commands_per_s': 0.0, **config}
    server = TcpServer(
        handler,
        VOCABULARY,
        TcpServerConfig(host=host, port=0, **config),
        command_log=log,
        pace_clock=pace_clock,
    )
    server.start()
    try:
        yield server, handler
    finally:
        server.stop()
        while _OPEN_CLIENTS:
            _OPEN_CLIENTS.pop().close()
