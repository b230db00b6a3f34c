"""`phil import-midi song.mid`: a General MIDI drum track as a score the robot can play.

The conversion is ``phil_control/core/score/midi_import.py``'s; here the result is played
once as the robot would play it (the score player's whole-score check: the robot's IK, joint
limits and speeds, from the ready pose) and strokes it cannot reach in time are taken out,
each reported with its bar and beat. The file is written only when that passed and the strict
score parser reads it back; ``--play-list-id`` also adds the play-list entry. Exit 0, or 2
with a line naming the file and the problem (nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from phil_control.core.score import load_play_list, parse_score
from phil_control.core.score.midi_import import (
    ImportReport,
    MidiImportError,
    make_playable,
    midi_to_events,
    read_midi,
    strokes,
)
from phil_control.core.score.writer import format_score

PLAY_LIST_NAME = 'play_list.yaml'
CHECK_ID = 'import'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('midi', type=Path, help='a MIDI file with a drum track (channel 10)')
    parser.add_argument('--bpm', type=float, default=None, help="instead of the file's tempi")
    parser.add_argument(
        '--out', type=Path, default=None, help='score file (default: <midi name>.txt here)'
    )
    parser.add_argument(
        '--play-list-id',
        default=None,
        help="also add this entry to the play list of the score's genre folder's parent",
    )


def import_midi(args: argparse.Namespace) -> int:
    out = args.out or Path(args.midi.stem + '.txt')
    try:
        play_list = _play_list_for(out, args.play_list_id) if args.play_list_id else None
        drums = read_midi(args.midi, args.bpm)
        report = ImportReport()
        events = midi_to_events(drums, report)
        notes = strokes(events)
        events = make_playable(events, _playable_check(), drums, report)
        text = format_score(events)
        parse_score(text, str(out), strict=True)  # what the score player will read
    except (MidiImportError, ValueError, OSError) as error:
        print(f'phil import-midi: {error}', file=sys.stderr)
        return 2
    _write_atomically(out, text)
    for line in report.moved:
        print(f'moved: {line}')
    for line in report.dropped:
        print(f'dropped: {line}')
    print(
        f'{out}: {len(events)} rows, {strokes(events)} of {notes} strokes kept '
        f'({len(report.dropped)} notes dropped, {len(report.moved)} moved)'
    )
    if play_list is not None:
        _add_entry(play_list, args.play_list_id, out)
        print(f'{play_list}: PLAY|{args.play_list_id} plays it')
    return 0


def _playable_check():
    """``check(events)``: the score player's whole-score check of ``events`` from the ready
    pose (raises ``ScoreInfeasible`` with the bar and score time it cannot play)."""
    from phil_control.core.motion.validation import JointTable
    from phil_control.core.play import PlayRobot, PlaySession
    from phil_control.core.score.playlist_writer import write_play_list
    from phil_description.core import default_robot_model

    model = default_robot_model()
    robot, table = PlayRobot.from_model(model), JointTable.from_model(model)
    ready = model.poses['ready']

    def check(events) -> None:
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, 'score.txt').write_text(format_score(events))
            play_list = load_play_list(write_play_list(folder, {CHECK_ID: 'score.txt'}))
            session = PlaySession(robot, play_list, joint_table=table)
            session.check(CHECK_ID, current_positions_rad=ready)

    return check


def _play_list_for(out: Path, play_id: str) -> Path:
    """The play list of ``out`` (in its folder's parent, scores/<genre>/x.txt, or its own),
    checked to take ``play_id``."""
    for folder in (out.resolve().parent.parent, out.resolve().parent):
        play_list = folder / PLAY_LIST_NAME
        if play_list.is_file():
            if play_id in load_play_list(play_list, require_scores=False):
                raise ValueError(f'{play_list}: {play_id!r} is already an entry')
            return play_list
    raise ValueError(f'--play-list-id: no {PLAY_LIST_NAME} beside {out} or in its parent folder')


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + '.partial')
    partial.write_text(text, encoding='utf-8')
    os.replace(partial, path)


def _add_entry(play_list: Path, play_id: str, score: Path) -> None:
    """Append the entry (comments and order kept); the play list is read back, and left as it
    was when it does not read."""
    before = play_list.read_text(encoding='utf-8')
    relative = os.path.relpath(score.resolve(), play_list.parent)
    entry = (
        f'\n# Imported from MIDI (phil import-midi)\n{play_id}:\n  score: {relative}\n'
        f"  audio: ''\n  init_note_right: 5\n  init_note_left: 1\n"
    )
    play_list.write_text(before.rstrip('\n') + '\n' + entry, encoding='utf-8')
    try:
        load_play_list(play_list)
    except (ValueError, OSError):
        play_list.write_text(before, encoding='utf-8')
        raise
