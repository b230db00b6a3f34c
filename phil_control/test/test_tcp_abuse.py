"""Abuse of the TCP server on loopback: garbage, huge lines, broken connections, bad numbers and
names, clients that never read. The server must answer (acknowledged mode), keep serving
GET_STATUS, stay within its memory bounds, and never pass an invalid command to the handler."""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import sys

import pytest
from test_tcp_support import STATUS_LINE, LineClient, running_server, wait_until

from phil_control.core.protocol import Look

LINE_LIMIT = 4096


def test_binary_garbage_gets_errors_and_never_reaches_the_handler():
    garbage = random.Random(1951).randbytes(20000)
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.ack()
        client.send(garbage + b'\n')
        client.send('GET_STATUS\n')
        replies = []
        while not replies or replies[-1] != STATUS_LINE.strip():
            replies.append(client.line())
        assert len(replies) > 1
        assert all(reply.startswith('ERR|') for reply in replies[:-1])
        assert handler.calls == []


def test_a_megabyte_without_newline_is_bounded_answered_and_skipped():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.ack()
        client.send(b'HIT|' + b'x' * (1 << 20))
        assert client.line() == (f'ERR|-|line longer than {LINE_LIMIT} bytes; discarded up to '
                                 'the next newline')
        assert server.buffered_input_bytes <= LINE_LIMIT
        client.send(b'y' * (1 << 20))
        client.send('\nHIT|snare\nGET_STATUS\n')
        assert client.lines(2) == ['OK|HIT', STATUS_LINE.strip()]
        assert [command.instrument for command in handler.commands()] == ['snare']


def test_a_megabyte_line_in_silent_mode_gets_no_reply_and_status_still_works():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.send(b'z' * (1 << 20) + b'\n')
        assert client.status() == STATUS_LINE.strip()
        assert handler.calls == []


def test_half_lines_then_disconnect_are_never_executed():
    with running_server() as (server, handler):
        for fragment in ('MOVE|waist|10|1', 'HIT|sna', 'START', 'QUIT', 'GET_STAT'):
            client = LineClient(server.address)
            client.send(fragment)
            client.close()
        wait_until(lambda: server.client_count == 0, 'every client gone')
        assert LineClient(server.address).status() == STATUS_LINE.strip()
        assert handler.calls == []


def test_two_hundred_connect_disconnect_cycles():
    with running_server() as (server, handler):
        for cycle in range(200):
            if cycle % 20 == 0:   # a full round trip now and then, once the burst is reaped
                wait_until(lambda: server.client_count == 0, 'closed clients reaped')
                checker = LineClient(server.address)
                assert checker.status() == STATUS_LINE.strip()
                checker.close()
            client = LineClient(server.address)
            if cycle % 2:
                client.send('GET_')
            client.close()
        wait_until(lambda: server.client_count == 0, 'every client gone')
        assert LineClient(server.address).status() == STATUS_LINE.strip()
        assert handler.calls == []


@pytest.mark.parametrize(('line', 'expected'), [
    ('LOOK|nan|0', "ERR|LOOK|argument 1 (pan) 'nan' is not a decimal number"),
    ('LOOK|0|inf', "ERR|LOOK|argument 2 (tilt) 'inf' is not a decimal number"),
    ('LOOK|1e308|0', 'ERR|LOOK|argument 1 (pan) 1e+308 deg is outside +/-360 deg'),
    ('MOVE|waist|-Infinity', "ERR|MOVE|argument 2 (angle of 'waist') '-Infinity' is not a "
                             'decimal number'),
    ('MOVE|waist|1e999', "ERR|MOVE|argument 2 (angle of 'waist') '1e999' is not a finite "
                         'number'),
    ('MOVE|waist|10|NaN', "ERR|MOVE|argument 3 (duration_s) 'NaN' is not a decimal number"),
    ('MOVE|waist|10|1e308', 'ERR|MOVE|argument 3 (duration_s) 1e+308 s is outside (0, 60] s'),
    ('MOVE|hip|10', "ERR|MOVE|argument 1 (joint) unknown joint 'hip'; valid: waist, "
                    'right_shoulder_1, left_shoulder_1, right_shoulder_2, right_elbow, '
                    'left_shoulder_2, left_elbow, right_wrist, left_wrist, right_pedal, '
                    'left_pedal, head_yaw, head_pitch'),
    ('POSE|dab', "ERR|POSE|argument 1 (pose) unknown pose 'dab'; valid: init, home, ready, "
                 'shutdown'),
    ('HIT|cowbell', "ERR|HIT|argument 1 (instrument) unknown instrument 'cowbell'; valid: "
                    'bass, snare, floor, mid, top, closed hihat, ride, right crash, left crash, '
                    'open hihat'),
    ('HIT|closedhihat', "ERR|HIT|argument 1 (instrument) unknown instrument 'closedhihat'; "
                        'valid: bass, snare, floor, mid, top, closed hihat, ride, right crash, '
                        'left crash, open hihat'),
    ('PLAY_CTRL|speed|nan', "ERR|PLAY_CTRL|argument 2 (factor) 'nan' is not a decimal number"),
    ('GESTURE|', 'ERR|GESTURE|argument 1 (gesture) is empty'),
    ('|||', "ERR|-|unknown opcode ''; valid: START, READY, QUIT, LOOK, GESTURE, MOVE, POSE, "
            'HIT, PLAY, PLAY_CTRL, PAUSE, RESUME, GET_STATUS, ESTOP, RESET, PROTOCOL, Q'),
    ('START\x00', 'ERR|START|control character U+0000 at column 6'),
])
def test_bad_numbers_and_names_get_their_reason_and_never_reach_the_handler(line, expected):
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.ack()
        client.send(line + '\n')
        assert client.line() == expected
        assert client.status() == STATUS_LINE.strip()
        assert handler.calls == []


def test_invalid_lines_in_silent_mode_get_no_reply():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.send('LOOK|nan|0\nMOVE|hip|1\n\x00\x01\x02\nHIT|cowbell\n')
        assert client.status() == STATUS_LINE.strip()
        assert handler.calls == []


def test_a_client_that_never_reads_is_dropped_without_blocking_others():
    limits = {'max_output_bytes': 16384, 'socket_send_buffer_bytes': 4096}
    with running_server(**limits) as (server, _):
        silent = LineClient(server.address)              # connected, never sends: harmless
        hog = LineClient(server.address, SO_RCVBUF=4096)
        other = LineClient(server.address)
        with contextlib.suppress(OSError):                # reset by the server mid-send
            hog.send('GET_STATUS\n' * 20000)
        wait_until(lambda: server.dropped_clients == 1, 'the non-reading client dropped')
        assert other.status() == STATUS_LINE.strip()
        assert server.client_count == 2
        silent.close()


# Runs in its own process, so the flood does not share the test's interpreter lock with the
# server thread; it ends by itself after 20 s at the latest.
FLOODER = """
import socket, sys, time
sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
burst = b'LOOK|0|0\\nMOVE|hip|1\\n' * 200
deadline = time.monotonic() + 20
try:
    while time.monotonic() < deadline:
        sock.sendall(burst)
except OSError:
    pass
"""


def test_a_client_flooding_commands_cannot_starve_others():
    with running_server() as (server, handler):
        host, port = server.address
        flooder = subprocess.Popen([sys.executable, '-c', FLOODER, host, str(port)])
        try:
            other = LineClient(server.address)
            wait_until(lambda: len(handler.calls) > 2000, 'the flood to reach the handler')
            for _ in range(20):
                assert other.status() == STATUS_LINE.strip()
        finally:
            flooder.kill()
            flooder.wait(10.0)
        assert all(isinstance(command, Look) for command in handler.commands())


def test_clients_beyond_the_limit_are_closed_after_a_short_wait():
    with running_server(max_clients=2, admission_wait_s=0.1) as (server, _):
        first, second = LineClient(server.address), LineClient(server.address)
        wait_until(lambda: server.client_count == 2, 'two clients')
        third = LineClient(server.address)
        assert third.closed_by_server()
        assert first.status() == STATUS_LINE.strip()
        second.close()
        wait_until(lambda: server.client_count == 1, 'one client')
        assert LineClient(server.address).status() == STATUS_LINE.strip()


def test_invalid_server_configuration():
    from phil_control.tcp import TcpServerConfig
    with pytest.raises(ValueError, match='max_line_bytes'):
        TcpServerConfig(max_line_bytes=0)
    with pytest.raises(ValueError, match='port'):
        TcpServerConfig(port=70000)
    assert socket.AF_INET  # loopback only: every test above binds 127.0.0.1 port 0
