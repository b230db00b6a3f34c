"""Writer of Phil's text score format (see `parser`); `parse_score` reads the text back."""

from __future__ import annotations

from collections.abc import Iterable

from phil_control.core.score.fields import BPM_KEYWORD, END_KEYWORD, METRES_PER_CENTIMETRE
from phil_control.core.score.model import ScoreEvent


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
