"""Reader and writer for Phil's text score format (FACTS 11.1).

Format, one item per line, fields separated by tabs or any run of whitespace:

* `bpm<TAB>N` sets the tempo (beats per minute, positive and finite) for the rows that follow;
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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from phil_control.core.score.instruments import MAX_DRUM_ID, MIN_DRUM_ID, NO_DRUM
from phil_control.core.score.model import BpmChange, Score, ScoreError, ScoreEvent, Terminator

DEFAULT_BPM = 100.0
REFERENCE_BPM = 100.0
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

_INTEGER_PATTERN = re.compile(r'[+-]?\d+')
_DECIMAL_PATTERN = re.compile(r'[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?')


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
        ScoreError: The file is malformed.
        OSError: The file cannot be read.
    """
    text = Path(path).read_text(encoding='utf-8-sig')
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
        start_bar: RESUME semantics (FACTS 8): rows whose bar is below this are validated but
            skipped, and their beats are not accumulated, so the first kept event's time is its
            own beat. `bpm` lines among skipped rows still take effect. Upstream compares bars,
            not positions, so with repeating bar numbers later low-bar rows are skipped too.
        require_terminator: When True, text without `end` or a negative bar is an error.
        strict: When True, velocity/drum mismatches are errors instead of warnings.

    Returns:
        The parsed score.

    Raises:
        ScoreError: Malformed text; the message names source, line and field.
        ValueError: `start_bar` is not a non-negative integer.
    """
    if start_bar is not None and (
        isinstance(start_bar, bool) or not isinstance(start_bar, int) or start_bar < 0
    ):
        raise ValueError(f'start_bar must be a non-negative integer, got {start_bar!r}')
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
        row = _parse_row(fields, bar, source, line_number)
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
    return Score(
        source=source,
        events=tuple(events),
        bpm_changes=tuple(bpm_changes),
        terminator=terminator,
        start_bar=start_bar,
        warnings=tuple(warnings),
    )


def format_score(events: Iterable[ScoreEvent], *, with_offsets: bool | None = None) -> str:
    """Write events in the score text format; `parse_score` reads the result back.

    A `bpm` line is written before the first event and wherever the tempo changes. Numbers are
    written in their shortest exact form, so beats and tempi round-trip bit for bit.

    Args:
        events: Events in play order (`index`, `time_s` and `line_number` are not written).
        with_offsets: Write the legacy offset columns 9/10 (centimetres). None writes them only
            when some event has a non-zero offset.

    Returns:
        The score text, ending with `end` and a newline.
    """
    events = tuple(events)
    if with_offsets is None:
        with_offsets = any(event.right_offset_m or event.left_offset_m for event in events)
    lines: list[str] = []
    current_bpm: float | None = None
    for event in events:
        if event.bpm != current_bpm:
            lines.append(f'{BPM_KEYWORD}\t{_format_decimal(event.bpm)}')
            current_bpm = event.bpm
        fields = [
            str(event.bar),
            _format_decimal(event.beat_units),
            str(event.right_drum),
            str(event.left_drum),
            str(event.right_velocity),
            str(event.left_velocity),
            str(int(event.kick)),
            str(int(event.hihat_closed)),
        ]
        if with_offsets:
            fields.append(_format_decimal(event.right_offset_m / METRES_PER_CENTIMETRE))
            fields.append(_format_decimal(event.left_offset_m / METRES_PER_CENTIMETRE))
        lines.append('\t'.join(fields))
    lines.append(END_KEYWORD)
    return '\n'.join(lines) + '\n'


def _format_decimal(value: float) -> str:
    return repr(float(value))


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
        raise ScoreError(source, f'bpm {text!r} is not a number', line_number, 2)
    bpm = float(text)
    if not (math.isfinite(bpm) and bpm > 0.0):
        raise ScoreError(source, f'bpm {text!r} must be positive and finite', line_number, 2)
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
        _parse_decimal(fields, i, source, line_number) * METRES_PER_CENTIMETRE
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
    return f'{FIELD_NAMES[index]} {fields[index]!r}'


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
