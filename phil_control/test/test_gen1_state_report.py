"""The Gen-1 state line: its keys as the brain parses them, the state map, the pins, the
deadbands, and a line only when something changed."""

from __future__ import annotations

import json

import pytest

from phil_control.core.gen1.commands import GEN1_JOINTS
from phil_control.core.gen1.state_report import (
    REPORTED_JOINTS,
    RobotSnapshot,
    SongTempos,
    StateReport,
    gen1_state,
)
from phil_control.core.score.playlist_reader import load_play_list

KEYS = {
    'state', 'bpm', 'is_fixed', 'current_song', 'progress', 'is_lock_key_removed',
    'last_action', 'current_angles', 'error_message',
}  # fmt: skip


def _angles(**gen1_deg):
    base = dict.fromkeys(GEN1_JOINTS.values(), 0.0)
    base.update({GEN1_JOINTS[name]: value for name, value in gen1_deg.items()})
    return base


@pytest.mark.parametrize(
    ('state', 'paused', 'number'),
    [
        ('STANDBY', False, 0),
        ('INIT', False, 0),
        ('IDLE', False, 0),
        ('IDLE', True, 4),
        ('PLAYING', False, 2),
        ('SHUTTINGDOWN', False, 3),
        ('FAULT', True, 6),
        ('ESTOP', False, 6),
    ],
)
def test_state_numbers(state, paused, number):
    assert gen1_state(state, paused) == number


def test_a_line_is_one_json_object_with_the_brains_keys_and_only_when_changed():
    report = StateReport()
    line = report.line(RobotSnapshot('STANDBY', _angles(waist=10.004)))
    state = json.loads(line)
    assert set(state) == KEYS and '\n' not in line
    assert state['current_angles'] == dict.fromkeys(REPORTED_JOINTS, 0.0) | {'waist': 10.0}
    assert list(state['current_angles']) == list(REPORTED_JOINTS)
    assert (state['is_fixed'], state['is_lock_key_removed']) == (False, False)
    assert (state['current_song'], state['progress'], state['bpm']) == ('None', '0/0', 0)
    assert (state['error_message'], state['last_action']) == ('None', 'None')
    assert report.line(RobotSnapshot('STANDBY', _angles(waist=10.3))) is None  # deadband
    assert report.line(RobotSnapshot('INIT', _angles(waist=10.3))) is not None


def test_angles_move_past_their_deadbands_only():
    report = StateReport()
    report.report(RobotSnapshot('IDLE', _angles()))
    state = report.report(RobotSnapshot('IDLE', _angles(R_arm3=0.49, R_wrist=0.99, L_arm1=0.51)))
    assert state['current_angles']['R_arm3'] == 0.0  # 0.5 deg band
    assert state['current_angles']['R_wrist'] == 0.0  # 1.0 deg band for wrists and feet
    assert state['current_angles']['L_arm1'] == 0.51
    state = report.report(RobotSnapshot('IDLE', _angles(R_foot=1.2, R_arm3=float('nan'))))
    assert state['current_angles']['R_foot'] == 1.2
    assert state['current_angles']['R_arm3'] == 0.0  # unknown: the last value stays


def test_the_pins_come_out_with_ready_and_stay_out_through_a_latch():
    report = StateReport()
    assert not report.report(RobotSnapshot('INIT'))['is_lock_key_removed']
    assert report.report(RobotSnapshot('IDLE'))['is_lock_key_removed']
    fault = report.report(RobotSnapshot('FAULT', faults=('waist: no feedback for 50 ms',)))
    assert fault['is_lock_key_removed'] and not fault['is_fixed']
    assert (fault['state'], fault['error_message']) == (6, 'waist: no feedback for 50 ms')
    assert report.report(RobotSnapshot('ESTOP'))['error_message'] == 'ESTOP'
    assert not report.report(RobotSnapshot('STANDBY'))['is_lock_key_removed']


def test_a_song_reports_its_name_progress_and_tempo():
    report = StateReport()
    state = report.report(
        RobotSnapshot(
            'PLAYING', song='TIM', bar=3, total_bars=13, bpm=120.004, last_action='p:TIM'
        )
    )
    assert (state['state'], state['current_song'], state['progress']) == (2, 'TIM', '3/13')
    assert (state['bpm'], state['last_action']) == (120.0, 'p:TIM')


def test_song_tempos_follow_the_scores_bpm_lines(tmp_path):
    (tmp_path / 'a.txt').write_text(
        'bpm\t100\n1\t0.6\t1\t0\t5\t0\t0\t0\nbpm\t120\n2\t0.6\t1\t0\t5\t0\t0\t0\nend\n'
    )
    (tmp_path / 'play_list.yaml').write_text(
        'a:\n  score: a.txt\n  init_note_right: 1\n  init_note_left: 1\n  aliases: [A]\n'
    )
    play_list = load_play_list(tmp_path / 'play_list.yaml')
    tempos = SongTempos(lambda: play_list)
    assert [tempos.bpm('a', bar) for bar in (0, 1, 2, 9)] == [0.0, 100.0, 120.0, 120.0]
    assert tempos.bpm('A', 1) == 100.0
    assert tempos.bpm('nope', 1) == 0.0
    assert SongTempos(lambda: None).bpm('a', 1) == 0.0
