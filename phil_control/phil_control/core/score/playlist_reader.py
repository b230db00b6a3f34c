"""Readers of play lists: the project's YAML file and upstream's `play_list.json`.

Project format (`scores/play_list.yaml`): a YAML mapping from play id to an entry::

    BF:
      score: upstream/BasicFillin.txt   # path relative to the play list's folder
      audio: ''                         # audio track name; empty or omitted = silent
      init_note_right: 8                # drum id 1..9 the right stick starts over
      init_note_left: 1                 # drum id 1..9 the left stick starts over
      aliases: [TIM]                    # optional: other names PLAY takes for this entry

Play ids and aliases must be strings (quote ids YAML would read as numbers or booleans, e.g.
'ON', '1') without '/', '\\' or '..'. Unknown entry keys are errors, so typos do not pass
silently. An alias that is already a play id or another entry's alias makes its entry a problem
(PLAY would be ambiguous).

One bad entry never takes the others with it: a malformed entry (a YAML syntax error in it, a
missing or unknown key, a bad value, a missing score file) becomes one of the list's `problems`
(file, line and what is wrong), the other entries load, and `PlayList.entry` refuses only the
bad id, with its problem. A YAML syntax error is confined to the top-level entry it is in: the
file is then read entry by entry. Only a file that is no mapping of entries at all is an error.

Confinement (see `playlist`): an entry whose score is absolute, goes up with '..' or resolves
(through a symlink) outside the play list's folder is an error when the list is loaded.

Upstream format (`drumrobot_server/config/play_list.json`, read for compatibility):
`{"play_list": {id: {"score": name, "audio": name, "init_note_r": n, "init_note_l": n}}}`,
where `name` is a file stem under `drumrobot_server/data/scores/` (`<name>.txt`); that
scores folder is the list's `root`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from phil_control.core.score.limits import quote
from phil_control.core.score.playlist import (
    MAX_INIT_NOTE,
    MIN_INIT_NOTE,
    PlayList,
    PlayListEntry,
    PlayListError,
    is_path_like,
)

UPSTREAM_PLAY_LIST_KEY = 'play_list'
UPSTREAM_SCORE_SUFFIX = '.txt'


class PlayListFile:
    """The play list of one file, read again whenever the file changed (size or time), so that
    it is checked at start-up and on every PLAY and a fixed entry plays without a restart.

    Attributes:
        play_list: The list last read (None when the file itself is unusable).
        error: Why the file is unusable ('' when it was read).
    """

    def __init__(self, path: str | Path, loader: Callable[[Path], PlayList] | None = None) -> None:
        self.path = Path(path)
        self._loader = loader or load_play_list
        self._stamp: tuple[int, int] | None = None
        self.play_list: PlayList | None = None
        self.error = ''

    def refresh(self) -> bool:
        """Read the file again if it changed; True when it was read (its problems may have
        changed: the caller reports them)."""
        try:
            status = self.path.stat()
            stamp = (status.st_mtime_ns, status.st_size)
        except OSError:
            stamp = None
        if stamp is not None and stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.play_list, self.error = self._loader(self.path), ''
        except Exception as error:  # anything a user's file makes the reader raise
            self.play_list, self.error = None, f'play list unusable: {error}'
        return True

    def report(self) -> list[str]:
        """One line per problem of the list last read (the file's, or each bad entry's)."""
        if self.play_list is None:
            return [self.error]
        return [
            f'play list entry refused: {problem}' for problem in self.play_list.problems.values()
        ]


@dataclass(frozen=True)
class _EntryKeys:
    score: str
    audio: str
    init_note_right: str
    init_note_left: str
    aliases: str | None = None  # no aliases in upstream's format

    @property
    def required(self) -> tuple[str, ...]:
        return (self.score, self.init_note_right, self.init_note_left)

    @property
    def allowed(self) -> frozenset[str]:
        optional = (self.audio,) if self.aliases is None else (self.audio, self.aliases)
        return frozenset((self.score, self.init_note_right, self.init_note_left, *optional))


_PROJECT_KEYS = _EntryKeys('score', 'audio', 'init_note_right', 'init_note_left', 'aliases')
_UPSTREAM_KEYS = _EntryKeys('score', 'audio', 'init_note_r', 'init_note_l')


def load_play_list(path: str | Path, *, require_scores: bool = True) -> PlayList:
    """Load the project's YAML play list.

    Args:
        path: The YAML file.
        require_scores: When True, every entry's score file must exist.

    Returns:
        The play list, score paths resolved against the play list's folder.

    Raises:
        PlayListError: Malformed YAML or entry, or a missing score file.
        OSError: The file cannot be read.
    """
    path = Path(path)
    text = path.read_text(encoding='utf-8')
    try:
        document = yaml.safe_load(text)
        lines = _key_lines(text)
        problems: dict[str, str] = {}
        labels: dict[str, str] = {}
    except yaml.YAMLError as error:
        document, lines, problems, labels = _load_entry_by_entry(path, text, error)
    base = path.resolve().parent

    def resolve_score(play_id: str, score: str) -> Path:
        return _confined(_where(path, play_id, lines), base, score)

    play_list = _build_play_list(
        path, document, _PROJECT_KEYS, resolve_score, require_scores, base, lines, problems
    )
    return replace(play_list, labels=labels) if labels else play_list


def _key_lines(text: str) -> dict[str, int]:
    """Line (1-based) of each top-level key of a document that parses."""
    node = yaml.compose(text)
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        key.value: key.start_mark.line + 1
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }


def _load_entry_by_entry(
    path: Path, text: str, error: yaml.YAMLError
) -> tuple[dict, dict[str, int], dict[str, str], dict[str, str]]:
    """After a YAML syntax error: each top-level entry (from a line that starts at column 0
    up to the next) parsed on its own; the ones with the error become problems, kept under
    the text before their first ':' (what a PLAY of them names) but labelled and described
    by their line only (their text is not repeated: the file may not be a play list)."""
    rows = text.splitlines(keepends=True)
    starts = [
        number
        for number, row in enumerate(rows)
        if row[:1] not in ('', ' ', '\t', '#', '\n', '\r') and not row.startswith(('---', '...'))
    ]
    if not starts:
        raise PlayListError(f'{path}: not valid YAML{_yaml_problem(error)}') from None
    document: dict = {}
    lines: dict[str, int] = {}
    problems: dict[str, str] = {}
    labels: dict[str, str] = {}
    for first, end in zip(starts, [*starts[1:], len(rows)], strict=True):
        block = ''.join(rows[first:end])
        play_id = block.split(':', 1)[0].strip().strip('\'"') or f'line {first + 1}'
        try:
            part = yaml.safe_load(block)
        except yaml.YAMLError as block_error:
            problems[play_id] = (
                f'{path}, line {first + 1}: the entry there is not valid YAML'
                f'{_yaml_problem(block_error, first)}'
            )
            labels[play_id] = f'line {first + 1}'
            continue
        if not isinstance(part, dict) or len(part) != 1:
            problems[play_id] = f'{path}, line {first + 1}: expected one "id: entry" here'
            labels[play_id] = f'line {first + 1}'
            continue
        key = next(iter(part))
        document[key] = part[key]
        lines[str(key)] = first + 1
    return document, lines, problems, labels


def _where(path: Path, play_id: str, lines: Mapping[str, int]) -> str:
    line = lines.get(str(play_id))
    return f'{path}, line {line}: entry {play_id!r}' if line else f'{path}: entry {play_id!r}'


def load_upstream_play_list(
    path: str | Path,
    *,
    scores_dir: str | Path | None = None,
    require_scores: bool = True,
) -> PlayList:
    """Load an upstream `play_list.json` (Gen-2 drumrobot_server format).

    Args:
        path: The JSON file, normally `drumrobot_server/config/play_list.json`.
        scores_dir: Folder holding `<score>.txt`; default `../data/scores` from the JSON file's
            folder, as upstream resolves it.
        require_scores: When True, every entry's score file must exist.

    Raises:
        PlayListError: Malformed JSON or entry, or a missing score file.
        OSError: The file cannot be read.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding='utf-8'))
    except json.JSONDecodeError as error:  # its message quotes no text
        raise PlayListError(f'{path}: not valid JSON: {error}') from None
    if not isinstance(document, dict) or set(document) != {UPSTREAM_PLAY_LIST_KEY}:
        raise PlayListError(
            f'{path}: expected an object with the single key {UPSTREAM_PLAY_LIST_KEY!r}'
        )
    base = (
        Path(scores_dir).resolve()
        if scores_dir is not None
        else path.resolve().parent.parent / 'data' / 'scores'
    )

    def resolve_score(play_id: str, score: str) -> Path:
        return _confined(_where(path, play_id, {}), base, f'{score}{UPSTREAM_SCORE_SUFFIX}')

    return _build_play_list(
        path,
        document[UPSTREAM_PLAY_LIST_KEY],
        _UPSTREAM_KEYS,
        resolve_score,
        require_scores,
        base,
        {},
        {},
    )


def _confined(entry: str, base: Path, score: str) -> Path:
    """`base / score`, refused unless it stays in `base` (no absolute path, no '..', no symlink
    out of it); ``entry`` names it in the message."""
    where = f"{entry}: 'score'"
    relative = Path(score)
    if relative.is_absolute():
        problem = f"must be relative to the play list's folder {base}"
    elif '..' in relative.parts:
        problem = f"must not go up with '..' (it must stay in {base})"
    elif not (resolved := (base / relative).resolve()).is_relative_to(base):
        problem = f"resolves to {resolved}, outside the play list's folder {base}"
    else:
        return base / relative
    raise PlayListError(f'{where} {problem}, got {quote(score)}')


def _yaml_problem(error: yaml.YAMLError, line_offset: int = 0) -> str:
    """Where and what, without the quoted text of the file a YAML error message carries."""
    mark = getattr(error, 'problem_mark', None)
    where = (
        f' at line {mark.line + 1 + line_offset}, column {mark.column + 1}'
        if mark is not None
        else ''
    )
    problem = getattr(error, 'problem', None)
    return f'{where}: {quote(problem)}' if problem else where


def _build_play_list(
    path: Path,
    document: Any,
    keys: _EntryKeys,
    resolve_score: Callable[[str, str], Path],
    require_scores: bool,
    root: Path,
    lines: Mapping[str, int],
    problems: dict[str, str],
) -> PlayList:
    if not isinstance(document, dict) or not (document or problems):
        raise PlayListError(f'{path}: expected a non-empty mapping of play id to entry')
    entries = {}
    names = set(document)  # play ids and the aliases taken so far: each names one entry
    for play_id, raw_entry in document.items():
        try:
            entry = _checked_entry(
                path, play_id, raw_entry, keys, resolve_score, require_scores, lines
            )
            taken = [alias for alias in entry.aliases if alias in names]
            if taken:
                raise PlayListError(
                    f'{_where(path, play_id, lines)}: alias(es) {", ".join(map(quote, taken))} '
                    'already name an entry'
                )
            names.update(entry.aliases)
            entries[play_id] = entry
        except PlayListError as error:
            problems[str(play_id)] = str(error)
    return PlayList(source=path, entries=entries, root=root, problems=problems)


def _checked_entry(
    path: Path,
    play_id: Any,
    raw_entry: Any,
    keys: _EntryKeys,
    resolve_score: Callable[[str, str], Path],
    require_scores: bool,
    lines: Mapping[str, int],
) -> PlayListEntry:
    where = _where(path, play_id, lines)
    if not isinstance(play_id, str) or not play_id.strip():
        raise PlayListError(
            f'{where}: play id {play_id!r} must be a non-empty string (quote it in YAML)'
        )
    if is_path_like(play_id):
        raise PlayListError(
            f"{where}: play id {quote(play_id)} must not contain '/', '\\' or '..'"
        )
    entry = _build_entry(where, play_id, raw_entry, keys, resolve_score)
    if require_scores and not entry.score_path.is_file():
        raise PlayListError(f'{where}: score file not found: {entry.score_path}')
    return entry


def _build_entry(
    where: str,
    play_id: str,
    raw_entry: Any,
    keys: _EntryKeys,
    resolve_score: Callable[[str, str], Path],
) -> PlayListEntry:
    if not isinstance(raw_entry, dict):
        raise PlayListError(f'{where}: expected a mapping, got {type(raw_entry).__name__}')
    unknown = sorted(str(key) for key in set(raw_entry) - keys.allowed)
    if unknown:
        raise PlayListError(
            f'{where}: unknown key(s) {", ".join(unknown)}; '
            f'allowed: {", ".join(sorted(keys.allowed))}'
        )
    missing = [key for key in keys.required if key not in raw_entry]
    if missing:
        raise PlayListError(f'{where}: missing key(s) {", ".join(missing)}')
    score = raw_entry[keys.score]
    if not isinstance(score, str) or not score.strip():
        raise PlayListError(f'{where}: {keys.score!r} must be a non-empty string, got {score!r}')
    audio = raw_entry.get(keys.audio)
    if audio is None:
        audio = ''
    if not isinstance(audio, str):
        raise PlayListError(f'{where}: {keys.audio!r} must be a string, got {audio!r}')
    return PlayListEntry(
        play_id=play_id,
        score_path=resolve_score(play_id, score),
        audio=audio,
        init_note_right=_init_note(where, keys.init_note_right, raw_entry),
        init_note_left=_init_note(where, keys.init_note_left, raw_entry),
        aliases=_aliases(where, keys.aliases, raw_entry),
    )


def _aliases(where: str, key: str | None, raw_entry: dict[Any, Any]) -> tuple[str, ...]:
    value = raw_entry.get(key, []) if key is not None else []
    if not isinstance(value, list) or not all(
        isinstance(alias, str) and alias.strip() and not is_path_like(alias) for alias in value
    ):
        raise PlayListError(
            f"{where}: {key!r} must be a list of names without '/', '\\' or '..', got {value!r}"
        )
    return tuple(value)


def _init_note(where: str, key: str, raw_entry: dict[Any, Any]) -> int:
    value = raw_entry[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlayListError(f'{where}: {key!r} must be an integer drum id, got {value!r}')
    if not MIN_INIT_NOTE <= value <= MAX_INIT_NOTE:
        raise PlayListError(
            f'{where}: {key!r} = {value} is out of range {MIN_INIT_NOTE}..{MAX_INIT_NOTE}'
        )
    return value
