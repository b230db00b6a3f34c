"""The Gen-1 brain's session through the whole graph against the simulators: a client that
behaves as the brain is described to (``testing.gen1_client``) connects to the gen1_bridge
(``--gen1``) and drives ``r``, ``look``, ``gesture``, ``move``, ``p:`` (a Gen-1 song name,
an alias of the play list), ``tempo_scale``, ``pause``, ``resume`` and ``s``, reading only the
state lines; the operator's READY (the locking pins out: Gen-1's gate) comes over port 1951.
Three sessions in a row, each on a new connection, on one graph."""

from __future__ import annotations

import socket
import time

import pytest

from phil_bringup.plots import runlog
from phil_bringup.testing.gen1_client import Gen1Brain
from phil_bringup.testing.graph import RunningGraph, free_tcp_port

pytest.importorskip('rclpy')

pytestmark = pytest.mark.timeout(600)

IDLE, PLAY, PAUSE = 0, 2, 4
ROCK_BPM = 100.0  # the tempo of TIM's score (rock)


def _bar(state: dict) -> int:
    return int(state['progress'].split('/')[0])


def _session(brain: Gen1Brain, number: int) -> None:
    assert brain.send('look:0,90')
    brain.wait(lambda s: s['last_action'] == 'look:0,90', 10.0)
    assert brain.send('gesture:nod')
    brain.wait(lambda s: s['last_action'] == 'gesture:nod', 15.0)
    assert brain.send(f'move:R_arm3,{60 + number}')
    brain.wait(lambda s: abs(s['current_angles'].get('R_arm3', 0.0) - 60 - number) < 1.5, 20.0)
    assert brain.send('velocity_delta:2')
    brain.wait(lambda s: s['last_action'] == 'velocity_delta:2', 10.0)
    assert brain.send('p:TIM')
    playing = brain.wait(lambda s: s['state'] == PLAY and _bar(s) >= 2, 30.0)
    # The tempo scale holds for the songs after it, as Gen-1's did.
    start_bpm = ROCK_BPM * (1.2 if number else 1.0)
    assert playing['current_song'] == 'TIM' and playing['bpm'] == start_bpm, playing
    assert not brain.send('move:R_arm3,30')  # the brain holds motion while the robot plays
    assert brain.send('tempo_scale:1.2')
    brain.wait(lambda s: s['bpm'] == pytest.approx(1.2 * ROCK_BPM), 10.0)
    assert brain.send('pause')
    paused = brain.wait(lambda s: s['state'] == PAUSE, 15.0)
    assert paused['current_song'] == 'TIM' and paused['is_lock_key_removed'], paused
    assert brain.send('resume')
    resumed = brain.wait(lambda s: s['state'] == PLAY and _bar(s) > _bar(paused), 20.0)
    assert resumed['bpm'] == pytest.approx(1.2 * ROCK_BPM), resumed
    assert brain.send('s')
    ended = brain.wait(lambda s: s['state'] == IDLE and s['last_action'] == 's', 15.0)
    assert ended['current_song'] == 'None' and ended['error_message'] == 'None', ended


def test_three_gen1_brain_sessions_in_a_row(tmp_path):
    port = free_tcp_port()
    with RunningGraph(tmp_path / 'run', ('--gen1', '--gen1-port', str(port))) as robot:
        brain = Gen1Brain(port)
        brain.connect(60.0)
        standby = brain.wait(lambda s: 'state' in s, 10.0)
        assert standby['state'] == IDLE and not standby['is_fixed'], standby
        assert brain.send('r')  # START: torque on, home; the pins are still in
        brain.wait(lambda s: s['is_fixed'], 20.0)
        assert robot.status()[1] == 'INIT'
        assert not brain.motion_allowed()
        # A client that is not as careful: the planner refuses motion before READY.
        with socket.create_connection(('127.0.0.1', port), timeout=5.0) as rogue:
            rogue.sendall(b'gesture:wave\n')
        time.sleep(1.0)
        assert robot.status()[1] == 'INIT' and brain.snapshot()['last_action'] == 'r'
        # The operator takes the pins out: READY (Gen-1's gate opened at the console).
        assert robot.line('READY') == 'OK|READY'
        brain.wait(lambda s: s['is_lock_key_removed'], 20.0)
        for number in range(3):
            if number:
                brain.close()
                brain = Gen1Brain(port)
                brain.connect(30.0)
                brain.wait(lambda s: s.get('is_lock_key_removed'), 10.0)
                assert brain.send('r')  # in IDLE: the ready pose
                brain.wait(lambda s: s['last_action'] == 'r', 10.0)
            _session(brain, number)
        assert not brain.bad_lines and brain.lines > 10
        brain.close()
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
    hits = runlog.load_hits(robot.log_dir / 'hits.csv')
    struck = {
        int(velocity)
        for velocity, hand in zip(hits.velocity, hits.hand, strict=True)
        if hand in ('right', 'left')
    }
    # The rock score's stick velocities are 3..6: velocity_delta 2 made them 5..7.
    assert min(struck) == 5 and max(struck) == 7, struck
    log = (robot.log_dir / 'gen1_bridge.log').read_text()
    assert "'gesture:wave' refused" in log, log[-2000:]
