"""Which CAN buses have input: one ``poll(2)`` for all of them each tick.

Draining a bus with nothing to read costs a failed receive (a system call and a Python
exception, about 2 us hot and several times that in the bus loop's cold tick); most ticks have
nothing on the TMotor buses. One ``poll`` with a zero timeout over every bus's descriptor costs
less than one such receive, so only the buses with input are drained. A bus without a
descriptor (python-can's ``virtual`` bus) is drained every time, as before.
"""

from __future__ import annotations

import select
from collections.abc import Mapping

_INPUT_OR_TROUBLE = select.POLLIN | select.POLLERR | select.POLLHUP | select.POLLNVAL


def descriptor(transport: object) -> int | None:
    """The transport's file descriptor, or None if it has none to poll."""
    try:
        fd = transport.fileno()  # type: ignore[attr-defined]
    except (AttributeError, NotImplementedError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


class InputReadiness:
    """The buses of ``transports`` worth draining now (never waits).

    An error or hang-up on a descriptor counts as input: the drain then reports it.
    """

    def __init__(self, transports: Mapping[str, object]) -> None:
        """Register every bus that has a descriptor; the others are always drained."""
        self.transports = transports
        self._poller = select.poll()
        self._by_fd: dict[int, str] = {}
        self._always: list[str] = []
        for bus, transport in transports.items():
            fd = descriptor(transport)
            if fd is None or fd in self._by_fd:
                self._always.append(bus)
                continue
            self._by_fd[fd] = bus
            self._poller.register(fd, _INPUT_OR_TROUBLE)

    def ready(self) -> list[str]:
        """The buses with input (or trouble) now, then those that cannot be polled."""
        by_fd = self._by_fd
        ready = [by_fd[fd] for fd, _events in self._poller.poll(0) if fd in by_fd]
        return ready + self._always if self._always else ready


__all__ = ['InputReadiness', 'descriptor']
