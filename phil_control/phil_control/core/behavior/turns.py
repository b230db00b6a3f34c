"""Commands waiting for a transition to be carried out, in arrival order, each for a bounded
time (see `StateMachine.waits`).

Upstream dropped a command that came while START was still loading its first trajectory; a
client that sends START and, a moment later, READY (as upstream's clients and the brain do)
then had a robot stuck in INIT. Here such a command waits for its turn: once the transition is
over it is decided as if it had just arrived, and once it has been, the next one's turn comes.
A command that arrives while others wait queues behind them, so commands are decided in the
order they came. Pure: the caller wakes waiters from its own thread, with its own clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from phil_control.core.protocol.commands import Command

#: How long a command waits for a transition before it is refused with the reason [s].
COMMAND_WAIT_S = 10.0


@dataclass
class Turn:
    """One waiting command; ``wake(late_reason)`` is called once: '' = decide it now."""

    command: Command
    deadline_s: float
    wake: Callable[[str], None]
    woken: bool = False


class CommandTurns:
    """The queue of waiting commands.

    Args:
        clock: Seconds, monotonic.
        wait_s: How long each command may wait for its turn.
    """

    def __init__(self, clock: Callable[[], float], wait_s: float = COMMAND_WAIT_S) -> None:
        self._clock = clock
        self._wait_s = wait_s
        self._turns: deque[Turn] = deque()

    @property
    def busy(self) -> bool:
        """Commands are waiting (a new one must queue behind them)."""
        return bool(self._turns)

    def join(self, command: Command, wake: Callable[[str], None]) -> Turn:
        turn = Turn(command, self._clock() + self._wait_s, wake)
        self._turns.append(turn)
        return turn

    def leave(self, turn: Turn) -> None:
        """``turn``'s command has been decided (or refused): the next one may go."""
        self._turns.remove(turn)

    def release(self, waits: Callable[[Command], str]) -> None:
        """Wake the first command when ``waits(command)`` has nothing left to wait for, or with
        the reason when its time is up. Call after anything that may end a transition."""
        if not self._turns or self._turns[0].woken:
            return
        turn = self._turns[0]
        reason = waits(turn.command)
        if reason and self._clock() < turn.deadline_s:
            return
        turn.woken = True
        turn.wake(f'waited {self._wait_s:g} s: {reason}' if reason else '')
