"""Reader of Phil's text score format (upstream's); `writer.format_score` writes it.

Format, one item per line, fields separated by tabs or any run of whitespace:

* `bpm<TAB>N` sets the tempo (beats per minute, 20..400) for the rows that follow;
  it may appear again later. Before the first `bpm` line the tempo is 100.
* `end` terminates the score; anything after it on the line (files often say `end<TAB>100`)
  and every later line is ignored. A row whose bar number is negative (Gen-1 `-1`) also
  terminates the score, with the same effect.
* Every other line is one event row of 8 to 10 fields:
  bar, beat, right drum, left drum, right velocity, left velocity, kick, hi-hat closed
  [, right offset, left offset]. `beat` is the time since the previous row in seconds at
  100 bpm ("beat units"); the event is struck at t_k = sum(beat_i * 100 / bpm_i). The optional
  legacy columns 9/10 are per-hand z offsets in centimetres; they are kept in the event (in
  metres) but never affect timing.
* Extension of this project: blank lines and lines whose first non-blank character is `#` are
  comments. Upstream skipped blank lines but had no comment syntax.

Strictness (upstream silently stopped at the first bad line; here every bad line is an error):
integer fields must be integer literals, `beat` a non-negative finite decimal, drum ids 0..9,
velocities 0..7, kick and hi-hat 0 or 1. A missing terminator is an error unless
`require_terminator=False` (a truncated file would otherwise play silently shortened). A score
without events is an error. A drum struck with velocity 0, or a velocity given without a drum,
occurs in upstream files (e.g. BasicFillin, ThisIsMe, ToYou), so it is accepted and reported in
`Score.warnings`; `strict=True` turns those warnings into errors for the project's own scores.

Limits (`limits`): every score is also held to physical and cost limits before anything moves:
tempo 20..400 bpm, at most 10 s between rows, at most 30 min and 20000 rows, bar numbers up to
9999, offsets up to 100 cm, rows per look-ahead window and samples at the slowest speed. An
error quotes at most 80 characters of the text, so it never carries a whole line of a file.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import NamedTuple

from phil_control.core.score.instruments import MAX_DRUM_ID, MIN_DRUM_ID, NO_DRUM
from phil_control.core.score.limits import (
    MAX_BAR,
    MAX_BPM,
    MAX_EVENT_GAP_S,
    MAX_EVENTS,
    MAX_OFFSET_CM,
    MAX_SCORE_BYTES,
    MAX_SCORE_DURATION_S,
    MIN_BPM,
    check_score_limits,
    quote,
)
from phil_control.core.score.model import (
    REFERENCE_BPM,
    BpmChange,
    Score,
    ScoreError,
    ScoreEvent,
    Terminator,
)

DEFAULT_BPM = 100.0
MIN_EVENT_FIELDS = 8
MAX_EVENT_FIELDS = 10
MIN_VELOCITY = 0
MAX_VELOCITY = 7
METRES_PER_CENTIMETRE = 0.01
BPM_KEYWORD = 'bpm'
END_KEYWORD = 'end'
COMMENT_PREFIX = '#'

FIELD_NAMES = (
    'bar',
    'beat',
    'right drum',
    'left drum',
    'right velocity',
    'left velocity',
    'kick',
    'hi-hat closed',
    'right offset',
    'left offset',
)

# Longest integer literal converted (longer ones are out of every range).
_MAX_INTEGER_DIGITS = 18
_INTEGER_PATTERN = re.compile(r'[+-]?\d+')
# Unambiguous (no nested repetition), so a long non-number is refused in linear time.
_DECIMAL_PATTERN = re.compile(r'[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?')


class _Row(NamedTuple):
    bar: int
    beat_units: float
    right_drum: int
    left_drum: int
    right_velocity: int
    left_velocity: int
    kick: bool
    hihat_closed: bool
    right_offset_m: float
    left_offset_m: float


def load_score(
    path: str | Path,
    *,
    start_bar: int | None = None,
    require_terminator: bool = True,
    strict: bool = False,
) -> Score:
    """Read and parse a score file (see the module docstring for the format).

    Args:
        path: Score file.
        start_bar: RESUME semantics; see `parse_score`.
        require_terminator: See `parse_score`.
        strict: See `parse_score`.

    Raises:
        ScoreError: The file is malformed, exceeds a limit, is larger than `MAX_SCORE_BYTES`
            or is not UTF-8 text.
        OSError: The file cannot be read.
    """
    with Path(path).open('rb') as file:
        data = file.read(MAX_SCORE_BYTES + 1)
    if len(data) > MAX_SCORE_BYTES:
        raise ScoreError(str(path), f'larger than the limit of {MAX_SCORE_BYTES} bytes')
    try:
        text = data.decode('utf-8-sig')
    except UnicodeDecodeError as error:
        raise ScoreError(str(path), f'not UTF-8 text (byte {error.start})') from None
    return parse_score(
        text,
        source=str(path),
        start_bar=start_bar,
        require_terminator=require_terminator,
        strict=strict,
    )


def parse_score(
    text: str,
    source: str = '<string>',
    *,
    start_bar: int | None = None,
    require_terminator: bool = True,
    strict: bool = False,
) -> Score:
    """Parse score text.

    Args:
        text: The whole score text.
        source: Name used in error messages and kept in `Score.source`.
        start_bar: RESUME semantics (upstream's): rows whose bar is below this are validated but
            skipped, and their beats are not accumulated, so the first kept event's time is its
            own beat. `bpm` lines among skipped rows still take effect. Upstream compares bars,
            not positions, so with repeating bar numbers later low-bar rows are skipped too.
        require_terminator: When True, text without `end` or a negative bar is an error.
        strict: When True, velocity/drum mismatches are errors instead of warnings.

    Returns:
        The parsed score.

    Raises:
        ScoreError: Malformed text or a limit of `limits` exceeded; the message names source,
            line, field and limit.
        ValueError: `start_bar` is not an integer 0..MAX_BAR.
    """
    if start_bar is not None and (
        isinstance(start_bar, bool)
        or not isinstance(start_bar, int)
        or not 0 <= start_bar <= MAX_BAR
    ):
        raise ValueError(f'start_bar must be an integer 0..{MAX_BAR}, got {quote(str(start_bar))}')
    events: list[ScoreEvent] = []
    bpm_changes: list[BpmChange] = []
    warnings: list[str] = []
    bpm = DEFAULT_BPM
    last_time_s = 0.0
    terminator = Terminator.MISSING
    last_line_number = 0
    # Split on '\n' only (like upstream getline) so line numbers match what editors show.
    for line_number, line in enumerate(text.split('\n'), start=1):
        fields = line.split()
        if not fields or fields[0].startswith(COMMENT_PREFIX):
            continue
        last_line_number = line_number
        if fields[0] == END_KEYWORD:
            terminator = Terminator.END
            break
        if fields[0] == BPM_KEYWORD:
            bpm = _parse_bpm(fields, source, line_number)
            bpm_changes.append(BpmChange(line_number, bpm, len(events)))
            continue
        bar = _parse_integer(fields, 0, source, line_number)
        if bar < 0:
            terminator = Terminator.NEGATIVE_BAR
            break
        if bar > MAX_BAR:
            raise ScoreError(
                source,
                f'{_field_label(fields, 0)} is above the limit of {MAX_BAR}',
                line_number,
                field_number=1,
            )
        row = _parse_row(fields, bar, source, line_number)
        gap_s = row.beat_units * REFERENCE_BPM / bpm
        if gap_s > MAX_EVENT_GAP_S:
            raise ScoreError(
                source,
                f'{_field_label(fields, 1)} puts {gap_s:.4g} s after the previous row at '
                f'{bpm:g} bpm; the limit is {MAX_EVENT_GAP_S:g} s',
                line_number,
                2,
            )
        for field_number, problem in _velocity_problems(row):
            error = ScoreError(source, problem, line_number, field_number)
            if strict:
                raise error
            warnings.append(str(error))
        if start_bar is not None and row.bar < start_bar:
            continue
        # Same operation order as upstream, so times (and the 2.4 window test) match bit for bit.
        time_s = row.beat_units * REFERENCE_BPM / bpm + last_time_s
        last_time_s = time_s
        if time_s > MAX_SCORE_DURATION_S:
            raise ScoreError(
                source,
                f'the score reaches {time_s:.1f} s here; the limit is {MAX_SCORE_DURATION_S:g} s '
                'at speed 1.0',
                line_number,
            )
        if len(events) >= MAX_EVENTS:
            raise ScoreError(
                source, f'more than the limit of {MAX_EVENTS} event rows', line_number
            )
        events.append(
            ScoreEvent(
                index=len(events),
                time_s=time_s,
                bpm=bpm,
                line_number=line_number,
                **row._asdict(),
            )
        )
    if not events:
        reason = 'no events' if start_bar is None else f'no events at or after bar {start_bar}'
        raise ScoreError(source, reason)
    if terminator is Terminator.MISSING and require_terminator:
        raise ScoreError(
            source,
            f"missing terminator: expected an '{END_KEYWORD}' line or a negative bar number",
            last_line_number,
        )
    score = Score(
        source=source,
        events=tuple(events),
        bpm_changes=tuple(bpm_changes),
        terminator=terminator,
        start_bar=start_bar,
        warnings=tuple(warnings),
    )
    check_score_limits(score)
    return score


def _parse_bpm(fields: list[str], source: str, line_number: int) -> float:
    if len(fields) != 2:
        raise ScoreError(
            source,
            f"a '{BPM_KEYWORD}' line needs exactly one value, found {len(fields) - 1}",
            line_number,
            field_number=min(len(fields) + 1, 3),
        )
    text = fields[1]
    if not _DECIMAL_PATTERN.fullmatch(text):
        raise ScoreError(source, f'bpm {quote(text)} is not a number', line_number, 2)
    bpm = float(text)
    if not MIN_BPM <= bpm <= MAX_BPM:
        raise ScoreError(
            source,
            f'bpm {quote(text)} is outside the limits {MIN_BPM:g}..{MAX_BPM:g} bpm',
            line_number,
            2,
        )
    return bpm


def _parse_row(fields: list[str], bar: int, source: str, line_number: int) -> _Row:
    if not MIN_EVENT_FIELDS <= len(fields) <= MAX_EVENT_FIELDS:
        raise ScoreError(
            source,
            f'an event row needs {MIN_EVENT_FIELDS} to {MAX_EVENT_FIELDS} fields, '
            f'found {len(fields)}',
            line_number,
        )
    beat_units = _parse_decimal(fields, 1, source, line_number)
    if beat_units < 0.0:
        raise ScoreError(
            source, f'beat {fields[1]!r} must not be negative', line_number, field_number=2
        )
    drums = [
        _parse_ranged(fields, i, MIN_DRUM_ID, MAX_DRUM_ID, source, line_number) for i in (2, 3)
    ]
    velocities = [
        _parse_ranged(fields, i, MIN_VELOCITY, MAX_VELOCITY, source, line_number) for i in (4, 5)
    ]
    kick, hihat_closed = (_parse_ranged(fields, i, 0, 1, source, line_number) for i in (6, 7))
    offsets_m = [
        _parse_offset_cm(fields, i, source, line_number) * METRES_PER_CENTIMETRE
        if i < len(fields)
        else 0.0
        for i in (8, 9)
    ]
    return _Row(
        bar=bar,
        beat_units=beat_units,
        right_drum=drums[0],
        left_drum=drums[1],
        right_velocity=velocities[0],
        left_velocity=velocities[1],
        kick=kick == 1,
        hihat_closed=hihat_closed == 1,
        right_offset_m=offsets_m[0],
        left_offset_m=offsets_m[1],
    )


def _velocity_problems(row: _Row) -> list[tuple[int, str]]:
    """Return (1-based velocity field, description) for each drum/velocity mismatch."""
    problems = []
    sides = (
        ('right', 5, row.right_drum, row.right_velocity),
        ('left', 6, row.left_drum, row.left_velocity),
    )
    for side, field_number, drum, velocity in sides:
        if drum != NO_DRUM and velocity == 0:
            problems.append((field_number, f'{side} drum {drum} is struck with velocity 0'))
        elif drum == NO_DRUM and velocity != 0:
            problems.append(
                (field_number, f'{side} velocity {velocity} is given without a {side} drum')
            )
    return problems


def _field_label(fields: list[str], index: int) -> str:
    return f'{FIELD_NAMES[index]} {quote(fields[index])}'


def _parse_integer(fields: list[str], index: int, source: str, line_number: int) -> int:
    text = fields[index]
    if not _INTEGER_PATTERN.fullmatch(text):
        hint = f" (or '{BPM_KEYWORD}' / '{END_KEYWORD}')" if index == 0 else ''
        raise ScoreError(
            source,
            f'{_field_label(fields, index)} is not an integer{hint}',
            line_number,
            index + 1,
        )
    if len(text.lstrip('+-')) > _MAX_INTEGER_DIGITS:
        raise ScoreError(
            source, f'{_field_label(fields, index)} is too large', line_number, index + 1
        )
    return int(text)


def _parse_ranged(
    fields: list[str], index: int, low: int, high: int, source: str, line_number: int
) -> int:
    value = _parse_integer(fields, index, source, line_number)
    if not low <= value <= high:
        raise ScoreError(
            source,
            f'{_field_label(fields, index)} is out of range {low}..{high}',
            line_number,
            index + 1,
        )
    return value


def _parse_decimal(fields: list[str], index: int, source: str, line_number: int) -> float:
    text = fields[index]
    if not _DECIMAL_PATTERN.fullmatch(text):
        raise ScoreError(
            source, f'{_field_label(fields, index)} is not a number', line_number, index + 1
        )
    value = float(text)
    if not math.isfinite(value):
        raise ScoreError(
            source, f'{_field_label(fields, index)} is not finite', line_number, index + 1
        )
    return value


def _parse_offset_cm(fields: list[str], index: int, source: str, line_number: int) -> float:
    value = _parse_decimal(fields, index, source, line_number)
    if abs(value) > MAX_OFFSET_CM:
        raise ScoreError(
            source,
            f'{_field_label(fields, index)} is beyond the limit of +-{MAX_OFFSET_CM:g} cm',
            line_number,
            index + 1,
        )
    return value
