"""`phil import-midi` on MIDI files built here with mido: a rock beat becomes a score the
strict parser reads and the robot can play (hands, velocities, count-in, rests), a tempo change
becomes bpm lines, a fill too fast for the sticks is thinned with every dropped note named by
bar and beat, the play-list entry is added; a file with no drum channel or no MIDI at all is
refused naming the file, and nothing is written."""

from __future__ import annotations

import subprocess

import pytest

from phil_bringup.testing.graph import run_phil
from phil_bringup.testing.midi_files import rock_beat
from phil_bringup.testing.midi_files import write_drum_midi as _midi
from phil_control.core.score import load_play_list, load_score


def _import(*args) -> subprocess.CompletedProcess:
    return run_phil('import-midi', *args, timeout_s=300)


def test_a_rock_beat_becomes_a_score_the_robot_plays(tmp_path):
    out = tmp_path / 'rock.txt'
    done = _import(_midi(tmp_path / 'rock.mid', rock_beat()), '--out', out)
    assert done.returncode == 0, done.stderr
    assert '0 notes dropped' in done.stdout
    score = load_score(out)
    events = score.events
    assert [e.bar for e in events[:4]] == [0, 0, 0, 0] and all(e.is_rest for e in events[:4])
    assert all(e.bpm == 120 for e in events)
    played = [e for e in events if not e.is_rest]
    assert len(played) == 32  # 4 bars of 8ths
    first = played[0]
    assert (first.right_drum, first.kick, first.hihat_closed) == (8, True, True)  # crash
    backbeat = played[2]
    # Hi-hat right, snare left (the one crossing allowed), velocity 1 + round(6 * 120 / 127).
    assert (backbeat.right_drum, backbeat.left_drum, backbeat.left_velocity) == (5, 1, 7)
    assert all(e.beat_units == 0.3 for e in played[1:])  # an 8th note: 0.6 per quarter
    assert events[-1].is_rest and events[-1].bar == played[-1].bar + 1  # a bar of rests


def test_a_tempo_change_becomes_bpm_lines(tmp_path):
    out = tmp_path / 'tempo.txt'
    midi = _midi(tmp_path / 'tempo.mid', rock_beat(4), tempi=((0, 120.0), (8, 90.0)))
    done = _import(midi, '--out', out)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith('bpm\t120.0\n') and text.count('bpm\t') == 2 and '\nbpm\t90.0\n' in text
    events = load_score(out).events
    assert {e.bpm for e in events if e.bar <= 2} == {120} and {
        e.bpm for e in events if e.bar >= 3
    } == {90}


def test_a_fill_too_fast_for_the_sticks_is_thinned_naming_each_note(tmp_path):
    # 32nd notes around the toms at 140 bpm: 54 ms apart, even with both sticks too fast.
    fill = [(4 + i / 8, (50, 47, 45, 43)[i % 4], 100) for i in range(16)]
    midi = _midi(tmp_path / 'fill.mid', rock_beat(1) + fill, tempi=((0, 140.0),))
    out = tmp_path / 'fill.txt'
    done = _import(midi, '--out', out)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    dropped = [line for line in lines if line.startswith('dropped: ')]
    moved = [line for line in lines if line.startswith('moved: ')]
    assert dropped and all(line.startswith('dropped: bar 2, beat ') for line in dropped), lines
    assert all('(too fast to play: too fast: ' in line for line in dropped)
    assert moved and all(line.startswith('moved: bar 2, beat ') for line in moved), lines
    kept = load_score(out).events
    assert sum((e.right_drum > 0) + (e.left_drum > 0) for e in kept if e.bar == 2) == 16 - len(
        dropped
    )
    assert any(e.kick for e in kept if e.bar == 1)  # the beat before the fill stays


def test_the_play_list_entry_is_added_and_read_back(tmp_path):
    scores = tmp_path / 'scores'
    (scores / 'rock').mkdir(parents=True)
    _import(_midi(tmp_path / 'first.mid', rock_beat(1)), '--out', scores / 'rock' / 'first.txt')
    (scores / 'play_list.yaml').write_text(
        "# mine\nfirst:\n  score: rock/first.txt\n  audio: ''\n  init_note_right: 5\n"
        '  init_note_left: 1\n'
    )
    out = scores / 'rock' / 'song.txt'
    done = _import(_midi(tmp_path / 's.mid', rock_beat(2)), '--out', out, '--play-list-id', 'song')
    assert done.returncode == 0, done.stderr
    entry = load_play_list(scores / 'play_list.yaml').entry('song')
    assert entry.score_path == out.resolve()
    assert (scores / 'play_list.yaml').read_text().startswith('# mine\n')
    again = _import(_midi(tmp_path / 's.mid', rock_beat(2)), '--out', scores / 'rock' / 'b.txt',
                    '--play-list-id', 'song')  # fmt: skip
    assert again.returncode == 2 and "'song' is already an entry" in again.stderr
    assert not (scores / 'rock' / 'b.txt').exists()


@pytest.mark.parametrize(
    ('make', 'said'),
    [
        (
            lambda path: _midi(path, rock_beat(1), channel=0),
            'no drum notes (note-ons on MIDI channel 10)',
        ),
        (lambda path: path.write_bytes(b'RIFF....WAVEfmt '), 'not a MIDI file mido can read'),
    ],
    ids=['no-drum-channel', 'not-midi'],
)
def test_bad_midi_is_refused_naming_the_file_and_nothing_is_written(tmp_path, make, said):
    midi = tmp_path / 'bad.mid'
    make(midi)
    out = tmp_path / 'bad.txt'
    done = _import(midi, '--out', out)
    assert done.returncode == 2 and f'{midi}: {said}' in done.stderr, done.stderr
    assert 'Traceback' not in done.stderr and not out.exists()
