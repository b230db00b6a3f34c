"""A steerable CLOCK_MONOTONIC for nodes that take an injected ``clock_ns`` (no tests here):
faster than real time if asked, frozen while a test makes several calls that must happen at
one instant, or moved ahead at once as a machine too busy to run us would."""

from __future__ import annotations

import contextlib
import time

NS = 1_000_000_000


class SteerableClock:
    """CLOCK_MONOTONIC in ns, running ``speedup`` times faster than real time."""

    def __init__(self, speedup: float = 1.0) -> None:
        self._speedup = speedup
        self._real = time.monotonic_ns()
        self._base = self._real
        self._frozen: int | None = None

    def __call__(self) -> int:
        if self._frozen is not None:
            return self._frozen
        return self._base + int((time.monotonic_ns() - self._real) * self._speedup)

    def stall(self, seconds: float) -> None:
        """Let ``seconds`` pass at once (frozen or not)."""
        if self._frozen is not None:
            self._frozen += int(seconds * NS)
        else:
            self._base += int(seconds * NS)

    @contextlib.contextmanager
    def frozen(self):
        """Stop the clock; on leaving it runs on from where it stood."""
        self._frozen = self()
        try:
            yield
        finally:
            self._base, self._real = self._frozen, time.monotonic_ns()
            self._frozen = None
