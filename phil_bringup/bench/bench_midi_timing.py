"""A song imported from MIDI, played through the whole graph (simulated robot): how far the
strokes land from the MIDI notes' times.

Builds a General MIDI rock beat (8 bars at 120 bpm: 8th hi-hat, snare on 2 and 4, kick on 1
and 3, a crash), converts it with ``phil import-midi`` into a scratch scores folder, plays it like
the brain (START, READY, PLAY, QUIT) and prints one JSON line (``midi_timing``): whether every
note was commanded at its own time on its pad (``notes_at_their_times``: the score time of each
commanded hit minus the note's time after the count-in bar, max in ms), and the detected impact
minus the commanded hit, as ``bench_hit_timing`` reports it (goal: p99 <= 2 ms, as for the
project's scores).

Usage: python phil_bringup/bench/bench_midi_timing.py [--bars 8] [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_hit_timing import play_scores

from phil_bringup.plots.stats import hit_timing
from phil_bringup.testing.graph import run_phil
from phil_bringup.testing.midi_files import rock_beat, write_drum_midi

BPM = 120.0
PLAY_ID = 'midi_rock'
#: The count-in bar: the first note sounds 5 quarter notes into the score (see phil import-midi).
COUNT_IN_BEATS = 5
INSTRUMENT_OF = {42: 'closed hihat', 38: 'snare', 36: 'bass', 49: 'left crash'}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bars', type=int, default=8)
    parser.add_argument('--keep-logs', type=Path, default=None, metavar='DIR')
    args = parser.parse_args()
    notes = rock_beat(args.bars)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep_logs or Path(scratch)
        scores = folder / 'scores'
        (scores / 'rock').mkdir(parents=True, exist_ok=True)
        (scores / 'play_list.yaml').write_text(
            f'{PLAY_ID}:\n  score: rock/midi_rock.txt\n  init_note_right: 5\n  init_note_left: 1\n'
        )
        done = run_phil(
            'import-midi',
            write_drum_midi(folder / 'rock.mid', notes, tempi=((0, BPM),)),
            '--out',
            scores / 'rock' / 'midi_rock.txt',
            timeout_s=300,
        )
        if done.returncode:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
        outcomes, hits, impacts = play_scores(
            folder / 'run', [PLAY_ID], 1.0, False, ('--play-list', str(scores / 'play_list.yaml'))
        )
    beat_s = 60.0 / BPM
    commanded = sorted(
        zip(hits.score_time_s - COUNT_IN_BEATS * beat_s, hits.instrument, strict=True)
    )
    expected = sorted((beat * beat_s, INSTRUMENT_OF[note]) for beat, note, _ in notes)
    same_pads = [name for _, name in commanded] == [name for _, name in expected]
    note_error_s = (
        float(np.max(np.abs([c[0] - e[0] for c, e in zip(commanded, expected, strict=True)])))
        if same_pads and len(commanded) == len(expected)
        else float('nan')
    )
    report = hit_timing(hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s)
    line = {
        'bench': 'midi_timing',
        'bars': args.bars,
        'notes': len(notes),
        'hits': len(hits),
        'state': outcomes[PLAY_ID],
        'notes_at_their_times': same_pads and note_error_s < 1e-6,
        'note_time_error_max_ms': round(note_error_s * 1e3, 4),
        **report.in_ms(),
    }
    print(json.dumps(line), flush=True)
    return 0 if line['notes_at_their_times'] and outcomes[PLAY_ID] == 'IDLE' else 1


if __name__ == '__main__':
    sys.exit(main())
