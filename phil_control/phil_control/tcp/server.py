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
from collections import deque
from collections.abc import Callable

from phil_control.core.protocol.commands import (
    ACK_PROTOCOL_VERSION,
    Command,
    Estop,
    GetStatus,
    Protocol,
    Quit,
)
from phil_control.core.protocol.framing import FramedLine, LineFramer, LineTooLong
from phil_control.core.protocol.parser import ParseError, parse_line
from phil_control.core.protocol.vocabulary import ProtocolVocabulary
from phil_control.tcp.config import TcpServerConfig, TokenBucket, wire_text
from phil_control.tcp.handler import CommandHandler, CommandLogEntry, HandlerReply

_logger = logging.getLogger(__name__)

NO_OPCODE = '-'
# A closed client still holding unsent replies (it does not read) is aborted after this long.
_CLOSE_GRACE_S = 5.0
# A line waiting for its rate looks at the pace clock this often.
_PACE_POLL_S = 0.01
# stop() waits this long for the commands being handled to be answered.
_DRAIN_TIMEOUT_S = 1.0


class _Connection:
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


class TcpServer:
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
        self._connections: dict[int, _Connection] = {}
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

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._transports.add(writer.transport)
        loop = asyncio.get_running_loop()
        connection = _Connection(next(self._ids), writer, self._config.max_line_bytes, loop.time())
        connection.lines = TokenBucket(self._config.max_lines_per_s, self._pace_clock())
        try:
            self._make_room(loop.time())
            self._connections[connection.client_id] = connection
            if self._config.socket_send_buffer_bytes is not None:
                writer.get_extra_info('socket').setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, self._config.socket_send_buffer_bytes
                )
            _logger.info(
                'client %d connected from %s',
                connection.client_id,
                writer.get_extra_info('peername'),
            )
            while not connection.closing:
                data = await self._receive(reader, connection)
                if not data:
                    break
                connection.last_active_s = loop.time()
                events = connection.framer.feed(data)
                self._estop_at_once(events)
                connection.unhandled.extend(events)
                connection.busy = True
                while connection.unhandled and not connection.closing:
                    await self._pace(connection.lines)
                    to_handle = self._answer_at_once(connection, connection.unhandled.popleft())
                    if to_handle is None:
                        # One line per client per turn of the loop (a handled line yields while
                        # its worker runs): a burst holds the other clients for one line at most.
                        await asyncio.sleep(0)
                    else:
                        await self._pace(self._commands)
                        await self._handle(connection, *to_handle)
                connection.busy = False
                connection.last_active_s = loop.time()
                # read() does not yield while data is buffered: a chunk without a whole line
                # (a megabyte without newline) must not keep the loop from the other clients.
                await asyncio.sleep(0)
        except (ConnectionError, OSError) as error:
            _logger.info('client %d: %s', connection.client_id, error)
        except asyncio.CancelledError:
            pass  # server stopping; ending normally keeps asyncio from logging the cancel
        finally:
            if task is not None:
                self._tasks.discard(task)
            if self._connections.pop(connection.client_id, None) is not None:
                _logger.info('client %d disconnected', connection.client_id)
            self._log_unhandled(connection)
            self._close(connection)

    async def _receive(self, reader: asyncio.StreamReader, connection: _Connection) -> bytes:
        """The next bytes of the client; b'' at its end or after its idle timeout."""
        read = reader.read(self._config.read_chunk_bytes)
        timeout_s = self._config.idle_timeout_s
        if timeout_s <= 0:
            return await read
        try:
            return await asyncio.wait_for(read, timeout_s)
        except asyncio.TimeoutError:
            reason = f'idle for {timeout_s:g} s; closing'
            _logger.info('client %d %s', connection.client_id, reason)
            self._reply(connection, f'ERR|{NO_OPCODE}|{reason}')
            connection.closing = True
            connection.close_reason = reason
            return b''

    def _make_room(self, now_s: float) -> None:
        """With `max_clients` served, evict the client idle longest (a busy one only when
        every client is busy), so a newcomer's ESTOP or GET_STATUS always gets through."""
        served = [c for c in self._connections.values() if not c.closing]
        if len(served) < self._config.max_clients:
            return
        victim = max(served, key=lambda c: (not c.busy, now_s - c.last_active_s))
        reason = f'evicted: {len(served)} clients connected and this one was idle longest'
        _logger.warning(
            'client %d %s (%s for %.1f s); admitting a new client',
            victim.client_id,
            reason,
            'busy' if victim.busy else 'idle',
            now_s - victim.last_active_s,
        )
        self._send(victim, f'ERR|{NO_OPCODE}|{reason}\n')  # in either mode: may be a person
        self._connections.pop(victim.client_id, None)
        victim.closing = True
        victim.close_reason = victim.close_reason or reason
        self._close(victim)

    def _close(self, connection: _Connection) -> None:
        transport = connection.writer.transport
        connection.writer.close()  # sends what is still buffered (e.g. the QUIT reply), then FIN
        if transport.get_write_buffer_size():  # a peer that does not read would hold it open
            asyncio.get_running_loop().call_later(_CLOSE_GRACE_S, transport.abort)

    def _log_unhandled(self, connection: _Connection) -> None:
        """Log the lines a closed connection had sent that were not handled (none are lost
        silently)."""
        reason = f'not executed: {connection.close_reason or "the connection closed"}'
        while connection.unhandled:
            event = connection.unhandled.popleft()
            if isinstance(event, LineTooLong):
                self._log(connection, '', NO_OPCODE, False, reason)
            elif event.data.strip(b' \t\r'):
                text = event.data.decode('utf-8', 'replace').strip()
                opcode = wire_text(text.split('|', 1)[0].strip().upper()[:40]) or NO_OPCODE
                self._log(connection, text, opcode, False, reason)

    # ------------------------------------------------------------ line handling

    async def _pace(self, bucket: TokenBucket | None) -> None:
        """Wait for a token of ``bucket`` (a client's lines, or every client's commands)."""
        if bucket is None:
            return
        while (wait_s := bucket.wait_s(self._pace_clock())) > 0.0:
            await asyncio.sleep(min(wait_s, _PACE_POLL_S))
        bucket.take(self._pace_clock())

    def _estop_at_once(self, events: list) -> None:
        """Latch ESTOP now when one of the lines just received is an ESTOP."""
        estop_now = getattr(self._handler, 'estop_now', None)
        if estop_now is None:
            return
        for event in events:
            if (
                isinstance(event, FramedLine)
                and event.data.lstrip()[:5].upper() == b'ESTOP'
                and isinstance(parse_line(event.data, self._vocabulary), Estop)
            ):
                try:
                    problem = estop_now()
                except Exception:  # the line's own handling still asks the planner
                    _logger.exception('estop_now() failed')
                    problem = 'estop_now failed'
                if problem:
                    _logger.error('ESTOP: %s', problem)
                return

    def _answer_at_once(
        self, connection: _Connection, event: FramedLine | LineTooLong
    ) -> tuple[str, Command] | None:
        """Answer a line that needs no handler (invalid, GET_STATUS, PROTOCOL, blank); else
        return its text and command for `_handle`."""
        if isinstance(event, LineTooLong):
            reason = (
                f'line longer than {event.limit_bytes} bytes; discarded up to the next newline'
            )
            self._log(connection, '', NO_OPCODE, False, reason)
            self._reply(connection, f'ERR|{NO_OPCODE}|{reason}')
            return None
        if not event.data.strip(b' \t\r'):
            return None
        text = event.data.decode('utf-8', 'replace').strip()
        result = parse_line(event.data, self._vocabulary)
        if isinstance(result, ParseError):
            opcode = wire_text(result.opcode) or NO_OPCODE
            self._log(connection, text, opcode, False, result.reason)
            self._reply(connection, f'ERR|{opcode}|{wire_text(result.reason)}')
            return None
        opcode = result.opcode.value
        if isinstance(result, GetStatus):
            self._answer_status(connection, text)
            return None
        if isinstance(result, Protocol):
            was_ack = connection.ack
            connection.ack = result.version == ACK_PROTOCOL_VERSION
            self._log(connection, text, opcode, True, '')
            if was_ack or connection.ack:
                self._send(connection, f'OK|{opcode}\n')
            return None
        return text, result

    async def _handle(self, connection: _Connection, text: str, command: Command) -> None:
        # The handler may wait for the planner: in a worker thread, so other clients (and this
        # one's GET_STATUS after the line is answered) are served meanwhile; lines of one
        # client stay in order because this coroutine awaits the reply.
        connection.handling = asyncio.get_running_loop().run_in_executor(
            self._executor, self._call_handler, command, connection.client_id
        )
        try:
            reply = await connection.handling
        finally:
            connection.handling = None
        opcode = command.opcode.value
        self._log(connection, text, opcode, reply.accepted, reply.reason)
        if reply.accepted:
            note = f'|{wire_text(reply.reason)}' if reply.reason else ''
            self._reply(connection, f'OK|{opcode}{note}')
        else:
            self._reply(connection, f'ERR|{opcode}|{wire_text(reply.reason) or "rejected"}')
        if isinstance(command, Quit):
            connection.closing = True
            connection.close_reason = 'the client sent QUIT'

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
            _logger.warning(
                'client %d does not read its replies (%d bytes pending); dropped',
                connection.client_id,
                transport.get_write_buffer_size(),
            )
            self._dropped += 1
            connection.closing = True
            connection.close_reason = 'the client did not read its replies'
            transport.abort()

    def _log(
        self, connection: _Connection, line: str, opcode: str, accepted: bool, reason: str
    ) -> None:
        if self._command_log is None:
            return
        entry = CommandLogEntry(
            self._clock(), connection.client_id, line, opcode, accepted, reason
        )
        try:
            self._command_log(entry)
        except Exception:  # a broken log must not stop the server
            _logger.exception('command log callback failed')
