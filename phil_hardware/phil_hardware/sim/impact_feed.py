"""Impact detection inside the device loop: physics samples in, batched; impacts out.

The loop hands every physics sample over; once a batch is long enough the detector runs on it,
the impacts are kept (readable from any thread) and every listener is called with each of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from phil_hardware.sim.impacts import Impact, ImpactDetector


class ImpactFeed:
    """Batches samples for a detector, keeps its impacts and tells the listeners.

    Args:
        detector: The detector, or None for no detection (samples are then ignored).
        batch_s: Samples are handed to the detector in batches this long [s].
    """

    def __init__(self, detector: ImpactDetector | None, batch_s: float) -> None:
        self._detector = detector
        self._batch_s = batch_s
        self._batch_t: list[float] = []
        self._batch_q: list[np.ndarray] = []
        self._impacts: list[Impact] = []
        self._listeners: list[Callable[[Impact], None]] = []
        self._lock = threading.Lock()

    def add(self, time_s: float, q: np.ndarray) -> None:
        """Take one physics sample (device loop); detect once the batch is long enough."""
        if self._detector is None:
            return
        self._batch_t.append(time_s)
        self._batch_q.append(q)
        if time_s - self._batch_t[0] >= self._batch_s:
            self.flush()

    def flush(self) -> list[Impact]:
        """Run detection on the samples not yet examined; return (and store) new impacts."""
        if self._detector is None or not self._batch_t:
            return []
        found = self._detector.feed(np.array(self._batch_t), np.vstack(self._batch_q))
        self._batch_t, self._batch_q = [], []
        if found:
            with self._lock:
                self._impacts.extend(found)
            for impact in found:
                for listener in self._listeners:
                    listener(impact)
        return found

    def impacts(self) -> list[Impact]:
        """Impacts detected so far (a copy)."""
        with self._lock:
            return list(self._impacts)

    def add_listener(self, listener: Callable[[Impact], None]) -> None:
        """Call ``listener(impact)`` from the device loop for every new impact."""
        self._listeners.append(listener)
