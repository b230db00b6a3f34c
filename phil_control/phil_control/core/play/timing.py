"""Hit-timing statistics and trajectory-sampling helpers.

Errors are impact (or crossing) time minus the expected time, in seconds. `drift_s` is the
least-squares slope of the error over the expected times multiplied by the span of those times:
how much later the last hit lands than the first one relative to the score (the
TimingSummary.drift_s field).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class TimingStats:
    """Summary of hit-time errors.

    Attributes:
        hits: Number of errors.
        mean_error_s: Mean signed error, s.
        p99_abs_error_s: 99th percentile of |error|, s.
        max_abs_error_s: Largest |error|, s.
        drift_slope: Least-squares slope of error over expected time (s per s).
        drift_s: drift_slope times the span of the expected times, s.
    """

    hits: int
    mean_error_s: float
    p99_abs_error_s: float
    max_abs_error_s: float
    drift_slope: float
    drift_s: float


def timing_stats(errors_s: ArrayLike, expected_times_s: ArrayLike | None = None) -> TimingStats:
    """Summarise hit-time errors.

    Args:
        errors_s: (N,) actual minus expected time, s.
        expected_times_s: (N,) expected times, s, for the drift; None gives zero drift.

    Returns:
        The statistics (NaN except `hits` when there are no errors).

    Raises:
        ValueError: Shapes differ or values are not finite.
    """
    errors = np.asarray(errors_s, dtype=float).ravel()
    if not np.isfinite(errors).all():
        raise ValueError('hit-time errors must be finite')
    if errors.size == 0:
        nan = math.nan
        return TimingStats(0, nan, nan, nan, nan, nan)
    slope = drift = 0.0
    if expected_times_s is not None:
        expected = np.asarray(expected_times_s, dtype=float).ravel()
        if expected.shape != errors.shape or not np.isfinite(expected).all():
            raise ValueError('expected times must be finite and match the errors')
        span = float(expected.max() - expected.min())
        if errors.size >= 2 and span > 0.0:
            slope = float(np.polyfit(expected, errors, 1)[0])
            drift = slope * span
    magnitudes = np.abs(errors)
    return TimingStats(
        hits=int(errors.size),
        mean_error_s=float(errors.mean()),
        p99_abs_error_s=float(np.percentile(magnitudes, 99)),
        max_abs_error_s=float(magnitudes.max()),
        drift_slope=slope,
        drift_s=drift,
    )


def match_hits(
    expected_s: Sequence[float], actual_s: Sequence[float], tolerance_s: float
) -> tuple[np.ndarray, int, int]:
    """Pair each expected time with the nearest unused actual time within a tolerance.

    Args:
        expected_s: Expected times, s.
        actual_s: Detected or measured times, s.
        tolerance_s: Largest |actual - expected| accepted, s.

    Returns:
        Errors (actual - expected) of the matched pairs in expected order, the number of
        expected hits without a match (missed) and of actual times left over (extra).
    """
    actual = np.sort(np.asarray(actual_s, dtype=float))
    used = np.zeros(actual.shape, dtype=bool)
    errors = []
    missed = 0
    for expected in sorted(float(t) for t in expected_s):
        distances = np.where(used, np.inf, np.abs(actual - expected))
        if distances.size == 0 or distances.min() > tolerance_s:
            missed += 1
            continue
        best = int(np.argmin(distances))
        used[best] = True
        errors.append(actual[best] - expected)
    return np.array(errors), missed, int((~used).sum())


def sample_hermite(
    knot_times_s: ArrayLike, positions: ArrayLike, velocities: ArrayLike, times_s: ArrayLike
) -> np.ndarray:
    """Evaluate the cubic Hermite curve through knots (times, positions, velocities).

    This is how a trajectory chunk is meant to be read between its points. Times outside the
    knots are clamped to the first / last knot.

    Args:
        knot_times_s: (K,) strictly increasing knot times, s.
        positions: (K, J) positions.
        velocities: (K, J) velocities per second.
        times_s: (M,) query times, s.

    Returns:
        (M, J) positions.
    """
    knots = np.asarray(knot_times_s, dtype=float)
    q = np.asarray(positions, dtype=float)
    v = np.asarray(velocities, dtype=float)
    t = np.clip(np.asarray(times_s, dtype=float), knots[0], knots[-1])
    segment = np.clip(np.searchsorted(knots, t, side='right') - 1, 0, knots.size - 2)
    step = (knots[segment + 1] - knots[segment])[:, np.newaxis]
    tau = ((t - knots[segment]) / step[:, 0])[:, np.newaxis]
    h00 = 2 * tau**3 - 3 * tau**2 + 1
    h10 = tau**3 - 2 * tau**2 + tau
    h01 = -2 * tau**3 + 3 * tau**2
    h11 = tau**3 - tau**2
    return (
        h00 * q[segment]
        + h10 * step * v[segment]
        + h01 * q[segment + 1]
        + h11 * step * v[segment + 1]
    )


def downward_crossing(
    times_s: ArrayLike, heights_m: ArrayLike, level_m: float, near_s: float, window_s: float
) -> float | None:
    """When a stick tip, sampled at `times_s`, comes down to the pad height `level_m`.

    A commanded strike reaches the pad and turns back at once (the stick rebounds), so the
    samples may end just below the pad or just above it. The instant is therefore taken from
    the approach: the straight line through two falling samples is extended to the pad height.
    When a sample lies at or below the pad, the two samples before it are used. When the tip
    turns back above the pad, the line through the two samples before the lowest one is used if
    it reaches the pad before the lowest sample (that sample is already on the rebound);
    otherwise the line through the lowest sample and the one before, if it reaches the pad
    before the next sample (else the tip turned without touching).

    Args:
        times_s: (M,) sample times, s (increasing).
        heights_m: (M,) tip heights, m.
        level_m: Pad height, m.
        near_s: Expected instant, s.
        window_s: Half-width of the search window around `near_s`, s.

    Returns:
        The instant, or None when the tip does not come down to the pad in the window.
    """
    times = np.asarray(times_s, dtype=float)
    above = np.asarray(heights_m, dtype=float) - level_m
    inside = np.flatnonzero((times >= near_s - window_s) & (times <= near_s + window_s))
    for k in inside[inside >= 3]:
        if above[k - 1] <= 0.0 or above[k - 2] <= above[k - 1]:
            continue
        if above[k] <= 0.0:
            return _line_crossing(times, above, k - 2, k - 1)
        if above[k] > above[k - 1]:
            early = _line_crossing(times, above, k - 3, k - 2)
            if early is not None and early <= times[k - 1]:
                return early
            late = _line_crossing(times, above, k - 2, k - 1)
            if late is not None and late <= times[k]:
                return late
    return None


def _line_crossing(times: np.ndarray, above: np.ndarray, first: int, second: int) -> float | None:
    """Where the line through two falling samples reaches height 0, or None."""
    slope = (above[second] - above[first]) / (times[second] - times[first])
    if slope >= 0.0 or above[second] <= 0.0:
        return None
    return float(times[second] - above[second] / slope)
