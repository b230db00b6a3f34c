"""Clocks for the device simulators: the real monotonic clock and a manual one for tests.

Every simulator object takes its time as an argument or from an injected :class:`Clock`, so a
test can step the simulation deterministically and the runner uses ``time.monotonic``.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic time source in seconds."""

    def now_s(self) -> float:
        """Return the current time [s]; never decreases."""
        ...


class MonotonicClock:
    """``time.monotonic`` (the robot-wide clock of the controller as well)."""

    def now_s(self) -> float:
        """Return ``time.monotonic()`` [s]."""
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to (deterministic tests). Thread-safe.

    Args:
        start_s: Initial time [s].
    """

    def __init__(self, start_s: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._now_s = float(start_s)

    def now_s(self) -> float:
        """Return the current manual time [s]."""
        with self._lock:
            return self._now_s

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
