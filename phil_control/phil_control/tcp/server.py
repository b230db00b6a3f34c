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
  accepting new clients).
* Bad input never stops the server: invalid lines are answered (acknowledged mode) or logged,
  never passed to the handler; handler, status and log callbacks that raise are contained.
* Slow clients cannot block others: one asyncio loop in its own thread, bounded input and a
  bounded output buffer per client; a client whose unsent replies exceed `max_output_bytes`
  (it does not read) is dropped. Fast clients cannot either: clients are served one received
  chunk (at most `read_chunk_bytes`) at a time, in turn.

Blank lines are ignored (no reply). A partial line at disconnect is discarded, never executed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from phil_control.core.protocol.commands import (
    ACK_PROTOCOL_VERSION,
    Command,
    GetStatus,
    Protocol,
    Quit,
)
from phil_control.core.protocol.framing import (
    DEFAULT_MAX_LINE_BYTES,
    FramedLine,
    LineFramer,
    LineTooLong,
)
from phil_control.core.protocol.parser import ParseError, parse_line
from phil_control.core.protocol.vocabulary import ProtocolVocabulary
from phil_control.tcp.handler import CommandHandler, CommandLogEntry, HandlerReply

_logger = logging.getLogger(__name__)

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 1951
NO_OPCODE = '-'
_MAX_REASON_CHARS = 1000


@dataclass(frozen=True)
class TcpServerConfig:
    """Where the server listens and its per-client bounds.

    Attributes:
        host: Address to bind ('127.0.0.1', '::1', '0.0.0.0' to serve other machines).
        port: TCP port; 0 picks a free one (tests), see `TcpServer.address`.
        max_line_bytes: Longest accepted line.
        max_output_bytes: Unsent reply bytes a client may hold before it is dropped.
        max_clients: Connections served at once; a further one waits up to
            `admission_wait_s` for a slot, then is closed.
        admission_wait_s: How long a connection beyond `max_clients` waits for a slot, s.
        read_chunk_bytes: Bytes read per receive call.
        backlog: Listen backlog.
        socket_send_buffer_bytes: SO_SNDBUF of accepted sockets; None = system default.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_output_bytes: int = 64 * 1024
    max_clients: int = 16
    admission_wait_s: float = 1.0
    read_chunk_bytes: int = 1024
    backlog: int = 16
    socket_send_buffer_bytes: int | None = None

    def __post_init__(self) -> None:
        for label in ('max_line_bytes', 'max_output_bytes', 'max_clients', 'read_chunk_bytes',
                      'backlog'):
            if getattr(self, label) <= 0:
                raise ValueError(f'{label} must be positive, got {getattr(self, label)}')
        if not 0.0 <= self.admission_wait_s <= 60.0:
            raise ValueError(f'admission_wait_s must be in [0, 60], got {self.admission_wait_s}')
        if not 0 <= self.port <= 65535:
            raise ValueError(f'port must be in 0..65535, got {self.port}')


def wire_text(text: str) -> str:
    """Make free text safe inside one reply field: no `|`, no line breaks, bounded length."""
    clean = text.replace('|', '/').replace('\r', ' ').replace('\n', ' ')
    return clean if len(clean) <= _MAX_REASON_CHARS else clean[:_MAX_REASON_CHARS] + '...'


class _Connection:
    def __init__(self, client_id: int, writer: asyncio.StreamWriter, max_line_bytes: int):
        self.client_id = client_id
        self.writer = writer
        self.framer = LineFramer(max_line_bytes)
        self.ack = False
        self.closing = False


class TcpServer:
    """Serve the protocol to any number of clients from one background thread.

    Args:
        handler: Decides on commands and gives the status line (see `CommandHandler`).
        vocabulary: What the parser accepts.
        config: Address and bounds.
        command_log: Called with every non-blank received line and its outcome (on the
            server's thread; must return quickly).
        clock: Time source for `CommandLogEntry.time_s` (wall-clock seconds by default).
    """

    def __init__(self, handler: CommandHandler, vocabulary: ProtocolVocabulary,
                 config: TcpServerConfig | None = None,
                 command_log: Callable[[CommandLogEntry], None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._handler = handler
        self._vocabulary = vocabulary
        self._config = config or TcpServerConfig()
        self._command_log = command_log
        self._clock = clock
        self._ids = itertools.count(1)
        self._connections: dict[int, _Connection] = {}
        self._tasks: set[asyncio.Task] = set()
        self._transports: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._dropped = 0

    # ------------------------------------------------------------------ control

    def start(self, timeout_s: float = 5.0) -> tuple[str, int]:
        """Bind, listen and start serving in a background thread.

        Returns:
            The bound (host, port).

        Raises:
            OSError: The address cannot be bound (e.g. the port is in use).
            RuntimeError: Already started, or the server thread did not come up in time.
        """
        if self._thread is not None:
            raise RuntimeError('TcpServer already started')
        config = self._config
        family = socket.getaddrinfo(config.host, config.port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        sock = socket.create_server((config.host, config.port), family=family,
                                    backlog=config.backlog)
        self._address = sock.getsockname()[:2]
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(sock, ready, failure),
                                        name='phil-tcp-server', daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s) or failure:
            self.stop(timeout_s)
            raise RuntimeError(f'TcpServer did not start: {failure[0] if failure else "timeout"}')
        _logger.info('listening on %s port %d', *self._address)
        return self._address

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close every connection and the listening socket, and join the thread (idempotent)."""
        thread, loop, event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):   # the loop has already ended
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
        return sum(connection.framer.pending_bytes
                   for connection in list(self._connections.values()))

    @property
    def dropped_clients(self) -> int:
        """Connections dropped because they did not read their replies."""
        return self._dropped

    # -------------------------------------------------------------- event loop

    def _run(self, sock: socket.socket, ready: threading.Event,
             failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(sock, ready))
        except BaseException as error:  # reported to start(); the thread must end cleanly
            failure.append(error)
            ready.set()
            _logger.exception('TCP server loop failed')
        finally:
            sock.close()
            loop.close()

    async def _main(self, sock: socket.socket, ready: threading.Event) -> None:
        self._stop_event = asyncio.Event()
        server = await asyncio.start_server(self._serve_client, sock=sock,
                                            limit=4 * self._config.read_chunk_bytes)
        ready.set()
        try:
            await self._stop_event.wait()
        finally:
            server.close()
            for transport in list(self._transports):
                transport.abort()   # includes closing ones still flushing to a silent peer
            if self._tasks:         # aborted connections end their tasks by themselves
                await asyncio.wait(list(self._tasks), timeout=1.0)
            remaining = list(self._tasks)
            for task in remaining:
                task.cancel()
            await asyncio.gather(*remaining, return_exceptions=True)

    async def _serve_client(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._transports.add(writer.transport)
        connection: _Connection | None = None
        try:
            if not await self._wait_for_a_slot():
                _logger.warning('refusing a client: %d clients connected',
                                len(self._connections))
                writer.transport.abort()
                return
            connection = _Connection(next(self._ids), writer, self._config.max_line_bytes)
            self._connections[connection.client_id] = connection
            if self._config.socket_send_buffer_bytes is not None:
                writer.get_extra_info('socket').setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, self._config.socket_send_buffer_bytes)
            _logger.info('client %d connected from %s', connection.client_id,
                         writer.get_extra_info('peername'))
            while not connection.closing:
                data = await reader.read(self._config.read_chunk_bytes)
                if not data:
                    break
                for event in connection.framer.feed(data):
                    await self._process(connection, event)
                    if connection.closing:
                        break
                # read() does not yield while data is buffered: without this a client that
                # floods the server would keep the loop from every other client.
                await asyncio.sleep(0)
        except (ConnectionError, OSError) as error:
            _logger.info('client: %s', error)
        except asyncio.CancelledError:
            pass   # server stopping; ending normally keeps asyncio from logging the cancel
        finally:
            if task is not None:
                self._tasks.discard(task)
            if connection is not None:
                self._connections.pop(connection.client_id, None)
                _logger.info('client %d disconnected', connection.client_id)
            writer.close()   # sends what is still buffered (e.g. the QUIT reply), then FIN

    async def _wait_for_a_slot(self) -> bool:
        # A burst of connect-and-close clients can fill the table with connections whose end
        # the loop has not read yet; give them `admission_wait_s` to go before refusing.
        deadline = time.monotonic() + self._config.admission_wait_s
        while len(self._connections) >= self._config.max_clients:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    # ------------------------------------------------------------ line handling

    async def _process(self, connection: _Connection, event: FramedLine | LineTooLong) -> None:
        if isinstance(event, LineTooLong):
            reason = (f'line longer than {event.limit_bytes} bytes; discarded up to the next '
                      'newline')
            self._log(connection, '', NO_OPCODE, False, reason)
            self._reply(connection, f'ERR|{NO_OPCODE}|{reason}')
            return
        if not event.data.strip(b' \t\r'):
            return
        text = event.data.decode('utf-8', 'replace').strip()
        result = parse_line(event.data, self._vocabulary)
        if isinstance(result, ParseError):
            opcode = wire_text(result.opcode) or NO_OPCODE
            self._log(connection, text, opcode, False, result.reason)
            self._reply(connection, f'ERR|{opcode}|{wire_text(result.reason)}')
            return
        opcode = result.opcode.value
        if isinstance(result, GetStatus):
            self._answer_status(connection, text)
            return
        if isinstance(result, Protocol):
            was_ack = connection.ack
            connection.ack = result.version == ACK_PROTOCOL_VERSION
            self._log(connection, text, opcode, True, '')
            if was_ack or connection.ack:
                self._send(connection, f'OK|{opcode}\n')
            return
        # The handler may wait for the planner: in a worker thread, so other clients (and this
        # one's GET_STATUS after the line is answered) are served meanwhile; lines of one
        # client stay in order because this coroutine awaits the reply.
        reply = await asyncio.get_running_loop().run_in_executor(
            None, self._call_handler, result, connection.client_id)
        self._log(connection, text, opcode, reply.accepted, reply.reason)
        if reply.accepted:
            note = f'|{wire_text(reply.reason)}' if reply.reason else ''
            self._reply(connection, f'OK|{opcode}{note}')
        else:
            self._reply(connection, f'ERR|{opcode}|{wire_text(reply.reason) or "rejected"}')
        if isinstance(result, Quit):
            connection.closing = True

    def _answer_status(self, connection: _Connection, text: str) -> None:
        try:
            line = self._handler.status_line()
        except Exception as error:  # a broken provider must not stop the server
            _logger.exception('status_line() failed')
            reason = f'status unavailable: {type(error).__name__}: {error}'
            self._log(connection, text, GetStatus.opcode.value, False, reason)
            self._send(connection, f'ERR|{GetStatus.opcode.value}|{wire_text(reason)}\n')
            return
        self._log(connection, text, GetStatus.opcode.value, True, '')
        self._send(connection, line if line.endswith('\n') else line + '\n')

    def _call_handler(self, command: Command, client_id: int) -> HandlerReply:
        try:
            reply = self._handler.handle(command, client_id)
        except Exception as error:  # a broken handler must not stop the server
            _logger.exception('handler failed on %r', command)
            return HandlerReply(False, f'internal error: {type(error).__name__}: {error}')
        if not isinstance(reply, HandlerReply):
            return HandlerReply(False, f'internal error: handler returned {type(reply).__name__}')
        return reply

    def _reply(self, connection: _Connection, line: str) -> None:
        if connection.ack:
            self._send(connection, line + '\n')

    def _send(self, connection: _Connection, text: str) -> None:
        if connection.closing:
            return
        transport = connection.writer.transport
        if transport.is_closing():
            return
        connection.writer.write(text.encode('utf-8', 'replace'))
        if transport.get_write_buffer_size() > self._config.max_output_bytes:
            _logger.warning('client %d does not read its replies (%d bytes pending); dropped',
                            connection.client_id, transport.get_write_buffer_size())
            self._dropped += 1
            connection.closing = True
            transport.abort()

    def _log(self, connection: _Connection, line: str, opcode: str, accepted: bool,
             reason: str) -> None:
        if self._command_log is None:
            return
        entry = CommandLogEntry(self._clock(), connection.client_id, line, opcode, accepted,
                                reason)
        try:
            self._command_log(entry)
        except Exception:  # a broken log must not stop the server
            _logger.exception('command log callback failed')
