"""What the TCP server calls: the command handler interface, its reply, and the command log entry.

`MachineCommandHandler` puts a `StateMachine` behind that interface; a node can use it as it is,
passing the machine's decisions on to whatever carries out the actions.
"""

from __future__ import annotations

import threading
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phil_control.core.behavior.state_machine import StateMachine
from phil_control.core.behavior.states import Decision, MachineSnapshot, RobotState
from phil_control.core.protocol.commands import Command
from phil_control.core.protocol.status import format_status
from phil_control.tcp.config import wire_text


@dataclass(frozen=True)
class HandlerReply:
    """The handler's answer to one command.

    Attributes:
        accepted: The command was accepted (its effects requested, not necessarily done).
        reason: Why it was rejected; for an accepted command an optional note ('' if none).
    """

    accepted: bool
    reason: str = ''


#: The opcode field of a reply to a line that had none (or was too long).
NO_OPCODE = '-'


def reply_line(opcode: str, reply: HandlerReply) -> str:
    """The acknowledged-mode reply: ``OK|<OPCODE>[|note]`` or ``ERR|<OPCODE>|<reason>``."""
    opcode = opcode or NO_OPCODE
    if reply.accepted:
        return f'OK|{opcode}' + (f'|{wire_text(reply.reason)}' if reply.reason else '')
    return f'ERR|{opcode}|{wire_text(reply.reason) or "rejected"}'


class CommandHandler(typing.Protocol):
    """What the server needs from the rest of the controller.

    Both methods are called on the server's thread and must return quickly (never wait for a
    motion); they must be safe to call while other threads change the robot's state.
    """

    def handle(self, command: Command, client_id: int) -> HandlerReply:
        """Decide on one valid command (never GET_STATUS or PROTOCOL; the server answers those)."""
        ...

    def status_line(self) -> str:
        """The current GET_STATUS reply (`format_status(...)`)."""
        ...

    # Optional: ``estop_now() -> str``, called on the server's thread the moment an ESTOP line
    # arrives, before the lines received ahead of it are handled (they may wait seconds for a
    # stopped planner); '' when it latched, else why not. The line itself is then handled in
    # its turn like any other.


@dataclass(frozen=True)
class CommandLogEntry:
    """One received line and what became of it (for the command CSV log).

    Attributes:
        time_s: Clock time of receipt (the server's injected clock).
        client_id: The connection it came from (1, 2, ... in connection order).
        line: The line as received (decoded leniently, terminator removed).
        opcode: The opcode ('-' when the line had none or was too long).
        accepted: The parser and the handler accepted it.
        reason: Why it was rejected, or the acceptance note.
    """

    time_s: float
    client_id: int
    line: str
    opcode: str
    accepted: bool
    reason: str


class MachineCommandHandler:
    """A `StateMachine` behind the `CommandHandler` interface, under one lock.

    Args:
        machine: The state machine; this handler serialises every call to it with `lock`.
        execute: Called with each decision (accepted or not) while the lock is held, so the
            actions of successive commands stay in order; it must only queue work.
        commanded_rad: Returns the last commanded joint targets (rad, joint order), or None
            while unknown; GET_STATUS lists them once the robot has started.
        lock: The lock shared with whoever feeds the machine its events; a new one by default.
    """

    def __init__(
        self,
        machine: StateMachine,
        execute: Callable[[Decision], None] | None = None,
        commanded_rad: Callable[[], Sequence[float] | None] | None = None,
        lock: threading.Lock | threading.RLock | None = None,
    ) -> None:
        self._machine = machine
        self._execute = execute
        self._commanded_rad = commanded_rad
        self.lock = lock or threading.Lock()

    def handle(self, command: Command, client_id: int) -> HandlerReply:
        """Run the command through the machine and hand its decision to `execute`."""
        with self.lock:
            decision = self._machine.decide(command)
            if self._execute is not None:
                self._execute(decision)
        return HandlerReply(decision.accepted, decision.reason)

    def status_line(self) -> str:
        """Format GET_STATUS from the machine's snapshot and the commanded targets."""
        with self.lock:
            snapshot = self._machine.snapshot()
        return snapshot_status_line(snapshot, self._commanded_rad)


def snapshot_status_line(
    snapshot: MachineSnapshot, commanded_rad: Callable[[], Sequence[float] | None] | None
) -> str:
    """GET_STATUS of a machine snapshot; the commanded targets are listed once the robot has
    started (``commanded_rad`` returns them, rad in joint order, or None while unknown)."""
    listed = snapshot.started or snapshot.state is not RobotState.STANDBY
    angles = commanded_rad() if listed and commanded_rad else None
    point = snapshot.resume_point
    return format_status(
        snapshot.state.value,
        angles,
        snapshot.speed,
        None if point is None else point.play_id,
        0 if point is None else point.bar,
    )
