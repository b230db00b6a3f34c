"""Debounce of one limb's impacts: one stroke gives one impact.

After an impact the limb is re-armed only once its signal (stick-tip height or pedal angle) has
risen above the hit level by a margin and a minimum interval has passed. The state carries over
from one batch of samples to the next.
"""

from __future__ import annotations

import math

import numpy as np


class Arming:
    """Debounce state of one limb: armed, or waiting to rise above the last hit level."""

    def __init__(self) -> None:
        self.armed = True
        self.rose = False
        self.last_time_s = -math.inf
        self.last_level = 0.0
        self.start = 0  # first sample of the current batch not yet checked for the rise

    def try_accept(
        self,
        index: int,
        time_s: float,
        level: float,
        signal: np.ndarray,
        margin: float,
        min_interval_s: float,
    ) -> bool:
        """Accept a candidate impact at sample ``index`` if the limb is armed (then disarm)."""
        if not self.armed:
            if not self.rose and index >= self.start:
                self.rose = bool(np.max(signal[self.start : index + 1]) > self.last_level + margin)
            self.armed = self.rose and time_s - self.last_time_s >= min_interval_s
        if not self.armed:
            return False
        self.armed, self.rose = False, False
        self.last_time_s, self.last_level, self.start = time_s, level, index + 1
        return True

    def end_batch(self, signal: np.ndarray, margin: float) -> None:
        """Note a rise in the rest of the batch after the last accepted impact."""
        if not self.armed and not self.rose and self.start < len(signal):
            self.rose = bool(np.max(signal[self.start :]) > self.last_level + margin)
