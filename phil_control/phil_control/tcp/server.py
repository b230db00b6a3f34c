"""The TCP command server (port 1951) speaking the brain's protocol, ROS-free.

Compatible with upstream clients: `OPCODE|arg|...\\n` lines, no reply to commands, `GET_STATUS`
answered at once with the `STATUS|...` line. Improvements over upstream:

* Loopback by default (`127.0.0.1`), several clients at once, real line framing (pipelined
  commands, commands split over packets, `\\n` or `\\r\\n`), lines bounded to
  `max_line_bytes` (longer ones are discarded up to the next newline).
* `PROTOCOL|2` switches a connection to acknowledged mode: every non-blank line then gets exactly
  one reply line: `STATUS|...` for GET_STATUS, `OK|<OPCODE>[|<note>]` when the parser and the
  handler accepted it (the note says e.g. that a speed was clamped), `ERR|<OPCODE>|<reason>`
  otherwise (`-` as opcode when the line had none or was too long). `PROTOCOL|1` switches back.
* QUIT/Q: after the handler has decided (and, in acknowledged mode, the reply is written) the
  connection is closed; other clients keep being served until `stop()` (upstream also stopped
  accepting new clients). `stop()` lets the commands being handled be answered first (bounded
  by `_DRAIN_TIMEOUT_S`): the QUIT that ended the graph gets its reply.
* Bad input never stops the server: invalid lines are answered (acknowledged mode) or logged,
  never passed to the handler; handler, status and log callbacks that raise are contained.
* Slow clients cannot block others: one asyncio loop in its own thread, bounded input and a
  bounded output buffer per client; a client whose unsent replies exceed `max_output_bytes`
  (it does not read) is dropped.
* Fast clients cannot either: clients are served in turn, one line at a time; a client's
  commands are handled one after the other, each in a worker thread of the server's own pool
  (enough workers for every client at once, so no command waits behind another client's), and
  its next bytes are read only once the lines already read are handled, so a flood is held back
  by TCP flow control instead of queueing in the server: no line is refused or dropped for it.
* The client limit never locks anyone out: with `max_clients` connected, a newcomer is
  admitted at once and the client idle longest is closed (`ERR|-|evicted: ...` first, in either
  mode). A client silent for `idle_timeout_s` is closed (`ERR|-|idle for N s; closing` first in
  acknowledged mode). Lines a closed client had sent but were not handled are logged as not
  executed.

* A client's lines are handled at most ``max_lines_per_s`` a second, and commands of all
  clients go to the handler at most ``max_commands_per_s`` a second (a second's worth may
  come at once): faster input waits unread, never refused. The command path runs real-time, and
  a flood must not take the CPU from what runs beside it.
* ESTOP is never queued: the moment an ESTOP line is received, the handler's ``estop_now``
  (if it has one) latches the emergency stop, before the lines received ahead of it are handled;
  the line is then handled and answered in its turn.

Blank lines are ignored (no reply). A partial line at disconnect is discarded, never executed.

Where each part lives: this module binds, starts and stops the server (its event loop in a
thread of its own); :mod:`~phil_control.tcp.clients` serves each client (reading, pacing,
admission and eviction, idle timeout, close); :mod:`~phil_control.tcp.dispatch` handles the
lines (the ESTOP fast path, the lines answered at once, the handler call, replies and the
command log); :mod:`~phil_control.tcp.connection` is what is held for one client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import socket
import threading
import time
import weakref
from collections.abc import Callable

from phil_control.core.protocol.vocabulary import ProtocolVocabulary
from phil_control.tcp.clients import ClientServing
from phil_control.tcp.config import TcpServerConfig, TokenBucket
from phil_control.tcp.connection import Connection
from phil_control.tcp.handler import CommandHandler, CommandLogEntry

_logger = logging.getLogger(__name__)

# stop() waits this long for the commands being handled to be answered.
_DRAIN_TIMEOUT_S = 1.0


class TcpServer(ClientServing):
    """Serve the protocol to any number of clients from one background thread.

    Args:
        handler: Decides on commands and gives the status line (see `CommandHandler`).
        vocabulary: What the parser accepts.
        config: Address and bounds.
        command_log: Called with every non-blank received line and its outcome (on the
            server's thread; must return quickly).
        clock: Time source for `CommandLogEntry.time_s` (wall-clock seconds by default).
        pace_clock: Monotonic time source of the input rates (tests may hold it still).
    """

    def __init__(
        self,
        handler: CommandHandler,
        vocabulary: ProtocolVocabulary,
        config: TcpServerConfig | None = None,
        command_log: Callable[[CommandLogEntry], None] | None = None,
        clock: Callable[[], float] = time.time,
        pace_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._handler = handler
        self._vocabulary = vocabulary
        self._config = config or TcpServerConfig()
        self._command_log = command_log
        self._clock = clock
        self._ids = itertools.count(1)
        self._connections: dict[int, Connection] = {}
        self._tasks: set[asyncio.Task] = set()
        self._transports: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._stop_event: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._socket: socket.socket | None = None  # bound, not yet listening
        self._dropped = 0
        self._pace_clock = pace_clock
        self._commands = TokenBucket(self._config.max_commands_per_s, pace_clock())

    # ------------------------------------------------------------------ control

    def bind(self) -> tuple[str, int]:
        """Take the address without listening yet (a client that connects is refused, as by
        a port nobody has): a port a server listens on fails here, at start-up (one only
        bound by another process, which SO_REUSEADDR allows, fails at :meth:`start`).

        Returns:
            The bound (host, port).

        Raises:
            OSError: The address cannot be bound (e.g. the port is in use).
        """
        if self._socket is None:
            config = self._config
            family, _, _, _, address = socket.getaddrinfo(
                config.host, config.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                # As socket.create_server: a restart may reuse the port of a closed server.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
            except OSError:
                sock.close()
                raise
            self._socket = sock
            self._address = sock.getsockname()[:2]
        return self._address

    def start(self, timeout_s: float = 5.0) -> tuple[str, int]:
        """Bind (unless :meth:`bind` did), listen and start serving in a background thread.

        Returns:
            The bound (host, port).

        Raises:
            OSError: The address cannot be bound (e.g. the port is in use).
            RuntimeError: Already started, or the server thread did not come up in time.
        """
        if self._thread is not None:
            raise RuntimeError('TcpServer already started')
        self.bind()
        sock, self._socket = self._socket, None
        try:
            sock.listen(self._config.backlog)
        except OSError:
            sock.close()
            raise
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(sock, ready, failure), name='phil-tcp-server', daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout_s) or failure:
            self.stop(timeout_s)
            raise RuntimeError(f'TcpServer did not start: {failure[0] if failure else "timeout"}')
        _logger.info('listening on %s port %d', *self._address)
        return self._address

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close every connection and the listening socket, and join the thread (idempotent)."""
        if self._socket is not None:  # bound, never started
            self._socket.close()
            self._socket = None
        thread, loop, event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                loop.call_soon_threadsafe(event.set)
        thread.join(timeout_s)
        if thread.is_alive():
            raise RuntimeError(f'TcpServer thread did not end within {timeout_s} s')
        self._thread = None

    def __enter__(self) -> TcpServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); raises RuntimeError before `start`."""
        if self._address is None:
            raise RuntimeError('TcpServer not started')
        return self._address

    @property
    def client_count(self) -> int:
        """Connections being served now."""
        return len(self._connections)

    @property
    def buffered_input_bytes(self) -> int:
        """Bytes of unfinished lines held for all clients (each at most `max_line_bytes`)."""
        return sum(
            connection.framer.pending_bytes for connection in list(self._connections.values())
        )

    @property
    def dropped_clients(self) -> int:
        """Connections dropped because they did not read their replies."""
        return self._dropped

    # -------------------------------------------------------------- event loop

    def _run(
        self, sock: socket.socket, ready: threading.Event, failure: list[BaseException]
    ) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        # At most one command in flight per client (plus those of evicted clients finishing):
        # no command waits for a worker behind another client's.
        executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=2 * self._config.max_clients, thread_name_prefix='phil-tcp-handler'
        )
        self._executor = executor
        try:
            loop.run_until_complete(self._main(sock, ready))
        except BaseException as error:  # reported to start(); the thread must end cleanly
            failure.append(error)
            ready.set()
            _logger.exception('TCP server loop failed')
        finally:
            sock.close()
            loop.close()
            executor.shutdown(wait=False, cancel_futures=True)

    async def _main(self, sock: socket.socket, ready: threading.Event) -> None:
        self._stop_event = asyncio.Event()
        # The stream buffers at most 2 * limit bytes before it stops reading the socket.
        server = await asyncio.start_server(
            self._serve_client, sock=sock, limit=self._config.read_chunk_bytes
        )
        ready.set()
        try:
            await self._stop_event.wait()
        finally:
            server.close()
            handling = [c.handling for c in self._connections.values() if c.handling]
            if handling:
                # A done handler call wakes its client's task before this wait returns, so
                # its reply is written before the connections are closed.
                await asyncio.wait(handling, timeout=_DRAIN_TIMEOUT_S)
            for connection in self._connections.values():
                connection.close_reason = connection.close_reason or 'the server stopped'
            for transport in list(self._transports):
                transport.abort()  # includes closing ones still flushing to a silent peer
            if self._tasks:  # aborted connections end their tasks by themselves
                await asyncio.wait(list(self._tasks), timeout=1.0)
            remaining = list(self._tasks)
            for task in remaining:
                task.cancel()
            await asyncio.gather(*remaining, return_exceptions=True)
