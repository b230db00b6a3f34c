"""Sliding look-ahead windows over a score, sample counts and playback speed.

A window is a run of consecutive events; the motion generator produces motion only for its
first interval (event 0 -> event 1) and uses the rest as look-ahead. Windows slide by one event,
so the first intervals of all windows tile the score from t = 0 to the last event, and a score
of N events yields exactly N windows.

Speed scales the playback rate: one 5 ms control tick advances score time by 0.005 * speed, so
wall time = score time / speed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from phil_control.core.score.model import REFERENCE_BPM, Score, ScoreEvent

LOOKAHEAD_BEAT_UNITS = 2.4
SAMPLE_PERIOD_S = 0.005
CARRY_UNITS_PER_SAMPLE = 10_000
#: Playback speed range; PLAY_CTRL|speed clamps to it, as upstream.
MIN_SPEED = 0.5
MAX_SPEED = 2.0
DEFAULT_SPEED = 1.0


class SpeedError(ValueError):
    """A playback speed outside [MIN_SPEED, MAX_SPEED] or not a finite number."""


@dataclass(frozen=True)
class Window:
    """Events handed to the motion generator at once.

    Attributes:
        events: At least two events; events[0] -> events[1] is the interval to generate.
        is_tail: True for windows emitted at the end of the score, whose look-ahead is shorter
            than `LOOKAHEAD_BEAT_UNITS`.
    """

    events: tuple[ScoreEvent, ...]
    is_tail: bool

    @property
    def start_s(self) -> float:
        """Start of the first interval (time of events[0]), in seconds."""
        return self.events[0].time_s

    @property
    def end_s(self) -> float:
        """End of the first interval (time of events[1]), in seconds."""
        return self.events[1].time_s

    @property
    def interval_s(self) -> float:
        """Length of the first interval, in seconds of score time."""
        return self.end_s - self.start_s

    @property
    def target(self) -> ScoreEvent:
        """The event struck at the end of the first interval."""
        return self.events[1]

    @property
    def lookahead_beat_units(self) -> float:
        """Span of the whole window, converted back to beat units with the last event's tempo."""
        return _span_beat_units(self.events[0], self.events[-1])


@dataclass(frozen=True)
class SampleCount:
    """Result of `count_samples`.

    Attributes:
        samples: Whole 5 ms samples to generate for the interval.
        carry_units: Fraction of a sample left over, in 1e-4 sample units (0..9999), to pass to
            the next call.
    """

    samples: int
    carry_units: int


def make_dummy_event(first_event: ScoreEvent | None = None) -> ScoreEvent:
    """Return the silent event at t = 0 that precedes every score.

    Args:
        first_event: The first real event, whose bar and tempo the dummy copies (so logs and
            the window test see sensible values). None gives bar 0 at the default tempo.
    """
    bar = first_event.bar if first_event is not None else 0
    bpm = first_event.bpm if first_event is not None else REFERENCE_BPM
    return ScoreEvent(index=-1, bar=bar, beat_units=0.0, time_s=0.0, bpm=bpm)


def build_windows(score: Score | Sequence[ScoreEvent]) -> list[Window]:
    """Cut a score into sliding windows the way Gen-2 `handle_play` does.

    A dummy event at t = 0 is prepended. Events are appended one at a time; after each append,
    if (t_end - t_start) * bpm / 100 >= 2.4, with bpm the tempo of the appended event, the
    window events[start..end] is emitted and start advances by one (at most one window per
    append). After the last event the remaining windows events[start..last] are emitted while
    start < last.

    Args:
        score: A parsed score or its events in play order (times non-decreasing).

    Returns:
        One window per event, in play order.
    """
    events = score.events if isinstance(score, Score) else tuple(score)
    if not events:
        return []
    timeline = _timeline(events)
    return [
        Window(timeline[start : end + 1], is_tail=not closed)
        for start, end, closed in _bounds(timeline)
    ]


def window_bounds(events: Sequence[ScoreEvent]) -> Iterator[tuple[int, int]]:
    """(first, last) index of each window of `build_windows` in the events preceded by the
    silent event (index 0), without building the windows (cost checks of long scores).

    Args:
        events: The events in play order (times non-decreasing).
    """
    if events:
        for start, end, _closed in _bounds(_timeline(events)):
            yield start, end


def _timeline(events: Sequence[ScoreEvent]) -> tuple[ScoreEvent, ...]:
    return (make_dummy_event(events[0]), *events)


def _bounds(timeline: Sequence[ScoreEvent]) -> Iterator[tuple[int, int, bool]]:
    """(first, last, emitted by the span test) of each window; see `build_windows`."""
    start = 0
    for end in range(1, len(timeline)):
        if _span_beat_units(timeline[start], timeline[end]) >= LOOKAHEAD_BEAT_UNITS:
            yield start, end, True
            start += 1
    last = len(timeline) - 1
    while start < last:
        yield start, last, False
        start += 1


def _span_beat_units(first: ScoreEvent, last: ScoreEvent) -> float:
    # Same operation order as upstream so spans of exactly 2.4 decide the same way.
    return (last.time_s - first.time_s) * last.bpm / REFERENCE_BPM


def normalize_speed(speed: float, *, clamp: bool = True) -> float:
    """Bring a playback speed into [MIN_SPEED, MAX_SPEED].

    Args:
        speed: Requested playback rate (1.0 = as written).
        clamp: True clamps out-of-range values (PLAY_CTRL|speed behaviour); False rejects them.

    Returns:
        The speed to use.

    Raises:
        SpeedError: `speed` is not a finite number, or out of range while `clamp` is False.
    """
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not math.isfinite(speed):
        raise SpeedError(f'playback speed must be a finite number, got {speed!r}')
    if MIN_SPEED <= speed <= MAX_SPEED:
        return float(speed)
    if clamp:
        return min(max(float(speed), MIN_SPEED), MAX_SPEED)
    raise SpeedError(f'playback speed {speed!r} is outside [{MIN_SPEED}, {MAX_SPEED}]')


def score_to_wall_time(score_time_s: float, speed: float = DEFAULT_SPEED) -> float:
    """Convert a span of score time to the wall time it takes at `speed`, in seconds.

    Raises:
        SpeedError: `speed` is out of range.
    """
    return score_time_s / normalize_speed(speed, clamp=False)


def wall_to_score_time(wall_time_s: float, speed: float = DEFAULT_SPEED) -> float:
    """Convert a span of wall time at `speed` to the score time it covers, in seconds.

    Raises:
        SpeedError: `speed` is out of range.
    """
    return wall_time_s * normalize_speed(speed, clamp=False)


def score_time_step_s(speed: float = DEFAULT_SPEED) -> float:
    """Score time advanced by one 5 ms sample at `speed`, in seconds.

    Raises:
        SpeedError: `speed` is out of range.
    """
    return wall_to_score_time(SAMPLE_PERIOD_S, speed)


def count_samples(
    start_s: float, end_s: float, speed: float = DEFAULT_SPEED, carry_units: int = 0
) -> SampleCount:
    """Number of 5 ms samples for one interval, carrying the fraction to the next interval.

    n = (end - start) / 0.005 / speed. The fractional part is accumulated in 1e-4 sample units;
    when the carry reaches a whole sample, one extra sample is generated. Upstream truncates n to
    1e-4 units, which turns a float result such as 119.99999999999999 into 119 samples plus a
    9999 carry; rounding to 1e-4 units instead gives 120 and never loses time to float noise.

    Args:
        start_s: Interval start, in seconds of score time.
        end_s: Interval end, in seconds of score time (>= start_s).
        speed: Playback speed in [MIN_SPEED, MAX_SPEED].
        carry_units: Carry returned by the previous call (0 for the first interval).

    Returns:
        Samples for this interval and the carry for the next.

    Raises:
        SpeedError: `speed` is out of range.
        ValueError: The interval is negative or the carry is outside 0..9999.
    """
    speed = normalize_speed(speed, clamp=False)
    if not end_s >= start_s:
        raise ValueError(f'interval end {end_s!r} s is before its start {start_s!r} s')
    if not 0 <= carry_units < CARRY_UNITS_PER_SAMPLE:
        raise ValueError(
            f'carry must be in 0..{CARRY_UNITS_PER_SAMPLE - 1} units, got {carry_units!r}'
        )
    exact_samples = (end_s - start_s) / SAMPLE_PERIOD_S / speed
    samples, fraction_units = divmod(
        round(exact_samples * CARRY_UNITS_PER_SAMPLE), CARRY_UNITS_PER_SAMPLE
    )
    carry_units += fraction_units
    if carry_units >= CARRY_UNITS_PER_SAMPLE:
        carry_units -= CARRY_UNITS_PER_SAMPLE
        samples += 1
    return SampleCount(samples=samples, carry_units=carry_units)


def count_window_samples(
    windows: Sequence[Window], speeds: float | Sequence[float] = DEFAULT_SPEED
) -> list[int]:
    """Sample counts of consecutive windows' first intervals, with the carry threaded through.

    Args:
        windows: Windows in play order (as from `build_windows`).
        speeds: One speed for all windows, or one per window (speed is read per window).

    Returns:
        Samples per window.

    Raises:
        SpeedError: A speed is out of range.
        ValueError: `speeds` has a different length than `windows`.
    """
    if isinstance(speeds, (int, float)):
        speeds = [speeds] * len(windows)
    if len(speeds) != len(windows):
        raise ValueError(f'{len(speeds)} speeds given for {len(windows)} windows')
    carry_units = 0
    counts = []
    for window, speed in zip(windows, speeds, strict=True):
        result = count_samples(window.start_s, window.end_s, speed, carry_units)
        counts.append(result.samples)
        carry_units = result.carry_units
    return counts
