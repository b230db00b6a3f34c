"""The fields of one line of the score text: the format's keywords, the event row and the
parsers of each field, each checked against its range and the limits (see `parser` for the
format)."""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from phil_control.core.score.instruments import MAX_DRUM_ID, MIN_DRUM_ID, NO_DRUM
from phil_control.core.score.limits import MAX_BPM, MAX_OFFSET_CM, MIN_BPM, quote
from phil_control.core.score.model import ScoreError

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


class EventRow(NamedTuple):
    """The values of one event row, checked and in the units of `ScoreEvent`."""

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


def parse_bpm(fields: list[str], source: str, line_number: int) -> float:
    """The tempo of a `bpm` line, within `MIN_BPM`..`MAX_BPM`."""
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


def parse_row(fields: list[str], bar: int, source: str, line_number: int) -> EventRow:
    """The fields of an event row whose `bar` has been read; every field is checked."""
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
    return EventRow(
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


def velocity_problems(row: EventRow) -> list[tuple[int, str]]:
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


def field_label(fields: list[str], index: int) -> str:
    """A field as an error names it: its name and its quoted text."""
    return f'{FIELD_NAMES[index]} {quote(fields[index])}'


def parse_integer(fields: list[str], index: int, source: str, line_number: int) -> int:
    """An integer field (a literal of at most 18 digits), not yet checked against a range."""
    text = fields[index]
    if not _INTEGER_PATTERN.fullmatch(text):
        hint = f" (or '{BPM_KEYWORD}' / '{END_KEYWORD}')" if index == 0 else ''
        raise ScoreError(
            source,
            f'{field_label(fields, index)} is not an integer{hint}',
            line_number,
            index + 1,
        )
    if len(text.lstrip('+-')) > _MAX_INTEGER_DIGITS:
        raise ScoreError(
            source, f'{field_label(fields, index)} is too large', line_number, index + 1
        )
    return int(text)


def _parse_ranged(
    fields: list[str], index: int, low: int, high: int, source: str, line_number: int
) -> int:
    value = parse_integer(fields, index, source, line_number)
    if not low <= value <= high:
        raise ScoreError(
            source,
            f'{field_label(fields, index)} is out of range {low}..{high}',
            line_number,
            index + 1,
        )
    return value


def _parse_decimal(fields: list[str], index: int, source: str, line_number: int) -> float:
    text = fields[index]
    if not _DECIMAL_PATTERN.fullmatch(text):
        raise ScoreError(
            source, f'{field_label(fields, index)} is not a number', line_number, index + 1
        )
    value = float(text)
    if not math.isfinite(value):
        raise ScoreError(
            source, f'{field_label(fields, index)} is not finite', line_number, index + 1
        )
    return value


def _parse_offset_cm(fields: list[str], index: int, source: str, line_number: int) -> float:
    value = _parse_decimal(fields, index, source, line_number)
    if abs(value) > MAX_OFFSET_CM:
        raise ScoreError(
            source,
            f'{field_label(fields, index)} is beyond the limit of +-{MAX_OFFSET_CM:g} cm',
            line_number,
            index + 1,
        )
    return value
