"""A General MIDI drum track (channel 10 note-ons) turned into Phil's score format.

The notes map to score drums as upstream's later MIDI parser maps them (FACTS 11.9): snare
37/38/40, floor 41/43, mid 45/47, top 48/50, hi-hat 42 (closed) and 46 (open), pedal hi-hat 44
(closes the hi-hat, strikes nothing), ride 51/53/59, right crash 52/55, left crash 49/57, kick
35/36; velocity grade 1 + round(6 v / 127). Times are kept in quarter notes, so the tempo map
only sets each row's ``bpm`` (a row's beat is 0.6 per quarter note at any tempo). Notes within
50 ms of a row's first note join it. Hands (:func:`assign_hands`): the snare alone is the left
stick's, every other drum alone the right's, as in the project's scores; two drums at once go
left to right by their place on the kit (the hi-hat over the snare is the one crossing allowed,
as upstream's converter allows it); a stroke that comes too soon after the same hand's last one
goes to the other hand when that is free and no crossing. A count-in bar (bar 0) comes first and
a bar of rests last. What is left out is reported with its bar and beat.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from phil_control.core.score.instruments import HIHAT_DRUM_ID, NO_DRUM
from phil_control.core.score.model import ScoreEvent

DRUM_CHANNEL = 9  # MIDI channel 10, counted from 0
HAND_DRUMS = {37: 1, 38: 1, 40: 1, 41: 2, 43: 2, 45: 3, 47: 3, 48: 4, 50: 4, 42: 5, 46: 5,
              51: 6, 53: 6, 59: 6, 52: 7, 55: 7, 49: 8, 57: 8}  # fmt: skip
KICK_NOTES = frozenset({35, 36})
OPEN_HIHAT_NOTE, PEDAL_HIHAT_NOTE = 46, 44
CLOSED_HIHAT_NOTES = frozenset({42, 44})
CHORD_WINDOW_S = 0.05
BEAT_UNITS_PER_QUARTER = 0.6  # seconds per quarter note at 100 bpm
#: Left to right on the kit (hi-hat; left crash and snare; top tom; mid tom; ride and floor
#: tom; right crash): two drums struck together go left and right by this.
KIT_PLACE = {5: 1, 8: 2, 1: 2, 4: 3, 3: 4, 6: 5, 2: 5, 7: 6}
SNARE = 1
#: The same stick striking again sooner than this gives the stroke to the other stick, s.
SAME_HAND_GAP_S = 0.12


class MidiImportError(ValueError):
    """A MIDI file that cannot be turned into a score (names the file and the problem)."""


@dataclass(frozen=True)
class DrumNote:
    """One note-on of the drum channel."""

    time_s: float
    beat: float  # quarter notes since the start of the file
    note: int
    velocity: int


@dataclass(frozen=True)
class MidiDrums:
    """What a MIDI file holds for the score: its drum notes, tempo map and bar length."""

    notes: tuple[DrumNote, ...]
    tempi: tuple[tuple[float, float], ...]  # (beat, bpm) in beat order, the first at beat 0
    beats_per_bar: int = 4

    @property
    def first_bar(self) -> int:
        """The file's bar (from 0) of the first note: the score's bar 1."""
        return math.floor(min(note.beat for note in self.notes) / self.beats_per_bar)

    def bpm_at(self, beat: float) -> float:
        bpm = self.tempi[0][1]
        for at, value in self.tempi:
            if at > beat + 1e-9:
                break
            bpm = value
        return bpm

    def where(self, beat: float) -> str:
        """'bar 3, beat 2.5' of a beat of the file, as the score numbers it (its bar 1 holds
        the first note; beats from 1)."""
        bar, within = divmod(beat, self.beats_per_bar)
        return f'bar {int(bar) - self.first_bar + 1}, beat {within + 1:g}'

    def beat_of(self, events: list[ScoreEvent], index: int) -> float:
        """The file's beat of score row ``index`` (the count-in bar starts a bar before the
        first note's)."""
        quarters = sum(e.beat_units for e in events[: index + 1]) / BEAT_UNITS_PER_QUARTER
        return quarters - 1 + (self.first_bar - 1) * self.beats_per_bar


@dataclass
class ImportReport:
    """What the conversion left out or changed, one line each with its bar and beat."""

    dropped: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def read_midi(path: Path, bpm: float | None = None) -> MidiDrums:
    """The drum notes and tempo map of a MIDI file (``bpm`` replaces the file's tempo map).

    Raises:
        MidiImportError: Not a MIDI file, or no note-on on channel 10.
    """
    import mido

    try:
        midi = mido.MidiFile(path)
    except (OSError, EOFError, ValueError, KeyError, IndexError) as error:
        raise MidiImportError(f'{path}: not a MIDI file mido can read ({error})') from None
    per_beat = midi.ticks_per_beat
    tick, seconds, tempo = 0, 0.0, 500_000
    notes, tempi, beats_per_bar = [], [(0.0, 120)], 4
    for message in mido.merge_tracks(midi.tracks):
        tick += message.time
        seconds += mido.tick2second(message.time, per_beat, tempo)
        if message.type == 'set_tempo':
            tempo = message.tempo
            tempi = [t for t in tempi if t[0] < tick / per_beat - 1e-9]
            tempi.append((tick / per_beat, _tidy_bpm(mido.tempo2bpm(tempo))))
        elif message.type == 'time_signature' and tick == 0:
            beats_per_bar = max(1, round(message.numerator * 4 / message.denominator))
        elif message.type == 'note_on' and message.channel == DRUM_CHANNEL and message.velocity:
            notes.append(DrumNote(seconds, tick / per_beat, message.note, message.velocity))
    if not notes:
        raise MidiImportError(f'{path}: no drum notes (note-ons on MIDI channel 10)')
    if bpm is not None:
        if not (math.isfinite(bpm) and 20 <= bpm <= 400):
            raise MidiImportError(f"--bpm {bpm}: outside the scores' 20..400 bpm")
        tempi = [(0.0, _tidy_bpm(bpm))]
    return MidiDrums(tuple(notes), tuple(tempi), beats_per_bar)


def _tidy_bpm(bpm: float) -> float:
    """A tempo as a score writes it: whole when it is (a MIDI tempo is in microseconds per
    quarter note, so 120 bpm comes back as 120.00000000000001 or so), else to 0.001 bpm."""
    rounded = round(bpm, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def velocity_grade(velocity: int) -> int:
    """MIDI velocity 1..127 -> score velocity 1..7."""
    return 1 + round(6 * velocity / 127)


@dataclass
class _Row:
    beat: float
    time_s: float
    drums: dict[int, int] = field(default_factory=dict)  # drum -> velocity grade
    kick: bool = False
    hihat_closed: bool | None = None  # set by a hi-hat note of the row


def _rows(drums: MidiDrums, report: ImportReport) -> list[_Row]:
    """Notes grouped into rows (chords within ``CHORD_WINDOW_S``); unknown notes reported."""
    rows: list[_Row] = []
    for note in sorted(drums.notes, key=lambda n: n.time_s):
        if not rows or note.time_s - rows[-1].time_s > CHORD_WINDOW_S:
            rows.append(_Row(note.beat, note.time_s))
        row = rows[-1]
        if note.note in KICK_NOTES:
            row.kick = True
        elif note.note == PEDAL_HIHAT_NOTE:
            row.hihat_closed = True
        elif note.note in HAND_DRUMS:
            drum = HAND_DRUMS[note.note]
            row.drums[drum] = max(row.drums.get(drum, 0), velocity_grade(note.velocity))
            if drum == HIHAT_DRUM_ID:
                row.hihat_closed = note.note in CLOSED_HIHAT_NOTES
        else:
            report.dropped.append(f'{drums.where(note.beat)}: note {note.note} has no drum here')
    return rows


def _place(drum: int) -> int:
    return KIT_PLACE.get(drum, 3)


def _allowed(left: int, right: int) -> bool:
    """Two sticks over drums ``left`` and ``right`` (0: anywhere) without crossing the arms
    (the hi-hat over the snare excepted)."""
    if NO_DRUM in (left, right):
        return True
    if (left, right) == (SNARE, HIHAT_DRUM_ID):
        return True
    return _place(left) <= _place(right)


def assign_hands(rows: list[_Row], drums: MidiDrums, report: ImportReport) -> list[tuple]:
    """``(row, right_drum, right_velocity, left_drum, left_velocity)`` for every row."""
    last_s = {'right': -math.inf, 'left': -math.inf}
    over = {'right': NO_DRUM, 'left': NO_DRUM}
    assigned = []
    for row in rows:
        ordered = sorted(row.drums, key=lambda d: (-row.drums[d], d))
        for drum in ordered[2:]:
            report.dropped.append(f'{drums.where(row.beat)}: drum {drum} (three at once)')
        hands: dict[str, int] = {}
        if len(ordered) >= 2:
            a, b = ordered[0], ordered[1]
            left, right = (a, b) if _allowed(a, b) else (b, a)
            if {a, b} == {SNARE, HIHAT_DRUM_ID}:
                left, right = SNARE, HIHAT_DRUM_ID
            hands = {'left': left, 'right': right}
        elif ordered:
            drum = ordered[0]
            hand = 'left' if drum == SNARE else 'right'
            other = 'right' if hand == 'left' else 'left'
            crowded = row.time_s - last_s[hand] < SAME_HAND_GAP_S
            pair = (drum, over['right']) if other == 'left' else (over['left'], drum)
            if crowded and row.time_s - last_s[other] >= SAME_HAND_GAP_S and _allowed(*pair):
                report.moved.append(f'{drums.where(row.beat)}: drum {drum} to the {other} stick')
                hand = other
            hands = {hand: drum}
        for hand, drum in hands.items():
            last_s[hand], over[hand] = row.time_s, drum
        right, left = hands.get('right', NO_DRUM), hands.get('left', NO_DRUM)
        assigned.append((row, right, row.drums.get(right, 0), left, row.drums.get(left, 0)))
    return assigned


def midi_to_events(drums: MidiDrums, report: ImportReport) -> list[ScoreEvent]:
    """The score rows: a count-in bar, the notes, rests where a bar would otherwise be empty
    (no row is more than a bar from the last), and a bar of rests at the end."""
    per_bar = drums.beats_per_bar
    assigned = assign_hands(_rows(drums, report), drums, report)
    first_bar = drums.first_bar
    timeline: list[tuple[float, tuple | None]] = [
        (first_bar * per_bar - per_bar + beat, None) for beat in range(per_bar)
    ]
    for item in assigned:
        gap_bar = math.floor(timeline[-1][0] / per_bar) + 1
        while gap_bar * per_bar < item[0].beat - 1e-9 and gap_bar * per_bar - timeline[-1][0] >= 1:
            timeline.append((gap_bar * per_bar, None))  # a rest on each empty downbeat
            gap_bar += 1
        timeline.append((item[0].beat, item))
    end_bar = math.floor(timeline[-1][0] / per_bar) + 1
    timeline += [(end_bar * per_bar + beat, None) for beat in range(per_bar)]
    events, previous_beat, hihat_closed = [], timeline[0][0] - 1, True
    for index, (beat, item) in enumerate(timeline):
        fields = {}
        if item is not None:
            row, right, right_velocity, left, left_velocity = item
            if row.hihat_closed is not None:
                hihat_closed = row.hihat_closed
            fields = {
                'right_drum': right,
                'left_drum': left,
                'right_velocity': right_velocity,
                'left_velocity': left_velocity,
                'kick': row.kick,
            }
        bar = math.floor((beat + 1e-9) / per_bar) - first_bar + 1
        units = round((beat - previous_beat) * BEAT_UNITS_PER_QUARTER, 6)
        events.append(
            ScoreEvent(
                index, bar, units, 0.0, drums.bpm_at(beat), hihat_closed=hihat_closed, **fields
            )
        )
        previous_beat = beat
    return events


def without_stroke(event: ScoreEvent, hand: str) -> ScoreEvent:
    """``event`` without the ``hand`` ('right' or 'left') stick's stroke."""
    return replace(event, **{f'{hand}_drum': NO_DRUM, f'{hand}_velocity': 0})


def strokes(events: Iterable[ScoreEvent]) -> int:
    """Stick strokes and kicks in ``events``."""
    return sum((e.right_drum != NO_DRUM) + (e.left_drum != NO_DRUM) + e.kick for e in events)


#: Most strokes the playability pass takes out before it gives up.
MAX_CHANGES = 400


def make_playable(
    events: list[ScoreEvent], check, drums: MidiDrums, report: ImportReport
) -> list[ScoreEvent]:
    """Take strokes out, one at a time, until ``check(events)`` passes.

    ``check`` plays the score as the robot would (the score player's whole-score check: IK,
    joint limits and speeds) and raises ``ScoreInfeasible`` naming the bar it cannot play and
    why. From that bar (or the one before, when it has no stroke) the most crowded stroke (the
    shortest time since the same limb's previous one) of the limb the reason names (a stick's
    arm or wrist, a pedal) is taken out, else of any limb; each is reported with its bar and
    beat.

    Raises:
        MidiImportError: Still not playable after ``MAX_CHANGES`` strokes, or a problem no
            stroke explains (e.g. the move to the start pose).
    """
    from phil_control.core.play.feasibility import ScoreInfeasible

    events = list(events)
    for _ in range(MAX_CHANGES):
        try:
            check(events)
            return events
        except ScoreInfeasible as problem:
            # A bar of rests can fail too: moving away from the strokes just before it.
            choice = _most_crowded(events, problem.bar, problem.reason) or (
                _most_crowded(events, problem.bar - 1, problem.reason)
                if problem.bar is not None
                else None
            )
            if choice is None:
                raise MidiImportError(f'not playable: {problem}') from None
            index, limb = choice
            drum = 'kick' if limb == 'kick' else f'drum {getattr(events[index], limb + "_drum")}'
            events[index] = (
                replace(events[index], kick=False)
                if limb == 'kick'
                else without_stroke(events[index], limb)
            )
            report.dropped.append(
                f'{drums.where(drums.beat_of(events, index))}: {drum}'
                f'{"" if limb == "kick" else f" ({limb} stick)"} dropped (too fast to play: '
                f'{problem.reason})'
            )
    raise MidiImportError(f'still not playable after taking out {MAX_CHANGES} strokes')


def _limbs_named(reason: str) -> tuple[str, ...]:
    if 'pedal' in reason:
        return ('kick',)
    return tuple(hand for hand in ('right', 'left') if f'{hand}_' in reason)


def _most_crowded(
    events: list[ScoreEvent], bar: int | None, reason: str
) -> tuple[int, str] | None:
    """(row, limb) of the stroke in ``bar`` nearest after the same limb's previous stroke,
    among the limbs ``reason`` names (all when it names none or they have no stroke there)."""
    time_s, last = 0.0, {'right': -math.inf, 'left': -math.inf, 'kick': -math.inf}
    candidates: list[tuple[float, int, str]] = []
    for index, event in enumerate(events):
        time_s += event.beat_units * 100.0 / event.bpm
        struck = {
            'right': event.right_drum != NO_DRUM,
            'left': event.left_drum != NO_DRUM,
            'kick': event.kick,
        }
        for limb, hit in struck.items():
            if hit:
                if event.bar == bar:
                    candidates.append((time_s - last[limb], -index, limb))
                last[limb] = time_s
    named = [c for c in candidates if c[2] in _limbs_named(reason)]
    pool = named or candidates
    if not pool:
        return None
    _gap, negative_index, limb = min(pool)
    return -negative_index, limb
