"""Play lists: which score, audio track and starting drums a `PLAY|<id>` command uses.

This module holds the loaded list (`PlayList`, `PlayListEntry`) and its rules; `playlist_reader`
reads the project's YAML file and upstream's `play_list.json` into it.

Play ids must be strings without '/', '\\' or '..'. A play is requested by play id only
(`PlayList.entry`): a path is refused, nothing is opened for it, and the refusal lists the valid
ids. A bad entry of the file is kept as one of the list's `problems`, and only its id is refused.

Confinement: the play list's folder (`PlayList.root`) holds every score a play may open. An entry
whose score is absolute, goes up with '..' or resolves (through a symlink) outside that folder is
an error when the list is loaded, and `PlayList.read_score` checks again when a score is opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from phil_control.core.score.instruments import MAX_DRUM_ID
from phil_control.core.score.limits import quote
from phil_control.core.score.model import Score
from phil_control.core.score.parser import load_score

MIN_INIT_NOTE = 1
MAX_INIT_NOTE = MAX_DRUM_ID
#: Text a play id may not contain: what makes a path of it.
PATH_MARKERS = ('/', '\\', '..')


class PlayListError(ValueError):
    """A malformed play list or an unknown play id; the message names file and entry."""


@dataclass(frozen=True)
class PlayListEntry:
    """One playable piece.

    Attributes:
        play_id: The id used in `PLAY|<id>`.
        score_path: Absolute path of the score file.
        audio: Audio track name, '' for silent playing.
        init_note_right: Drum id 1..9 the right stick moves over before playing.
        init_note_left: Drum id 1..9 the left stick moves over before playing.
        aliases: Other names this entry is played by (e.g. the Gen-1 brain's song names).
    """

    play_id: str
    score_path: Path
    audio: str
    init_note_right: int
    init_note_left: int
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlayList:
    """A loaded play list, a read-only mapping from play id to entry.

    Attributes:
        source: The play list file.
        entries: Entries by play id, in file order.
        root: The folder every score must lie in (resolved); default the play list's folder.
        problems: What is wrong with each bad entry (file, line, problem), by play id (or by
            ``line N`` where the id could not be read); these ids are refused.
        labels: How a refusal lists a bad entry whose id comes from text that did not parse
            (``line N``: the file may not be a play list, its text is not repeated).
    """

    source: Path
    entries: Mapping[str, PlayListEntry]
    root: Path | None = None
    problems: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, 'entries', MappingProxyType(dict(self.entries)))
        object.__setattr__(self, 'problems', MappingProxyType(dict(self.problems)))
        object.__setattr__(self, 'labels', MappingProxyType(dict(self.labels)))
        root = self.root if self.root is not None else Path(self.source).parent
        object.__setattr__(self, 'root', Path(root).resolve())

    def __getitem__(self, play_id: str) -> PlayListEntry:
        return self.entry(play_id)

    def __contains__(self, play_id: object) -> bool:
        return play_id in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, play_id: object) -> PlayListEntry:
        """Return the entry of a play id or of one of its aliases (nothing is opened).

        Raises:
            PlayListError: Not a string, a path or an unknown id; the message lists the known
                ids and quotes at most 80 characters of the request.
        """
        if isinstance(play_id, str) and play_id in self.entries:
            return self.entries[play_id]
        for entry in self.entries.values():
            if play_id in entry.aliases:
                return entry
        if isinstance(play_id, str) and play_id in self.problems:
            raise PlayListError(f'play id {quote(play_id)} refused: {self.problems[play_id]}')
        text = play_id if isinstance(play_id, str) else repr(play_id)
        if is_path_like(text):
            problem = f'{quote(text)} is not a play id: scores are played by id, not by path'
        else:
            problem = f'unknown play id {quote(text)}'
        known = ', '.join(self.entries) or '(none)'
        bad = ', '.join(self.labels.get(key, key) for key in self.problems)
        bad = f'; refused (bad entries): {bad}' if bad else ''
        raise PlayListError(f'{self.source}: {problem}; known ids: {known}{bad}')

    def inside(self, path: str | Path) -> Path:
        """The resolved `path`, checked to lie in `root`.

        Raises:
            PlayListError: It resolves outside `root` (also through a symlink).
        """
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.root):
            raise PlayListError(
                f"{self.source}: {path} is outside the play list's folder {self.root}"
            )
        return resolved

    def read_score(self, path: str | Path, *, start_bar: int | None = None) -> Score:
        """Parse a score file that lies in `root` (the only way a play opens a score).

        Args:
            path: The score file (an entry's `score_path` or a file of its folder).
            start_bar: RESUME semantics; see `parse_score`.

        Raises:
            PlayListError: The file lies outside `root`.
            ScoreError: The score is malformed or exceeds a limit.
            OSError: The file cannot be read.
        """
        return load_score(self.inside(path), start_bar=start_bar)

    def id_of(self, path: str | Path) -> str | None:
        """The first play id whose score is `path` (None when no entry plays it)."""
        resolved = Path(path).resolve()
        return next(
            (key for key, entry in self.entries.items() if entry.score_path.resolve() == resolved),
            None,
        )


def is_path_like(text: str) -> bool:
    """True when `text` contains '/', '\\' or '..' (what a path has and a play id may not)."""
    return any(marker in text for marker in PATH_MARKERS)
