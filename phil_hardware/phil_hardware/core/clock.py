"""The robot-wide clock: one time source protocol for the bus controller and the device
simulators, the real monotonic clock and a manual one for deterministic tests.

Everything that needs the time takes it as an argument or from an injected :class:`Clock`, so a
test can step controller and simulator together while processes use ``time.monotonic``
(CLOCK_MONOTONIC, shared by every process on the machine).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic time source in seconds (robot time)."""

    def now(self) -> float:
        """Current time [s]; never decreases."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""


class MonotonicClock:
    """The real clock: ``time.monotonic`` (CLOCK_MONOTONIC, shared by every process)."""

    now = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)


class ManualClock:
    """A clock that only moves when told to (deterministic tests). Thread-safe.

    Args:
        start_s: Initial time [s].
    """

    def __init__(self, start_s: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._now_s = float(start_s)

    def now(self) -> float:
        """Return the current manual time [s]."""
        with self._lock:
            return self._now_s

    def sleep(self, seconds: float) -> None:
        """Sleeping on a manual clock moves it forward by ``seconds``."""
        self.advance(seconds)

    def advance(self, dt_s: float) -> float:
        """Move the time forward by ``dt_s`` and return the new time [s].

        Raises:
            ValueError: If ``dt_s`` is negative (a monotonic clock cannot go back).
        """
        if dt_s < 0:
            raise ValueError(f'ManualClock cannot go back in time (dt_s={dt_s})')
        with self._lock:
            self._now_s += dt_s
            return self._now_s


__all__ = ['Clock', 'ManualClock', 'MonotonicClock']
