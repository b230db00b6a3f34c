"""Pure statistics behind the figures: hit matching and timing, tracking error, lateness.

Hit timing error = detected impact time (``impacts.jsonl``) minus commanded hit time
(``hits.csv`` ``command_time_s``), both on the robot clock. Hits and impacts are matched per
instrument: in commanded-time order, each commanded hit takes the nearest still unused impact of
the same instrument within ``window_s`` (default 50 ms). The statistics are those of the score
player's TimingSummary (``phil_control.core.play.timing.timing_stats``): mean signed error,
99th percentile of |error| (numpy's linear interpolation), max |error|, drift.

Impacts more than ``margin_s`` (1 s) outside the span of the commanded hits are not counted as
extra (the simulator appends to ``impacts.jsonl`` across runs and logs gestures too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_bringup.plots import DEFAULT_WINDOW_S
from phil_control.core.play.timing import TimingStats, timing_stats

DEFAULT_MARGIN_S = 1.0


def match_nearest(
    commanded_s: ArrayLike, detected_s: ArrayLike, window_s: float = DEFAULT_WINDOW_S
) -> list[tuple[int, int]]:
    """Pair commanded with detected times (one instrument).

    In commanded-time order, each commanded time takes the nearest unused detected time with
    ``|detected - commanded| <= window_s`` (ties: the earlier detected time).

    Args:
        commanded_s: (N,) commanded times, s (any order).
        detected_s: (M,) detected times, s (any order).
        window_s: Largest accepted |error|, s.

    Returns:
        (commanded index, detected index) pairs into the given arrays, in commanded-time order.

    Raises:
        ValueError: A negative window or non-finite times.
    """
    commanded = np.asarray(commanded_s, dtype=float).reshape(-1)
    detected = np.asarray(detected_s, dtype=float).reshape(-1)
    if not window_s >= 0:
        raise ValueError(f'matching window must be >= 0, got {window_s}')
    if not (np.isfinite(commanded).all() and np.isfinite(detected).all()):
        raise ValueError('hit and impact times must be finite')
    order = np.argsort(detected, kind='stable')
    ordered = detected[order]
    used = np.zeros(len(ordered), dtype=bool)
    pairs = []
    for index in np.argsort(commanded, kind='stable'):
        time_s = commanded[index]
        low = int(np.searchsorted(ordered, time_s - window_s, side='left'))
        high = int(np.searchsorted(ordered, time_s + window_s, side='right'))
        best, best_distance = -1, math.inf
        for candidate in range(low, high):
            distance = abs(ordered[candidate] - time_s)
            if not used[candidate] and distance <= window_s and distance < best_distance:
                best, best_distance = candidate, distance
        if best >= 0:
            used[best] = True
            pairs.append((int(index), int(order[best])))
    return pairs


@dataclass(frozen=True)
class InstrumentTiming:
    """Timing of one instrument (or of all, ``instrument == 'all'``).

    Attributes:
        commanded: Commanded hits.
        detected: Detected impacts counted (within the commanded span plus margin).
        matched: Pairs within the window.
        missed: Commanded hits without an impact.
        extra: Counted impacts without a commanded hit.
        commanded_s: (matched,) commanded times of the pairs, s, in time order.
        errors_s: (matched,) detected minus commanded, s.
        stats: ``timing_stats`` of the errors (NaN when nothing matched).
    """

    instrument: str
    commanded: int
    detected: int
    matched: int
    missed: int
    extra: int
    commanded_s: np.ndarray
    errors_s: np.ndarray
    stats: TimingStats

    def as_dict(self) -> dict:
        """JSON-ready (NaN as null)."""

        def number(value: float) -> float | None:
            return float(value) if math.isfinite(value) else None

        return {
            'commanded': self.commanded,
            'detected': self.detected,
            'matched': self.matched,
            'missed': self.missed,
            'extra': self.extra,
            'mean_error_s': number(self.stats.mean_error_s),
            'p99_abs_error_s': number(self.stats.p99_abs_error_s),
            'max_abs_error_s': number(self.stats.max_abs_error_s),
            'drift_s': number(self.stats.drift_s),
        }


@dataclass(frozen=True)
class TimingReport:
    """Per-instrument timing (kit order) and the total."""

    window_s: float
    instruments: tuple[InstrumentTiming, ...]
    total: InstrumentTiming

    def as_dict(self) -> dict:
        """The content of ``timing.json``."""
        return {
            'definition': 'error = detected impact time - commanded hit time; matched per '
            'instrument, nearest within the window',
            'window_s': self.window_s,
            'instruments': {i.instrument: i.as_dict() for i in self.instruments},
            'all': self.total.as_dict(),
        }

    def in_ms(self, digits: int = 2) -> dict:
        """The total and the instruments for a benchmark's JSON line: times in ms (``*_ms``),
        plus ``detected_share`` (matched / commanded)."""

        def converted(item: dict) -> dict:
            result = {key: value for key, value in item.items() if not key.endswith('_s')}
            result.update(
                {
                    key[:-2] + '_ms': None if value is None else round(value * 1e3, digits)
                    for key, value in item.items()
                    if key.endswith('_s')
                }
            )
            result['detected_share'] = (
                round(item['matched'] / item['commanded'], 3) if item['commanded'] else None
            )
            return result

        return {
            'all': converted(self.total.as_dict()),
            'instruments': {i.instrument: converted(i.as_dict()) for i in self.instruments},
        }


def _instrument_order(names: set[str]) -> list[str]:
    try:
        from phil_control.core.score import HIT_INSTRUMENT_IDS
    except ImportError:  # pragma: no cover
        HIT_INSTRUMENT_IDS = {}  # noqa: N806
    return sorted(names, key=lambda name: (HIT_INSTRUMENT_IDS.get(name, 1000), name))


def _timing(
    name: str, commanded: int, detected: int, commanded_s: np.ndarray, errors_s: np.ndarray
) -> InstrumentTiming:
    order = np.argsort(commanded_s, kind='stable')
    commanded_s, errors_s = commanded_s[order], errors_s[order]
    matched = len(errors_s)
    return InstrumentTiming(
        name,
        commanded,
        detected,
        matched,
        commanded - matched,
        detected - matched,
        commanded_s,
        errors_s,
        timing_stats(errors_s, commanded_s),
    )


def hit_timing(
    hit_instruments: Sequence[str],
    hit_times_s: ArrayLike,
    impact_instruments: Sequence[str],
    impact_times_s: ArrayLike,
    window_s: float = DEFAULT_WINDOW_S,
    margin_s: float = DEFAULT_MARGIN_S,
) -> TimingReport:
    """Match impacts to commanded hits per instrument and summarise the errors.

    Args:
        hit_instruments: (N,) instrument of every commanded hit.
        hit_times_s: (N,) commanded hit times, s.
        impact_instruments: (M,) instrument of every detected impact.
        impact_times_s: (M,) impact times, s.
        window_s: Matching window, s.
        margin_s: Impacts further than this outside [first hit, last hit] are ignored.

    Returns:
        The report; instruments in HIT-table order (bass, snare, ...), then unknown ones.
    """
    hit_times = np.asarray(hit_times_s, dtype=float).reshape(-1)
    impact_times = np.asarray(impact_times_s, dtype=float).reshape(-1)
    if len(hit_instruments) != len(hit_times) or len(impact_instruments) != len(impact_times):
        raise ValueError('instrument and time sequences must have the same lengths')
    if len(hit_times):
        inside = (impact_times >= hit_times.min() - margin_s) & (
            impact_times <= hit_times.max() + margin_s
        )
    else:
        inside = np.zeros(len(impact_times), dtype=bool)
    hit_names = np.asarray(hit_instruments, dtype=object)
    impact_names = np.asarray(impact_instruments, dtype=object)
    per_instrument = []
    all_commanded, all_errors = [], []
    for name in _instrument_order(set(hit_names) | set(impact_names[inside])):
        hits = hit_times[hit_names == name]
        impacts = impact_times[(impact_names == name) & inside]
        pairs = match_nearest(hits, impacts, window_s)
        commanded_s = np.array([hits[i] for i, _ in pairs], dtype=float)
        errors_s = np.array([impacts[j] - hits[i] for i, j in pairs], dtype=float)
        per_instrument.append(_timing(name, len(hits), len(impacts), commanded_s, errors_s))
        all_commanded.append(commanded_s)
        all_errors.append(errors_s)
    total = _timing(
        'all',
        len(hit_times),
        int(inside.sum()),
        np.concatenate(all_commanded) if all_commanded else np.empty(0),
        np.concatenate(all_errors) if all_errors else np.empty(0),
    )
    return TimingReport(window_s, tuple(per_instrument), total)


def format_timing(report: TimingReport) -> str:
    """The text of ``timing.txt``: one line per instrument and a total line, in ms."""

    def ms(value: float, signed: bool = False) -> str:
        if not math.isfinite(value):
            return '-'
        return f'{value * 1e3:+.2f}' if signed else f'{value * 1e3:.2f}'

    header = (
        f'{"instrument":<14}{"cmd":>5}{"det":>5}{"match":>6}{"miss":>5}{"extra":>6}'
        f'{"mean ms":>9}{"p99 ms":>8}{"max ms":>8}{"drift ms":>10}'
    )
    lines = [
        f'hit timing: detected impact - commanded hit, matched within '
        f'{report.window_s * 1e3:g} ms',
        header,
        '-' * len(header),
    ]
    for timing in (*report.instruments, report.total):
        if timing is report.total:
            lines.append('-' * len(header))
        s = timing.stats
        lines.append(
            f'{timing.instrument:<14}{timing.commanded:>5}{timing.detected:>5}'
            f'{timing.matched:>6}{timing.missed:>5}{timing.extra:>6}'
            f'{ms(s.mean_error_s, True):>9}{ms(s.p99_abs_error_s):>8}'
            f'{ms(s.max_abs_error_s):>8}{ms(s.drift_s, True):>10}'
        )
    return '\n'.join(lines) + '\n'


def tracking_stats(desired: ArrayLike, actual: ArrayLike) -> tuple[float, float]:
    """(RMS, max |desired - actual|) over the samples where both are finite (NaN if none)."""
    error = np.asarray(desired, dtype=float) - np.asarray(actual, dtype=float)
    error = error[np.isfinite(error)]
    if error.size == 0:
        return math.nan, math.nan
    return float(np.sqrt(np.mean(error**2))), float(np.max(np.abs(error)))


def lateness_summary(lateness_s: ArrayLike) -> dict[str, float]:
    """p50 / p99 / max of per-tick lateness, s (finite samples; NaN when there are none)."""
    values = np.asarray(lateness_s, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {'count': 0, 'p50_s': math.nan, 'p99_s': math.nan, 'max_s': math.nan}
    return {
        'count': int(values.size),
        'p50_s': float(np.percentile(values, 50)),
        'p99_s': float(np.percentile(values, 99)),
        'max_s': float(values.max()),
    }
