"""Writer of the project's YAML play list (the format `playlist_reader.load_play_list` reads).

Scores are played by play id only, so a set of score files is made playable by writing a play
list beside them, e.g. a folder of generated or test scores::

    (folder / 'groove.txt').write_text(text)
    play_list = load_play_list(write_play_list(folder, {'groove': 'groove.txt'}))
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from phil_control.core.score.playlist import MAX_INIT_NOTE, MIN_INIT_NOTE, PlayListError

PLAY_LIST_FILE_NAME = 'play_list.yaml'
DEFAULT_INIT_NOTES = (5, 1)


def write_play_list(
    folder: str | Path,
    scores: Mapping[str, str | Path],
    *,
    audio: Mapping[str, str] | None = None,
    init_notes: tuple[int, int] = DEFAULT_INIT_NOTES,
    file_name: str = PLAY_LIST_FILE_NAME,
) -> Path:
    """Write a play list into `folder` with one entry per play id.

    Args:
        folder: The play list's folder (every score must lie in it).
        scores: Play id -> score file, relative to `folder` (or absolute inside it).
        audio: Play id -> audio track name; ids not given play silently.
        init_notes: Drum ids 1..9 the right and left sticks start over, for every entry.
        file_name: Name of the YAML file in `folder`.

    Returns:
        The written file.

    Raises:
        PlayListError: No scores, a score outside `folder`, a track for an id without a score,
            or init notes out of range.
    """
    folder = Path(folder)
    audio = dict(audio or {})
    if not scores:
        raise PlayListError(f'{folder / file_name}: a play list needs at least one score')
    unknown = sorted(set(audio) - set(scores))
    if unknown:
        raise PlayListError(f'audio given for ids without a score: {", ".join(unknown)}')
    if not all(MIN_INIT_NOTE <= note <= MAX_INIT_NOTE for note in init_notes):
        raise PlayListError(
            f'init notes {init_notes} must be drum ids {MIN_INIT_NOTE}..{MAX_INIT_NOTE}'
        )
    document = {
        str(play_id): {
            'score': _relative(folder, Path(score)),
            'audio': audio.get(play_id, ''),
            'init_note_right': init_notes[0],
            'init_note_left': init_notes[1],
        }
        for play_id, score in scores.items()
    }
    path = folder / file_name
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding='utf-8')
    return path


def _relative(folder: Path, score: Path) -> str:
    if not score.is_absolute():
        return score.as_posix()
    try:
        return score.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        raise PlayListError(f'{score} is outside the play list folder {folder}') from None
