"""Tick statistics of the bus loop: lateness and work time over fixed windows.

Recording a tick is two stores into preallocated arrays. The percentiles of a full window are
computed later, by :meth:`TickStats.summarize`, which the loop calls in spare time, and with one
sort per array: ``np.percentile`` runs dozens of Python-level steps per call and took 0.43 ms
for a window with cold caches. Two buffers alternate, so the next window records while the last
one waits for its summary.
"""

from __future__ import annotations

import math
from array import array

import numpy as np


def percentiles(values: np.ndarray, quantiles_pct: tuple[float, ...]) -> list[float]:
    """``np.percentile(values, quantiles_pct)`` (linear interpolation) from one sort."""
    ordered = np.sort(values)
    last = ordered.size - 1
    result = []
    for quantile in quantiles_pct:
        position = quantile / 100.0 * last
        low = int(position)
        high = min(low + 1, last)
        low_value = float(ordered[low])
        result.append(low_value + (float(ordered[high]) - low_value) * (position - low))
    return result


class TickStats:
    """Lateness and work-time percentiles over windows of ``window`` ticks."""

    def __init__(self, window: int) -> None:
        """Create two empty buffers of ``window`` samples."""
        self._buffers = [
            (array('d', bytes(8 * window)), array('d', bytes(8 * window))) for _ in range(2)
        ]
        self._recording = 0
        self._count = 0
        self._full: int | None = None  # buffer waiting for its summary
        self.p50_s = self.p99_s = self.max_s = math.nan
        self.work_p99_s = self.work_max_s = math.nan
        self.window = 0
        # numpy sets up sorting on its first call: do it now, not in a tick.
        percentiles(np.frombuffer(self._buffers[0][0]), (50.0, 99.0))

    @property
    def pending(self) -> bool:
        """A full window waits for :meth:`summarize`."""
        return self._full is not None

    def add(self, lateness_s: float, work_s: float) -> None:
        """Record one tick's lateness and work time [s]."""
        lateness, work = self._buffers[self._recording]
        lateness[self._count] = lateness_s
        work[self._count] = work_s
        self._count += 1
        if self._count == len(lateness):
            if self._full is not None:  # no spare time for a whole window: summarize now
                self.summarize()
            self._full = self._recording
            self._recording = 1 - self._recording
            self._count = 0

    def summarize(self) -> None:
        """Compute the percentiles of the full window, if one waits."""
        if self._full is None:
            return
        lateness, work = (np.frombuffer(b) for b in self._buffers[self._full])
        self._full = None
        self.p50_s, self.p99_s, self.max_s = percentiles(lateness, (50.0, 99.0, 100.0))
        self.work_p99_s, self.work_max_s = percentiles(work, (99.0, 100.0))
        self.window = lateness.size
