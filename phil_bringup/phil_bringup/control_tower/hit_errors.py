"""Detected impacts matched to commanded hits as they arrive, for the page's error timeline.

Either may come first (the score player reports a hit once its instant has passed, the
simulator an impact once it is detected): each waits up to ``keep_s`` for its counterpart of
the same instrument within ``window_s``, the nearest one taken, as ``plots.stats.hit_timing``
matches a whole run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

#: Largest |detected - commanded| still taken for the same stroke, s (as the hit-timing bench).
MATCH_WINDOW_S = 0.05
KEEP_S = 2.0


@dataclass(frozen=True)
class HitError:
    """One stroke: its instrument, commanded instant (s) and detected - commanded (ms)."""

    instrument: str
    time_s: float
    error_ms: float


class HitErrors:
    """Pairs commanded hits and detected impacts per instrument."""

    def __init__(self, window_s: float = MATCH_WINDOW_S, keep_s: float = KEEP_S) -> None:
        self._window_s, self._keep_s = window_s, keep_s
        self._waiting = {'commanded': defaultdict(list), 'detected': defaultdict(list)}

    def commanded(self, instrument: str, time_s: float) -> HitError | None:
        """A commanded hit; its error when its impact came already."""
        return self._arrive('commanded', 'detected', instrument, time_s)

    def detected(self, instrument: str, time_s: float) -> HitError | None:
        """A detected impact; its stroke's error when the hit came already."""
        return self._arrive('detected', 'commanded', instrument, time_s)

    def _arrive(self, kind: str, other: str, instrument: str, time_s: float) -> HitError | None:
        self._forget_before(time_s - self._keep_s)
        candidates = self._waiting[other][instrument]
        near = [t for t in candidates if abs(t - time_s) <= self._window_s]
        if not near:
            self._waiting[kind][instrument].append(time_s)
            return None
        partner = min(near, key=lambda t: abs(t - time_s))
        candidates.remove(partner)
        commanded, detected = (time_s, partner) if kind == 'commanded' else (partner, time_s)
        return HitError(instrument, commanded, round((detected - commanded) * 1e3, 3))

    def _forget_before(self, oldest_s: float) -> None:
        for by_instrument in self._waiting.values():
            for instrument, times in by_instrument.items():
                by_instrument[instrument] = [t for t in times if t >= oldest_s]
