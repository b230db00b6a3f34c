"""Physical and cost limits every score is checked against when it is read, before anything moves.

The numbers leave a wide margin around real scores: the upstream and project scores use 64..160
bpm, gaps of at most 2.5 s between rows, at most 1473 rows and 5 min, at most 22 rows per
look-ahead window and bar numbers below 200.

The generation cost of a play follows from these limits: one window is generated per row, a
window holds at most `MAX_WINDOW_EVENTS` rows, and its first interval is at most
`MAX_WINDOW_SAMPLES` 5 ms samples long at the slowest speed (`MAX_PLAY_SAMPLES` for the whole
score). A window is generated in one go (about 80 us per sample here), so the longest gap
between rows is what bounds the time one timer callback of the score player can take: 10 s of
score time is 4000 samples at half speed; a longer rest is written as several rest rows.
`check_score_limits` checks the whole-score limits; the parser checks the row limits as it reads
each row.
"""

from __future__ import annotations

from phil_control.core.score.model import Score, ScoreError, ScoreEvent
from phil_control.core.score.windows import MIN_SPEED, count_samples, window_bounds

#: Slowest tempo a `bpm` line may set, beats per minute.
MIN_BPM = 20.0
#: Fastest tempo a `bpm` line may set, beats per minute.
MAX_BPM = 400.0
#: Longest time between two consecutive rows, seconds of score time (at speed 1.0).
MAX_EVENT_GAP_S = 10.0
#: Longest score, seconds of score time (30 min at speed 1.0).
MAX_SCORE_DURATION_S = 1800.0
#: Most event rows a score may have.
MAX_EVENTS = 20_000
#: Highest bar number.
MAX_BAR = 9_999
#: Largest magnitude of the legacy per-hand z offsets (columns 9/10), centimetres.
MAX_OFFSET_CM = 100.0
#: Most rows in one look-ahead window (rows the motion generator looks at for one interval).
MAX_WINDOW_EVENTS = 64
#: Most 5 ms samples in one window's interval at the slowest speed (10 s at half speed).
MAX_WINDOW_SAMPLES = 4_000
#: Most 5 ms samples of a whole score at the slowest speed (30 min at half speed).
MAX_PLAY_SAMPLES = 720_000
#: Largest score file that is read, bytes.
MAX_SCORE_BYTES = 2 * 1024 * 1024
#: Longest piece of input text quoted in an error message, characters.
MAX_QUOTED_CHARS = 80


def quote(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """`repr` of at most `limit` characters of `text`, marked when cut (for error messages)."""
    if len(text) <= limit:
        return repr(text)
    return f'{text[:limit]!r}... ({len(text)} characters)'


def check_score_limits(score: Score) -> None:
    """Check the whole-score cost limits: rows per look-ahead window, samples per window and in
    total at the slowest speed.

    Raises:
        ScoreError: A limit is exceeded; the message names the source, the line and the limit.
    """
    events = score.events
    if not events:
        return
    total_samples = carry_units = 0
    previous_time_s = 0.0
    for start, end in window_bounds(events):
        # Window bounds index the timeline with the silent event before the first row at 0.
        first = events[max(start - 1, 0)]
        if end - start + 1 > MAX_WINDOW_EVENTS:
            raise ScoreError(
                score.source,
                f'{end - start + 1} rows fall within one look-ahead window from this row on; '
                f'the limit is {MAX_WINDOW_EVENTS} rows',
                first.line_number,
            )
        target = events[start]
        counted = count_samples(previous_time_s, target.time_s, MIN_SPEED, carry_units)
        previous_time_s, carry_units = target.time_s, counted.carry_units
        total_samples += counted.samples
        if counted.samples > MAX_WINDOW_SAMPLES:
            _raise_samples(
                score,
                target,
                f'{counted.samples} samples for the interval ending at this row',
                MAX_WINDOW_SAMPLES,
            )
        if total_samples > MAX_PLAY_SAMPLES:
            _raise_samples(
                score, target, f'{total_samples} samples up to this row', MAX_PLAY_SAMPLES
            )


def _raise_samples(score: Score, event: ScoreEvent, what: str, limit: int) -> None:
    raise ScoreError(
        score.source,
        f'{what} at speed {MIN_SPEED:g}; the limit is {limit} samples of 5 ms',
        event.line_number,
    )
