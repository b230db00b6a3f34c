"""The event timeline a play session walks through: one score, or several back to back (improv).

Event times are score times from the play start (t = 0 is the silent event before the first
row). A score appended in improv mode is chained without a pause: the previous score's
trailing rest rows and the new score's leading rest rows are dropped, and the new score's first
struck row follows the previous score's last struck row after its own beat (as upstream's
improv mode does). A PAUSE truncates the timeline at a bar start, whose event is kept silent.

Scores are found through the play list only: a play is requested by play id (`resolve_source`),
improv chains the other scores of the folder of the entry's score (`folder_source`), and every
file is opened through `PlayList.read_score`, which opens nothing outside the play list's folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from phil_control.core.score import (
    PlayList,
    PlayListError,
    Score,
    ScoreEvent,
    Terminator,
    Window,
    build_windows,
    hit_assignment,
)
from phil_control.core.score.fields import MAX_VELOCITY
from phil_control.core.score.instruments import (
    BASS_INSTRUMENT_ID,
    HIHAT_DRUM_ID,
    HIT_VELOCITY,
    Hand,
)
from phil_control.core.score.parser import REFERENCE_BPM

SCORE_SUFFIX = '.txt'
DEFAULT_INIT_RIGHT = 5
DEFAULT_INIT_LEFT = 1
HIT_EVENT_TIME_S = 1.0
HIT_EVENT_BEAT_UNITS = 0.6
HIT_INIT_DRUM = 1


@dataclass(frozen=True)
class PlaySource:
    """One score to play.

    Attributes:
        play_id: Play-list id; for a score that improv chained from its folder and that no entry
            plays, its path relative to the play list's folder.
        score_path: The score file (in the play list's folder).
        score: The parsed score (possibly read from a start bar).
        audio: Audio track name ('' = silent).
        init_note_right: Drum id 1..9 the right stick starts over.
        init_note_left: Drum id 1..9 the left stick starts over.
    """

    play_id: str
    score_path: Path
    score: Score
    audio: str = ''
    init_note_right: int = DEFAULT_INIT_RIGHT
    init_note_left: int = DEFAULT_INIT_LEFT


@dataclass(frozen=True)
class ResumePoint:
    """Where a paused play continues (the player saves it; the behavior machine keeps the
    play id and bar it reports, which come without a score path).

    Attributes:
        play_id: Play-list id (or chained score label, see `PlaySource`).
        bar: First bar not played; RESUME reads the score from this bar on.
        score_path: The score file, for a chained score that no play-list id names.
    """

    play_id: str
    bar: int
    score_path: Path | None = None


def resolve_source(play_id: str, play_list: PlayList | None, start_bar: int = 0) -> PlaySource:
    """Find and read the score of a play-list id (a path is refused and nothing is opened).

    Args:
        play_id: Play-list id.
        play_list: The play list (None: nothing can be played).
        start_bar: 0 for the whole score, else RESUME semantics (rows of earlier bars skipped).

    Raises:
        PlayListError: No play list, a path, or an unknown id; the message lists the valid ids.
        ScoreError: The score is malformed, exceeds a limit or has no events from `start_bar` on.
        OSError: The score file cannot be read.
    """
    if play_list is None:
        raise PlayListError('no play list is loaded, so no score can be played')
    entry = play_list.entry(play_id)
    return PlaySource(
        play_id=entry.play_id,
        score_path=entry.score_path,
        score=play_list.read_score(entry.score_path, start_bar=start_bar or None),
        audio=entry.audio,
        init_note_right=entry.init_note_right,
        init_note_left=entry.init_note_left,
    )


#: How far ``velocity_delta`` may shift the strike intensities (a grade 1 stroke to 7 and back).
MAX_VELOCITY_DELTA = 6


def check_velocity_delta(delta: object) -> int:
    """``delta`` as an intensity shift, or ValueError naming the bound."""
    if isinstance(delta, bool) or not isinstance(delta, int) or abs(delta) > MAX_VELOCITY_DELTA:
        raise ValueError(
            f'velocity_delta must be an integer in -{MAX_VELOCITY_DELTA}..{MAX_VELOCITY_DELTA}, '
            f'got {delta!r}'
        )
    return delta


def with_velocity_delta(source: PlaySource, delta: int) -> PlaySource:
    """``source`` with ``delta`` added to every stroke's intensity, kept within 1..7 (the Gen-1
    brain's velocity_delta: louder or softer, every stroke still sounding, rests kept)."""
    if not delta:
        return source

    def shifted(velocity: int) -> int:
        return min(MAX_VELOCITY, max(1, velocity + delta)) if velocity else 0

    events = tuple(
        replace(
            event,
            right_velocity=shifted(event.right_velocity),
            left_velocity=shifted(event.left_velocity),
        )
        for event in source.score.events
    )
    return replace(source, score=replace(source.score, events=events))


def folder_source(path: Path, play_list: PlayList, start_bar: int = 0) -> PlaySource:
    """Read a score of an entry's folder that improv chains (or RESUME continues), silent.

    Its play id is the first entry's that plays the file, else the file's path relative to the
    play list's folder; the sticks start over its first drums.

    Raises:
        PlayListError: The file lies outside the play list's folder.
        ScoreError, OSError: As `resolve_source`.
    """
    score = play_list.read_score(path, start_bar=start_bar or None)
    label = play_list.id_of(path) or play_list.inside(path).relative_to(play_list.root).as_posix()
    right, left = first_drums(score.events)
    return PlaySource(label, Path(path), score, '', right, left)


def first_drums(events: Iterable[ScoreEvent]) -> tuple[int, int]:
    """First right and left drum ids of a score (defaults 5 and 1 when a hand never plays)."""
    right = left = 0
    for event in events:
        right = right or event.right_drum
        left = left or event.left_drum
        if right and left:
            break
    return right or DEFAULT_INIT_RIGHT, left or DEFAULT_INIT_LEFT


def next_score_in_folder(
    folder: str | Path, current: str | Path | None = None, recent: Sequence[str | Path] = ()
) -> Path:
    """The score to play after `current` in an improv folder.

    Files are the folder's `*.txt` in name order. The next one after `current` (cyclically) that
    was not played recently is chosen; when every other file was played recently, the least
    recent one is chosen. `current` is never repeated unless it is the only file.

    Args:
        folder: Genre folder.
        current: The score just played (None: start with the first file).
        recent: Scores played so far, oldest first.

    Raises:
        FileNotFoundError: The folder has no score files.
    """
    folder = Path(folder)
    files = sorted(path for path in folder.glob(f'*{SCORE_SUFFIX}') if path.is_file())
    if not files:
        raise FileNotFoundError(f'no {SCORE_SUFFIX} scores in {folder}')
    if current is None:
        return files[0]
    current = Path(current).resolve()
    resolved = [path.resolve() for path in files]
    start = resolved.index(current) + 1 if current in resolved else 0
    order = [files[(start + step) % len(files)] for step in range(len(files))]
    candidates = [path for path in order if path.resolve() != current] or order
    played = [Path(path).resolve() for path in recent]
    fresh = [path for path in candidates if path.resolve() not in played]
    if fresh:
        return fresh[0]
    return min(
        candidates,
        key=lambda path: max((i for i, p in enumerate(played) if p == path.resolve()), default=-1),
    )


class Timeline:
    """Events of one play (one or more sources), with their windows.

    Attributes:
        sources: The sources in play order.
    """

    def __init__(self, source: PlaySource) -> None:
        self.sources: list[PlaySource] = [source]
        self._events: list[ScoreEvent] = [
            replace(event, index=index) for index, event in enumerate(source.score.events)
        ]
        self._owners: list[int] = [0] * len(self._events)
        self._windows: list[Window] | None = None

    @property
    def events(self) -> Sequence[ScoreEvent]:
        """The events in play order (index = position)."""
        return self._events

    @property
    def windows(self) -> list[Window]:
        """Windows of the whole timeline; window i ends at event i."""
        if self._windows is None:
            self._windows = build_windows(self._events)
        return self._windows

    def source_of(self, event_index: int) -> PlaySource:
        """The source an event comes from."""
        return self.sources[self._owners[event_index]]

    def last_source_start(self) -> int:
        """Index of the first event of the last appended source."""
        return self._owners.index(len(self.sources) - 1)

    def chain(self, source: PlaySource, keep_until: int) -> None:
        """Append a score without a pause after the last struck event.

        Args:
            source: The next score.
            keep_until: Index of the last event that must stay (already generated); trailing
                rest rows after max(last struck event, keep_until) are dropped.

        Raises:
            ValueError: The new score has no struck row.
        """
        first = next((i for i, e in enumerate(source.score.events) if not e.is_rest), None)
        if first is None:
            raise ValueError(f'{source.score_path}: no struck row to chain')
        last_struck = max(
            (i for i, event in enumerate(self._events) if not event.is_rest), default=0
        )
        self._truncate(max(last_struck, keep_until) + 1)
        kept = source.score.events[first:]
        head = kept[0]
        lead_s = head.beat_units * REFERENCE_BPM / head.bpm
        origin = self._events[-1].time_s + lead_s - head.time_s
        owner = len(self.sources)
        self.sources.append(source)
        for event in kept:
            self._events.append(
                replace(event, index=len(self._events), time_s=origin + event.time_s)
            )
            self._owners.append(owner)
        self._windows = None

    def ensure_release(self, beat_units: float) -> None:
        """End with a silent row `beat_units` after a struck last row, so the sticks rebound
        and the pedals return before DRUM END (no change when the score ends with rests)."""
        last = self._events[-1]
        if last.is_rest:
            return
        self._events.append(
            ScoreEvent(
                index=len(self._events),
                bar=last.bar,
                beat_units=beat_units,
                time_s=last.time_s + beat_units * REFERENCE_BPM / last.bpm,
                bpm=last.bpm,
                hihat_closed=last.hihat_closed,
            )
        )
        self._owners.append(self._owners[-1])
        self._windows = None

    def end_silently_at(self, event_index: int) -> None:
        """Make `event_index` the silent last event (PAUSE at a bar start)."""
        self._truncate(event_index + 1)
        last = self._events[-1]
        self._events[-1] = replace(
            last, right_drum=0, left_drum=0, right_velocity=0, left_velocity=0, kick=False
        )
        self._windows = None

    def bar_start_after(self, time_s: float) -> int | None:
        """Index of the first event at or after `time_s` that starts a bar (or a new source)."""
        for index in range(1, len(self._events)):
            event, before = self._events[index], self._events[index - 1]
            if event.time_s < time_s:
                continue
            if event.bar != before.bar or self._owners[index] != self._owners[index - 1]:
                return index
        return None

    def _truncate(self, count: int) -> None:
        del self._events[count:]
        del self._owners[count:]
        while len(self.sources) - 1 > (self._owners[-1] if self._owners else 0):
            self.sources.pop()
        self._windows = None


def hit_source(
    instrument: str, velocity: int = HIT_VELOCITY, hand: str | None = None
) -> PlaySource:
    """A one-row source for `HIT|<instrument>`: the strike at t = 1.0 s with beat 0.6 (as upstream
    builds it), sticks starting over the snare.

    Args:
        instrument: HIT name ('bass', 'snare', ..., 'open hihat').
        velocity: Intensity 1..7.
        hand: 'right' / 'left' to override upstream's hand rule (not for the bass drum).

    Raises:
        UnknownInstrumentError: Unknown name.
        ValueError: Bad velocity or hand.
    """
    assignment = hit_assignment(instrument)
    if isinstance(velocity, bool) or not isinstance(velocity, int) or not 1 <= velocity <= 7:
        raise ValueError(f'HIT velocity must be an integer 1..7, got {velocity!r}')
    limb = assignment.hand
    if hand is not None:
        if hand not in ('right', 'left'):
            raise ValueError(f"hand must be 'right', 'left' or None, got {hand!r}")
        if assignment.instrument_id == BASS_INSTRUMENT_ID:
            raise ValueError('the bass drum is played by the pedal; give no hand')
        limb = Hand(hand)
    drum = assignment.instrument_id if limb is not Hand.KICK else 0
    event = ScoreEvent(
        index=0,
        bar=0,
        beat_units=HIT_EVENT_BEAT_UNITS,
        time_s=HIT_EVENT_TIME_S,
        bpm=REFERENCE_BPM,
        right_drum=drum if limb is Hand.RIGHT else 0,
        left_drum=drum if limb is Hand.LEFT else 0,
        right_velocity=velocity if limb is Hand.RIGHT else 0,
        left_velocity=velocity if limb is Hand.LEFT else 0,
        kick=limb is Hand.KICK,
        hihat_closed=assignment.instrument_id == HIHAT_DRUM_ID,
    )
    score = Score(f'HIT {instrument}', (event,), (), Terminator.END)
    return PlaySource('', Path(), score, '', HIT_INIT_DRUM, HIT_INIT_DRUM)
