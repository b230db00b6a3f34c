"""Reader of Phil's text score format (upstream's); `writer.format_score` writes it.

This module reads the lines in order and keeps the events; `fields` parses each line's fields.

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

from pathlib import Path

from phil_control.core.score.fields import (
    BPM_KEYWORD,
    COMMENT_PREFIX,
    END_KEYWORD,
    EventRow,
    field_label,
    parse_bpm,
    parse_integer,
    parse_row,
    velocity_problems,
)
from phil_control.core.score.limits import (
    MAX_BAR,
    MAX_EVENT_GAP_S,
    MAX_EVENTS,
    MAX_SCORE_BYTES,
    MAX_SCORE_DURATION_S,
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
    _check_start_bar(start_bar)
    reading = _ScoreReading(source, start_bar, strict)
    # Split on '\n' only (like upstream getline) so line numbers match what editors show.
    for line_number, line in enumerate(text.split('\n'), start=1):
        fields = line.split()
        if not fields or fields[0].startswith(COMMENT_PREFIX):
            continue
        if not reading.read_line(fields, line_number):
            break
    score = reading.score(require_terminator)
    check_score_limits(score)
    return score


def _check_start_bar(start_bar: int | None) -> None:
    """Refuse a `start_bar` that is no integer 0..MAX_BAR."""
    if start_bar is not None and (
        isinstance(start_bar, bool)
        or not isinstance(start_bar, int)
        or not 0 <= start_bar <= MAX_BAR
    ):
        raise ValueError(f'start_bar must be an integer 0..{MAX_BAR}, got {quote(str(start_bar))}')


class _ScoreReading:
    """What one parse has read so far: the events, tempo changes and warnings, the tempo and
    time reached and how the text ended."""

    def __init__(self, source: str, start_bar: int | None, strict: bool) -> None:
        self.source = source
        self.start_bar = start_bar
        self.strict = strict
        self.events: list[ScoreEvent] = []
        self.bpm_changes: list[BpmChange] = []
        self.warnings: list[str] = []
        self.bpm = DEFAULT_BPM
        self.last_time_s = 0.0
        self.terminator = Terminator.MISSING
        self.last_line_number = 0

    def read_line(self, fields: list[str], line_number: int) -> bool:
        """Read one line that is no comment; False when it terminates the score."""
        self.last_line_number = line_number
        if fields[0] == END_KEYWORD:
            self.terminator = Terminator.END
            return False
        if fields[0] == BPM_KEYWORD:
            self.bpm = parse_bpm(fields, self.source, line_number)
            self.bpm_changes.append(BpmChange(line_number, self.bpm, len(self.events)))
            return True
        bar = parse_integer(fields, 0, self.source, line_number)
        if bar < 0:
            self.terminator = Terminator.NEGATIVE_BAR
            return False
        self._read_event_row(fields, bar, line_number)
        return True

    def _read_event_row(self, fields: list[str], bar: int, line_number: int) -> None:
        """Check an event row; keep its event unless it lies before `start_bar`."""
        source = self.source
        if bar > MAX_BAR:
            raise ScoreError(
                source,
                f'{field_label(fields, 0)} is above the limit of {MAX_BAR}',
                line_number,
                field_number=1,
            )
        row = parse_row(fields, bar, source, line_number)
        gap_s = row.beat_units * REFERENCE_BPM / self.bpm
        if gap_s > MAX_EVENT_GAP_S:
            raise ScoreError(
                source,
                f'{field_label(fields, 1)} puts {gap_s:.4g} s after the previous row at '
                f'{self.bpm:g} bpm; the limit is {MAX_EVENT_GAP_S:g} s',
                line_number,
                2,
            )
        for field_number, problem in velocity_problems(row):
            error = ScoreError(source, problem, line_number, field_number)
            if self.strict:
                raise error
            self.warnings.append(str(error))
        if self.start_bar is not None and row.bar < self.start_bar:
            return
        self._add_event(row, line_number)

    def _add_event(self, row: EventRow, line_number: int) -> None:
        """Time the row after the previous kept one and keep its event, within the limits."""
        # Same operation order as upstream, so times (and the 2.4 window test) match bit for bit.
        time_s = row.beat_units * REFERENCE_BPM / self.bpm + self.last_time_s
        self.last_time_s = time_s
        if time_s > MAX_SCORE_DURATION_S:
            raise ScoreError(
                self.source,
                f'the score reaches {time_s:.1f} s here; the limit is {MAX_SCORE_DURATION_S:g} s '
                'at speed 1.0',
                line_number,
            )
        if len(self.events) >= MAX_EVENTS:
            raise ScoreError(
                self.source, f'more than the limit of {MAX_EVENTS} event rows', line_number
            )
        self.events.append(
            ScoreEvent(
                index=len(self.events),
                time_s=time_s,
                bpm=self.bpm,
                line_number=line_number,
                **row._asdict(),
            )
        )

    def score(self, require_terminator: bool) -> Score:
        """The score read, once the text has ended (limits not yet checked)."""
        if not self.events:
            reason = (
                'no events'
                if self.start_bar is None
                else f'no events at or after bar {self.start_bar}'
            )
            raise ScoreError(self.source, reason)
        if self.terminator is Terminator.MISSING and require_terminator:
            raise ScoreError(
                self.source,
                f"missing terminator: expected an '{END_KEYWORD}' line or a negative bar number",
                self.last_line_number,
            )
        return Score(
            source=self.source,
            events=tuple(self.events),
            bpm_changes=tuple(self.bpm_changes),
            terminator=self.terminator,
            start_bar=self.start_bar,
            warnings=tuple(self.warnings),
        )
