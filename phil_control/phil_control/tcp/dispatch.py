"""What the TCP server does with a received line: ESTOP latched the moment it arrives, the
lines answered without the handler (invalid, too long, GET_STATUS, PROTOCOL), the others handed
to the handler in a worker thread, and the reply lines (``OK|...``, ``ERR|...``) written and
logged. A client that does not read its replies is dropped here, when its output exceeds
``max_output_bytes``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable

from phil_control.core.protocol.commands import (
    ACK_PROTOCOL_VERSION,
    Command,
    Estop,
    GetStatus,
    Protocol,
    Quit,
)
from phil_control.core.protocol.framing import FramedLine, LineTooLong
from phil_control.core.protocol.parser import ParseError, parse_line
from phil_control.core.protocol.vocabulary import ProtocolVocabulary
from phil_control.tcp.config import TcpServerConfig, wire_text
from phil_control.tcp.connection import Connection
from phil_control.tcp.handler import (
    NO_OPCODE,
    CommandHandler,
    CommandLogEntry,
    HandlerReply,
    reply_line,
)

_logger = logging.getLogger(__name__)


class CommandDispatch:
    """The line handling of :class:`~phil_control.tcp.server.TcpServer` (its state is set up
    there)."""

    _handler: CommandHandler
    _vocabulary: ProtocolVocabulary
    _config: TcpServerConfig
    _command_log: Callable[[CommandLogEntry], None] | None
    _clock: Callable[[], float]
    _executor: concurrent.futures.ThreadPoolExecutor | None
    _dropped: int

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
        self, connection: Connection, event: FramedLine | LineTooLong
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
            self._reply(connection, reply_line(opcode, HandlerReply(False, result.reason)))
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

    async def _handle(self, connection: Connection, text: str, command: Command) -> None:
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
        self._reply(connection, reply_line(opcode, reply))
        if isinstance(command, Quit):
            connection.closing = True
            connection.close_reason = 'the client sent QUIT'

    def _answer_status(self, connection: Connection, text: str) -> None:
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

    def _reply(self, connection: Connection, line: str) -> None:
        if connection.ack:
            self._send(connection, line + '\n')

    def _send(self, connection: Connection, text: str) -> None:
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
        self, connection: Connection, line: str, opcode: str, accepted: bool, reason: str
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
