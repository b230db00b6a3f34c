"""A song imported from MIDI plays through the whole graph against the simulators: the rock
beat of ``testing.midi_files`` converted by ``phil import-midi`` with its play-list entry, then
``PLAY``ed to its end; the strokes land on the pads the MIDI notes name, at the notes' times
(the score's times after the count-in bar)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_import_midi import _import

from phil_bringup.plots import runlog
from phil_bringup.plots.stats import hit_timing
from phil_bringup.testing.graph import RunningGraph
from phil_bringup.testing.midi_files import rock_beat
from phil_bringup.testing.midi_files import write_drum_midi as _midi

pytest.importorskip('rclpy')

pytestmark = pytest.mark.timeout(400)

# The count-in bar's 4 rows come a quarter note apart, the first a quarter note after the
# score's start (as in every score here): the first note is 5 quarter notes in, at 120 bpm.
COUNT_IN_S = 5 * 0.5
INSTRUMENT_OF = {42: 'closed hihat', 38: 'snare', 36: 'bass', 49: 'left crash'}


def test_an_imported_rock_beat_plays_on_the_notes_times(tmp_path):
    scores = tmp_path / 'scores'
    (scores / 'rock').mkdir(parents=True)
    notes = rock_beat(4)
    first = _import(_midi(tmp_path / 'x.mid', notes), '--out', scores / 'rock' / 'x.txt')
    assert first.returncode == 0, first.stderr
    (scores / 'play_list.yaml').write_text(
        "x:\n  score: rock/x.txt\n  audio: ''\n  init_note_right: 5\n  init_note_left: 1\n"
    )
    done = _import(_midi(tmp_path / 'rock.mid', notes), '--out', scores / 'rock' / 'midi.txt',
                   '--play-list-id', 'midi_rock')  # fmt: skip
    assert done.returncode == 0 and '0 notes dropped' in done.stdout, done.stdout + done.stderr
    with RunningGraph(tmp_path / 'run', ('--play-list', str(scores / 'play_list.yaml'))) as robot:
        robot.start_robot()
        robot.wait_state('IDLE', 30.0)
        assert robot.line('PLAY|midi_rock') == 'OK|PLAY'
        robot.wait_state('PLAYING', 10.0)
        robot.wait_state('IDLE', 60.0)
        time.sleep(1.0)  # the last impacts flushed
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
    hits = runlog.load_hits(robot.log_dir / 'hits.csv')
    # Every note was commanded at its own time (score time after the count-in), on its pad.
    commanded = sorted(
        (round(t - COUNT_IN_S, 4), name)
        for t, name in zip(hits.score_time_s, hits.instrument, strict=True)
    )
    expected = sorted((round(beat * 0.5, 4), INSTRUMENT_OF[note]) for beat, note, _ in notes)
    assert commanded == expected
    impacts = runlog.load_impacts(robot.log_dir / 'impacts.jsonl')
    report = hit_timing(hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s)
    # The strokes land on the named pads (most of them detected by the simulator's detector).
    assert report.total.matched >= 0.75 * len(hits), report.as_dict()
    assert np.isfinite(report.total.stats.mean_error_s)
