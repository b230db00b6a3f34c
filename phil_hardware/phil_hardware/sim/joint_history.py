"""The recorded joint-space truth of the simulator: a ring buffer of time-stamped positions."""

from __future__ import annotations

import numpy as np


class JointHistory:
    """Samples at least ``period_s`` apart; the newest ``capacity`` of them are kept.

    Not thread-safe: the owner locks around it.

    Args:
        capacity: Samples kept.
        period_s: Minimum spacing of samples [s]; closer ones are dropped.
        joints: Joint count (columns of a sample).
    """

    def __init__(self, capacity: int, period_s: float, joints: int) -> None:
        self.capacity = capacity
        self.period_s = period_s
        self._t = np.full(capacity, np.nan)
        self._q = np.zeros((capacity, joints))
        self._count = 0
        self._last_s = -np.inf

    def add(self, time_s: float, q: np.ndarray) -> None:
        """Record ``q`` at ``time_s`` unless the previous sample is too recent."""
        if time_s - self._last_s >= self.period_s:
            slot = self._count % self.capacity
            self._t[slot], self._q[slot] = time_s, q
            self._count += 1
            self._last_s = time_s

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (t [s] shape (N,), q [rad] shape (N, joints)) in time order (copies)."""
        capacity, count = self.capacity, self._count
        if count <= capacity:
            return self._t[:count].copy(), self._q[:count].copy()
        order = np.roll(np.arange(capacity), -(count % capacity))
        return self._t[order], self._q[order]
