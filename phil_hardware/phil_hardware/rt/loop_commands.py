"""The node's commands to the bus loop: taken from the pipe in the loop's spare time, run on
the controller, answered with ``(request_id, ok, detail, value)``.

A lifecycle command (``configure``, ``activate``, ``deactivate``, ``shutdown``) makes the loop
start a fresh tick grid, re-freeze the GC and publish the snapshot at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phil_hardware.core.bus_controller import BusController, ControllerError

from .command_wire import NO_MESSAGE, CommandReader
from .config import BusLoopConfig

LIFECYCLE_COMMANDS = ('configure', 'activate', 'deactivate', 'shutdown')


class LoopCommands:
    """The command handling of :class:`~phil_hardware.rt.loop.BusLoop` (its state is set up
    there)."""

    config: BusLoopConfig
    controller: BusController
    conn: Any
    clock: Callable[[], float]
    after_command: Callable[[], None] | None
    commands_handled: int
    resets_granted: int
    reset_granted_s: float
    last_error: str
    _reader: CommandReader
    _stopping: bool
    _resync: bool
    _estop_seen: int
    _node_seen_s: float
    _node_silent: bool

    def _handle_commands(self) -> None:
        reader = self._reader
        for _ in range(self.config.commands_per_tick):
            try:
                message = reader.next_message()
                if message is NO_MESSAGE:
                    return
            except (EOFError, OSError):
                self._node_gone()
                return
            except Exception as error:  # an unpicklable message must not stop the loop
                self._loop_error(error, self.clock())
                continue
            self.commands_handled += 1
            self._dispatch(message)
            if self._stopping:
                return

    def _dispatch(self, message: object) -> None:
        try:
            request_id, name, payload = message
        except (TypeError, ValueError):
            self.last_error = f'malformed command {message!r:.80}'
            return
        try:
            ok, detail, value = self._execute(str(name), payload)
        except ControllerError as error:
            ok, detail, value = False, str(error), None
        except Exception as error:  # report it to the caller, keep looping
            ok, detail, value = False, f'{type(error).__name__}: {error}', None
            self.last_error = detail
        if name in LIFECYCLE_COMMANDS:
            self._resync = True
            self._node_seen_s = self.clock()  # the node waited for this, not silent
            if self.after_command is not None:
                self.after_command()
            self.publish(self.clock())
        self._reply(request_id, ok, detail, value)

    def _execute(self, name: str, payload: object) -> tuple[bool, str, object]:
        ctl = self.controller
        if name == 'chunk':
            reason = ctl.push_chunk(payload)
            return reason is None, reason or 'queued', ctl.queue.queued
        if name == 'configure':
            said = len(ctl.messages)
            ctl.configure(zero_origins=payload is None or bool(payload))
            detail = f'configured; missing: {", ".join(ctl.missing) or "none"}'
            # What configure had to say (e.g. a drive given Phil's PDO layout) goes with it.
            return True, '; '.join([detail, *ctl.messages[said:]]), ctl.missing
        if name == 'activate':
            ctl.activate()
            return True, 'active', None
        if name == 'deactivate':
            ctl.deactivate()
            return True, 'inactive', None
        if name == 'halt':
            return True, 'halted', ctl.halt()
        if name == 'estop':
            ctl.estop(str(payload or 'emergency stop requested'))
            return True, 'estop latched', None
        if name == 'fault':
            ctl.fault(str(payload or 'a node of the graph failed'))
            return True, 'fault latched', None
        if name == 'reset':
            # The payload is the ESTOP word's count when the RESET was asked. An ESTOP asked
            # before it is latched now (commands are taken before a tick's look at the word:
            # it latched again right after the reset) and cleared with it; one asked since
            # stays.
            self._check_estop()
            if payload is not None and self._estop_seen != payload:
                reason = 'an emergency stop came after the RESET was asked'
                return False, reason, [reason]
            reasons = ctl.reset()
            # The node that asks is alive: its silence counts from now again.
            self._node_seen_s, self._node_silent = self.clock(), False
            if not reasons:
                self.resets_granted += 1
                self.reset_granted_s = self.clock()
            return not reasons, '; '.join(reasons) or 'reset', reasons
        if name == 'shutdown':
            ctl.shutdown()
            self._stopping = True
            return True, 'finalized', None
        if name == 'ping':
            return True, 'pong', ctl.lifecycle.value
        return False, f'unknown command {name!r}', None

    def _reply(self, request_id: object, ok: bool, detail: str, value: object) -> None:
        try:
            self.conn.send((request_id, ok, detail, value))
        except (EOFError, OSError):
            self._node_gone()
