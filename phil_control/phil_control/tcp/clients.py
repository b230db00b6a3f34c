"""The TCP server's clients: each served by a task of its own that reads its bytes, frames them
into lines and handles them one at a time, paced (a client's lines and every client's commands
by their token buckets), reading more only once the lines read are handled; the admission of a
newcomer (evicting the client idle longest at ``max_clients``), the idle timeout, the close and
the log of lines a closed client had sent but were not handled.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import weakref
from collections.abc import Callable

from phil_control.core.protocol.framing import LineTooLong
from phil_control.tcp.config import TcpServerConfig, TokenBucket, wire_text
from phil_control.tcp.connection import Connection
from phil_control.tcp.dispatch import CommandDispatch
from phil_control.tcp.handler import NO_OPCODE

_logger = logging.getLogger(__name__)

# A closed client still holding unsent replies (it does not read) is aborted after this long.
_CLOSE_GRACE_S = 5.0
# A line waiting for its rate looks at the pace clock this often.
_PACE_POLL_S = 0.01


class ClientServing(CommandDispatch):
    """The per-client part of :class:`~phil_control.tcp.server.TcpServer` (its state is set up
    there)."""

    _config: TcpServerConfig
    _ids: itertools.count
    _connections: dict[int, Connection]
    _tasks: set[asyncio.Task]
    _transports: weakref.WeakSet[asyncio.BaseTransport]
    _pace_clock: Callable[[], float]
    _commands: TokenBucket

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._transports.add(writer.transport)
        loop = asyncio.get_running_loop()
        connection = Connection(next(self._ids), writer, self._config.max_line_bytes, loop.time())
        connection.lines = TokenBucket(self._config.max_lines_per_s, self._pace_clock())
        try:
            self._admit(connection, loop.time())
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

    def _admit(self, connection: Connection, now_s: float) -> None:
        """Serve ``connection`` from now on (making room for it first)."""
        writer = connection.writer
        self._make_room(now_s)
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

    async def _receive(self, reader: asyncio.StreamReader, connection: Connection) -> bytes:
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

    def _close(self, connection: Connection) -> None:
        transport = connection.writer.transport
        connection.writer.close()  # sends what is still buffered (e.g. the QUIT reply), then FIN
        if transport.get_write_buffer_size():  # a peer that does not read would hold it open
            asyncio.get_running_loop().call_later(_CLOSE_GRACE_S, transport.abort)

    def _log_unhandled(self, connection: Connection) -> None:
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

    async def _pace(self, bucket: TokenBucket | None) -> None:
        """Wait for a token of ``bucket`` (a client's lines, or every client's commands)."""
        if bucket is None:
            return
        while (wait_s := bucket.wait_s(self._pace_clock())) > 0.0:
            await asyncio.sleep(min(wait_s, _PACE_POLL_S))
        bucket.take(self._pace_clock())
