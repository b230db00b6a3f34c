"""The whole graph against the simulators, driven the way upstream's reference client and the
brain drive it (``ReferenceClient``: one write per command, no acknowledgements, no retries,
only GET_STATUS read): every command is carried out, in order, whatever our start-up or a
PAUSE still has to finish, and QUIT ends every process with status 0 in any state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_bringup.testing.graph import RunningGraph
from phil_bringup.testing.reference_client import ReferenceClient, angles_deg
from phil_description.core import default_robot_model

MODEL = default_robot_model()
NAMES = MODEL.joint_names
MOTION_S = 30.0  # generous: a busy machine may be slow, never wrong
EXIT_S = 60.0


@pytest.fixture
def graph(tmp_path):
    with RunningGraph(tmp_path) as running:
        yield running


def at(fields: list[str], **targets_deg: float) -> bool:
    """GET_STATUS lists these commanded angles (to its 2 decimals)."""
    angles = angles_deg(fields, len(NAMES))
    return all(abs(angles[NAMES.index(joint)] - deg) < 0.011 for joint, deg in targets_deg.items())


def pose_deg(name: str) -> dict[str, float]:
    return {joint: math.degrees(rad) for joint, rad in zip(NAMES, MODEL.poses[name], strict=True)}


def in_order(seen: list[str], expected: list[str]) -> bool:
    """``seen`` is ``expected`` with some states missed (polled too late to see them)."""
    remaining = iter(expected)
    return all(state in remaining for state in seen)


def planner_log(graph: RunningGraph) -> str:
    return (graph.log_dir / 'behavior_planner.log').read_text()


def test_a_reference_client_session_is_carried_out_command_by_command(graph):
    client = ReferenceClient(graph.tcp_port)
    client.send('START')  # READY follows at once, as the brain sends it
    client.send('READY')
    home = pose_deg('home')
    fields = client.wait_status(lambda f: f[1] == 'IDLE' and at(f, **home), MOTION_S)
    assert fields[1] == 'IDLE' and at(fields, **home), (fields, graph.text())
    steps = [
        ('LOOK|20|10', {'head_yaw': 20.0, 'head_pitch': 10.0}),
        ('MOVE|waist|10', {'waist': 10.0}),
        ('MOVE|head_yaw|-15|head_pitch|5|1.5', {'head_yaw': -15.0, 'head_pitch': 5.0}),
        ('GESTURE|nod', {}),
        ('GESTURE|wave', {}),
        ('POSE|ready', pose_deg('ready')),
    ]
    for line, targets in steps:
        client.send(line)
        fields = client.wait_status(lambda f, t=targets: f[1] == 'IDLE' and at(f, **t), MOTION_S)
        assert fields[1] == 'IDLE' and at(fields, **targets), (line, fields)
    log = planner_log(graph)
    for name in ('Look', 'Move', 'Gesture', 'Pose'):
        assert f'{name} accepted' in log, name
    client.send('HIT|snare')
    client.send('PLAY|rock')
    assert client.wait_state('PLAYING', MOTION_S)[1] == 'PLAYING'
    client.send('PLAY_CTRL|speed|1.5')
    fields = client.wait_status(lambda f: f[15] == '1.50', MOTION_S)
    assert fields[1] == 'PLAYING' and fields[15] == '1.50', fields
    # RESUME right after PAUSE: it comes while the play is still pausing (at the next bar)
    # and is carried out once it has.
    client.send('PAUSE')
    client.send('RESUME')
    assert client.wait_status(lambda f: 'Resume accepted' in planner_log(graph), MOTION_S)
    fields = client.wait_state('PLAYING', MOTION_S)
    assert fields[1] == 'PLAYING' and fields[16] == '0', fields  # the point was used up
    client.send('PAUSE')
    fields = client.wait_status(lambda f: f[1] == 'IDLE' and f[16] == '1', MOTION_S)
    assert fields[16:] == ['1', 'rock', fields[18]] and int(fields[18]) >= 1, fields
    client.send('RESUME')
    assert client.wait_state('PLAYING', MOTION_S)[1] == 'PLAYING'
    client.send('PLAY_CTRL|stop')
    fields = client.wait_state('IDLE', MOTION_S)
    assert fields[1] == 'IDLE' and fields[16] == '0', fields
    assert 'Hit accepted' in planner_log(graph)
    assert 'rejected' not in planner_log(graph), planner_log(graph)
    client.send('QUIT')
    assert graph.wait_exit(EXIT_S) == 0, graph.story()
    assert in_order(
        client.states, ['INIT', 'IDLE', 'PLAYING', 'IDLE', 'PLAYING', 'IDLE', 'PLAYING', 'IDLE']
    ), client.states


def test_quit_mid_song_stops_it_moves_to_the_shutdown_pose_and_ends_every_process(graph):
    client = ReferenceClient(graph.tcp_port)
    client.send('START')
    client.send('READY')
    assert client.wait_state('IDLE', MOTION_S)[1] == 'IDLE', graph.text()
    client.send('PLAY|rock')
    fields = client.wait_state('PLAYING', MOTION_S)
    # Upstream's last commanded target: during the song, the pose it ends in.
    assert fields[1] == 'PLAYING' and at(fields, **pose_deg('ready')), fields
    watcher = ReferenceClient(graph.tcp_port)  # the QUITting connection is closed
    client.send('QUIT')
    shutdown = pose_deg('shutdown')
    fields = watcher.wait_status(lambda f: f[1] != 'SHUTTINGDOWN' or at(f, **shutdown), MOTION_S)
    assert fields[1] == 'SHUTTINGDOWN' and at(fields, **shutdown), fields
    assert fields[16] == '0', fields  # no resume point after QUIT
    assert graph.wait_exit(EXIT_S) == 0, graph.story()
    assert 'Quit accepted; state SHUTTINGDOWN' in planner_log(graph)


def test_quit_during_start_ends_every_process_without_any_motion(graph):
    client = ReferenceClient(graph.tcp_port, gaps_s=(0.0, 0.0))
    client.send('START')
    client.send('QUIT')
    assert graph.wait_exit(EXIT_S) == 0, graph.story()
    log = planner_log(graph)
    assert 'Start accepted' in log and 'Quit accepted; state SHUTTINGDOWN' in log, log
    # START's motion was dropped before it started, or (START is fast: its first sample is
    # out some 40 ms after it) halted at once; either way no shutdown pose, and the commanded
    # joints never left the pinned pose by more than a hair.
    trajectory = graph.log_dir / 'trajectory.csv'
    rows = trajectory.read_text().splitlines()[1:] if trajectory.exists() else []
    pinned = np.degrees(MODEL.poses['init'])
    for row in rows:
        positions = np.degrees([float(value) for value in row.split(',')[1 : 1 + len(NAMES)]])
        assert np.abs(positions - pinned).max() < 1.0, row
