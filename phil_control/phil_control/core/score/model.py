"""Data model of a parsed score: events, tempo changes, the score and its error type.

Times are in seconds, tempi in beats per minute, beats in "beat units" (seconds at 100 bpm),
offsets in metres. Drum ids are score drum ids (see `instruments`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from phil_control.core.score.instruments import NO_DRUM

#: The tempo at which one beat unit is one second, beats per minute.
REFERENCE_BPM = 100.0


class ScoreError(ValueError):
    """A malformed score; the message names the source, line and field.

    Attributes:
        source: File name or source label given to the parser.
        line_number: 1-based line of the problem, or None for whole-file problems.
        field_number: 1-based field index within the line, or None.
        reason: What was wrong, without the location.
    """

    def __init__(
        self,
        source: str,
        reason: str,
        line_number: int | None = None,
        field_number: int | None = None,
    ) -> None:
        location = source
        if line_number is not None:
            location += f', line {line_number}'
        if field_number is not None:
            location += f', field {field_number}'
        super().__init__(f'{location}: {reason}')
        self.source = source
        self.reason = reason
        self.line_number = line_number
        self.field_number = field_number


class Terminator(enum.Enum):
    """How the score text ended."""

    END = 'end'
    NEGATIVE_BAR = 'negative bar'
    MISSING = 'missing'


@dataclass(frozen=True, slots=True)
class ScoreEvent:
    """One score row: what is struck at one instant.

    Attributes:
        index: 0-based position in `Score.events`.
        bar: Measure number (may repeat or go back in upstream files).
        beat_units: Time since the previous event, in seconds at 100 bpm.
        time_s: Absolute event time from the start of the score, in seconds.
        bpm: Tempo in effect for this row, in beats per minute.
        right_drum: Score drum id 0..9 struck by the right stick (0 = none).
        left_drum: Score drum id 0..9 struck by the left stick (0 = none).
        right_velocity: Right strike intensity 0..7.
        left_velocity: Left strike intensity 0..7.
        kick: True when the bass drum is struck.
        hihat_closed: True when the hi-hat pedal is closed.
        right_offset_m: Legacy right-hand z offset, in metres (0 when absent).
        left_offset_m: Legacy left-hand z offset, in metres (0 when absent).
        line_number: 1-based source line (0 for synthetic events).
    """

    index: int
    bar: int
    beat_units: float
    time_s: float
    bpm: float
    right_drum: int = NO_DRUM
    left_drum: int = NO_DRUM
    right_velocity: int = 0
    left_velocity: int = 0
    kick: bool = False
    hihat_closed: bool = False
    right_offset_m: float = 0.0
    left_offset_m: float = 0.0
    line_number: int = 0

    @property
    def is_rest(self) -> bool:
        """True when nothing is struck (no stick drum and no kick)."""
        return self.right_drum == NO_DRUM and self.left_drum == NO_DRUM and not self.kick


@dataclass(frozen=True, slots=True)
class BpmChange:
    """A `bpm` line.

    Attributes:
        line_number: 1-based source line.
        bpm: New tempo, in beats per minute.
        first_event_index: Index of the first event played at this tempo (may equal the event
            count when no event follows).
    """

    line_number: int
    bpm: float
    first_event_index: int


@dataclass(frozen=True)
class Score:
    """A parsed score.

    Attributes:
        source: File name or label used in messages.
        events: The events in play order.
        bpm_changes: Every `bpm` line read before the terminator, in order.
        terminator: How the text ended.
        start_bar: The RESUME bar the score was read from, or None for a full read.
        warnings: Accepted oddities (velocity without drum and vice versa), one per problem.
    """

    source: str
    events: tuple[ScoreEvent, ...]
    bpm_changes: tuple[BpmChange, ...]
    terminator: Terminator
    start_bar: int | None = None
    warnings: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        """Time of the last event, in seconds."""
        return self.events[-1].time_s if self.events else 0.0

    @property
    def first_bar(self) -> int:
        """Bar number of the first event."""
        return self.events[0].bar

    @property
    def last_bar(self) -> int:
        """Highest bar number of any event."""
        return max(event.bar for event in self.events)

    @property
    def total_bars(self) -> int:
        """Number of distinct bar numbers among the events."""
        return len({event.bar for event in self.events})
