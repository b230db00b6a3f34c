"""The `phil` command: argument handling, rendering, TCP sending, and clear messages when the
graph is not running."""

import math
import os
import random
import socket
import subprocess
import sys
import threading

import pytest

from phil_bringup.cli.render import StatusView, parse_joint_targets, render_status
from phil_bringup.cli.tcp_client import send_lines


def run_phil(*args, timeout=60):
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(101, 200)))
    return subprocess.run(
        [sys.executable, '-m', 'phil_bringup.cli.main', *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_joint_targets_parse_to_radians_and_bad_items_are_named():
    names, positions = parse_joint_targets(['right_elbow=45', 'waist = -10'])
    assert names == ['right_elbow', 'waist']
    assert positions == pytest.approx([math.radians(45), math.radians(-10)])
    for item, fragment in [
        ('elbow', 'expected joint=degrees'),
        ('elbow=x', "'x' is not a number"),
        ('elbow=nan', 'not a finite angle'),
    ]:
        with pytest.raises(ValueError, match=fragment):
            parse_joint_targets([item])


def test_status_rendering_shows_state_joints_faults_and_resume_point():
    view = StatusView(
        state='IDLE',
        speed=1.25,
        realtime=False,
        play_id='',
        bar=0,
        total_bars=0,
        resume_valid=True,
        resume_play_id='rock',
        resume_bar=7,
        joint_names=['waist', 'head_yaw'],
        commanded_rad=[math.radians(10), 0.0],
        measured_rad=[math.radians(9.5), float('nan')],
        faults=['right_wrist: position out of range'],
        last_rejection='',
    )
    text = render_status(view)
    assert 'state IDLE   speed 1.25   NOT real-time' in text
    assert 'resume point: rock bar 7' in text
    assert 'FAULT right_wrist: position out of range' in text
    waist_line = next(line for line in text.splitlines() if line.startswith('waist'))
    assert '10.00' in waist_line and '9.50' in waist_line
    head_line = next(line for line in text.splitlines() if line.startswith('head_yaw'))
    assert head_line.rstrip().endswith('-')


def test_bad_arguments_exit_with_a_message_and_without_touching_the_robot():
    result = run_phil('--wait', '0.5', 'move', 'right_elbow=ninety')
    assert result.returncode == 2
    assert "'ninety' is not a number of degrees" in result.stderr
    result = run_phil('hit', 'snare', '--velocity', '9')
    assert result.returncode == 2 and 'invalid choice' in result.stderr


def test_a_missing_graph_is_reported_clearly():
    result = run_phil('--wait', '0.5', 'start')
    assert result.returncode == 2
    assert 'service /phil/start is not available' in result.stderr
    assert 'make run' in result.stderr


def test_send_without_a_server_is_reported_clearly():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    result = run_phil('send', 'GET_STATUS', '--port', str(port))
    assert result.returncode == 2
    assert f'nothing listens on 127.0.0.1:{port}' in result.stderr


def test_send_lines_uses_acknowledged_mode_and_reads_status_replies():
    server = socket.create_server(('127.0.0.1', 0))
    port = server.getsockname()[1]
    received = []

    def serve():
        connection, _ = server.accept()
        with connection, connection.makefile('rw', encoding='utf-8', newline='\n') as stream:
            for line in stream:
                received.append(line.strip())
                opcode = line.split('|', 1)[0].strip().upper()
                if opcode == 'GET_STATUS':
                    stream.write('STATUS|IDLE|1.00|0|-|0\n')
                else:
                    stream.write(f'OK|{opcode}\n')
                stream.flush()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        replies = send_lines(['LOOK|0|10', 'GET_STATUS'], port=port, timeout_s=5.0)
    finally:
        server.close()
    assert received[:3] == ['PROTOCOL|2', 'LOOK|0|10', 'GET_STATUS']
    assert replies == ['OK|LOOK', 'STATUS|IDLE|1.00|0|-|0']
