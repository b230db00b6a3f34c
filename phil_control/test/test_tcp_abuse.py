"""Abuse of the TCP server on loopback: garbage, huge lines, broken connections, bad numbers and
names, clients that never read, idle connections that fill the client table, a log fed junk.
The server must answer (acknowledged mode), keep serving GET_STATUS (and a newcomer), stay
within its memory and disk bounds, and never pass an invalid command to the handler."""

from __future__ import annotations

import contextlib
import csv
import math
import random
import socket
import subprocess
import sys
import time

import pytest
from test_tcp_support import STATUS_LINE, GatedHandler, LineClient, running_server, wait_until

from phil_control.core.protocol import Estop, Hit, Look, Quit
from phil_control.tcp.command_log import CommandCsvLog
from phil_control.tcp.config import TokenBucket

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
        assert client.line() == (
            f'ERR|-|line longer than {LINE_LIMIT} bytes; discarded up to the next newline'
        )
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
            if cycle % 20 == 0:  # a full round trip now and then, once the burst is reaped
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


@pytest.mark.parametrize(
    ('line', 'expected'),
    [
        ('LOOK|nan|0', "ERR|LOOK|argument 1 (pan) 'nan' is not a decimal number"),
        ('LOOK|0|inf', "ERR|LOOK|argument 2 (tilt) 'inf' is not a decimal number"),
        ('LOOK|1e308|0', 'ERR|LOOK|argument 1 (pan) 1e+308 deg is outside +/-360 deg'),
        (
            'MOVE|waist|-Infinity',
            "ERR|MOVE|argument 2 (angle of 'waist') '-Infinity' is not a decimal number",
        ),
        (
            'MOVE|waist|1e999',
            "ERR|MOVE|argument 2 (angle of 'waist') '1e999' is not a finite number",
        ),
        ('MOVE|waist|10|NaN', "ERR|MOVE|argument 3 (duration_s) 'NaN' is not a decimal number"),
        ('MOVE|waist|10|1e308', 'ERR|MOVE|argument 3 (duration_s) 1e+308 s is outside (0, 60] s'),
        (
            'MOVE|hip|10',
            "ERR|MOVE|argument 1 (joint) unknown joint 'hip'; valid: waist, "
            'right_shoulder_1, left_shoulder_1, right_shoulder_2, right_elbow, '
            'left_shoulder_2, left_elbow, right_wrist, left_wrist, right_pedal, '
            'left_pedal, head_yaw, head_pitch',
        ),
        (
            'POSE|dab',
            "ERR|POSE|argument 1 (pose) unknown pose 'dab'; valid: init, home, ready, shutdown",
        ),
        (
            'HIT|cowbell',
            "ERR|HIT|argument 1 (instrument) unknown instrument 'cowbell'; valid: "
            'bass, snare, floor, mid, top, closed hihat, ride, right crash, left crash, '
            'open hihat',
        ),
        (
            'HIT|closedhihat',
            "ERR|HIT|argument 1 (instrument) unknown instrument 'closedhihat'; "
            'valid: bass, snare, floor, mid, top, closed hihat, ride, right crash, '
            'left crash, open hihat',
        ),
        ('PLAY_CTRL|speed|nan', "ERR|PLAY_CTRL|argument 2 (factor) 'nan' is not a decimal number"),
        ('GESTURE|', 'ERR|GESTURE|argument 1 (gesture) is empty'),
        (
            '|||',
            "ERR|-|unknown opcode ''; valid: START, READY, QUIT, LOOK, GESTURE, MOVE, POSE, "
            'HIT, PLAY, PLAY_CTRL, PAUSE, RESUME, GET_STATUS, ESTOP, RESET, PROTOCOL, Q',
        ),
        ('START\x00', 'ERR|START|control character U+0000 at column 6'),
    ],
)
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
        silent = LineClient(server.address)  # connected, never sends: harmless
        hog = LineClient(server.address, SO_RCVBUF=4096)
        other = LineClient(server.address)
        with contextlib.suppress(OSError):  # reset by the server mid-send
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


def evicted_line(count: int) -> str:
    return f'ERR|-|evicted: {count} clients connected and this one was idle longest'


def test_a_full_server_admits_a_newcomer_and_evicts_the_client_idle_longest():
    with running_server(max_clients=2) as (server, handler):
        first, second = LineClient(server.address), LineClient(server.address)
        wait_until(lambda: server.client_count == 2, 'two clients')
        assert second.status() == STATUS_LINE.strip()  # first is now the idle one
        third = LineClient(server.address)
        third.ack()
        third.send('ESTOP\n')
        assert third.line() == 'OK|ESTOP'
        assert first.line() == evicted_line(2)  # told why, though in silent mode
        assert first.closed_by_server()
        assert second.status() == STATUS_LINE.strip()
        assert server.client_count == 2
        assert handler.commands() == [Estop()]


def test_sixteen_idle_connections_never_lock_out_a_new_client():
    with running_server() as (server, handler):
        idle = [LineClient(server.address) for _ in range(16)]
        wait_until(lambda: server.client_count == 16, 'sixteen idle clients')
        for _ in range(5):
            newcomer = LineClient(server.address)
            newcomer.send('ESTOP\n')
            assert newcomer.status() == STATUS_LINE.strip()
        assert handler.commands() == [Estop()] * 5
        for client in idle[:5]:  # the oldest went first, in order
            assert client.line() == evicted_line(16)
            assert client.closed_by_server()
        assert server.client_count == 16
        assert idle[5].status() == STATUS_LINE.strip()


@contextlib.contextmanager
def a_look_held_in_the_handler(server, handler: GatedHandler):
    """Client 1 (acknowledged mode) with a LOOK its handler holds until the block ends; then
    its first line must be the LOOK's reply (not an eviction or idle notice)."""
    busy = LineClient(server.address)
    busy.ack()
    try:
        busy.send('LOOK|0|10\n')
        wait_until(lambda: len(handler.calls) == 1, 'the LOOK in the handler')
        yield busy
    finally:
        handler.open()
    assert busy.line() == 'OK|LOOK'


def test_a_client_waiting_for_its_handler_is_busy_and_not_evicted():
    handler = GatedHandler(gated={1})
    with (
        running_server(handler, max_clients=2) as (server, _),
        a_look_held_in_the_handler(server, handler),
    ):
        idle = LineClient(server.address)  # idle for less time than busy
        assert idle.status() == STATUS_LINE.strip()
        newcomer = LineClient(server.address)
        assert newcomer.status() == STATUS_LINE.strip()
        assert idle.line() == evicted_line(2)


def test_an_idle_client_is_closed_and_told_why_in_ack_mode():
    handler = GatedHandler(gated={1})
    with (
        # Long enough for a loaded machine to run every step before a client idles out.
        running_server(handler, idle_timeout_s=2.0) as (server, _),
        a_look_held_in_the_handler(server, handler),
    ):  # held longer than 2 s: busy
        acked, silent = LineClient(server.address), LineClient(server.address)
        acked.ack()
        assert acked.line() == 'ERR|-|idle for 2 s; closing'
        assert acked.closed_by_server()
        assert silent.closed_by_server()  # no reply line in silent mode


def test_lines_left_unhandled_by_a_closing_client_are_logged_as_not_executed():
    entries = []
    with running_server(log=entries.append) as (server, handler):
        client = LineClient(server.address)
        client.send('HIT|snare\nQUIT\nHIT|bass\nLOOK|0|0\n')
        assert client.closed_by_server()
    assert handler.commands() == [Hit('snare'), Quit()]
    assert [(e.line, e.opcode, e.accepted, e.reason) for e in entries[2:]] == [
        ('HIT|bass', 'HIT', False, 'not executed: the client sent QUIT'),
        ('LOOK|0|0', 'LOOK', False, 'not executed: the client sent QUIT'),
    ]


def test_two_thousand_bad_lines_do_not_grow_commands_csv_past_its_cap(tmp_path):
    cap_bytes = 128 * 1024
    log = CommandCsvLog(tmp_path / 'commands.csv', max_bytes=cap_bytes)
    try:
        with running_server(log=log) as (server, handler):
            client = LineClient(server.address)
            junk = b'MOVE|waist|' + b'x' * 3000 + b'\n'  # a bad 3 KB line
            for _ in range(20):
                client.send(junk * 100)
            assert client.status() == STATUS_LINE.strip()
            assert handler.calls == []
    finally:
        log.close()
    files = sorted(path.name for path in tmp_path.iterdir())
    assert files == ['commands.csv', 'commands.csv.1']
    assert all((tmp_path / name).stat().st_size <= cap_bytes for name in files)
    rows = list(csv.reader((tmp_path / 'commands.csv').open(newline='', encoding='utf-8')))
    assert rows[0] == ['t', 'client', 'opcode', 'result', 'line', 'reason']
    assert rows[-1][2:5] == ['GET_STATUS', 'valid', 'GET_STATUS']
    bad = rows[-2]
    assert bad[2:4] == ['MOVE', 'invalid'] and bad[4].endswith('... (2811 more characters)')
    assert "argument 2 (angle of 'waist')" in bad[5]


def test_a_token_bucket_gives_its_rate_and_saves_a_second_of_it():
    bucket = TokenBucket(10.0, now_s=0.0)
    for _ in range(10):  # a second's worth at once
        assert bucket.wait_s(0.0) == 0.0
        bucket.take(0.0)
    assert bucket.wait_s(0.0) == pytest.approx(0.1)
    assert bucket.wait_s(0.05) == pytest.approx(0.05)
    assert bucket.wait_s(0.1) == 0.0
    bucket.take(0.1)
    assert bucket.wait_s(100.0) == 0.0  # idle for long: still one second's worth
    for _ in range(10):
        bucket.take(100.0)
    assert bucket.wait_s(100.0) > 0.0
    unlimited = TokenBucket(0.0, now_s=0.0)
    for _ in range(1000):
        unlimited.take(0.0)
    assert unlimited.wait_s(0.0) == 0.0


class HeldClock:
    """A pace clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_a_flood_waits_unread_beyond_the_rates_and_loses_nothing():
    """Beyond its line rate a client's lines wait (not refused), and the commands of every
    client together reach the handler no faster than their rate: a flood cannot keep the
    real-time command path busy. The pace clock stands still until the test moves it."""
    clock = HeldClock()
    with running_server(max_lines_per_s=5.0, max_commands_per_s=3.0, pace_clock=clock) as (
        server,
        handler,
    ):
        client = LineClient(server.address)
        client.ack()  # one of its second's five lines
        client.send('GET_STATUS\n' * 8)
        assert client.lines(4) == [STATUS_LINE.strip()] * 4
        assert client.nothing_within(0.3)  # the rest waits, unread, unrefused
        clock.now_s += 1.0
        assert client.lines(4) == [STATUS_LINE.strip()] * 4  # the next second's: not lost
        other = LineClient(server.address)
        other.send('LOOK|0|0\n' * 7)
        wait_until(lambda: len(handler.calls) == 3, 'a second of commands')
        time.sleep(0.3)  # no more come while the clock stands
        assert len(handler.calls) == 3
        clock.now_s += 1.0
        wait_until(lambda: len(handler.calls) == 6, 'the next second of commands')
        clock.now_s += 1.0
        wait_until(lambda: len(handler.calls) == 7, 'every command')
        assert all(isinstance(command, Look) for command in handler.commands())


def test_invalid_server_configuration():
    from phil_control.tcp import TcpServerConfig

    with pytest.raises(ValueError, match='max_line_bytes'):
        TcpServerConfig(max_line_bytes=0)
    with pytest.raises(ValueError, match='port'):
        TcpServerConfig(port=70000)
    with pytest.raises(ValueError, match='idle_timeout_s'):
        TcpServerConfig(idle_timeout_s=-1.0)
    with pytest.raises(ValueError, match='idle_timeout_s'):
        TcpServerConfig(idle_timeout_s=math.nan)
    with pytest.raises(ValueError, match='max_lines_per_s'):
        TcpServerConfig(max_lines_per_s=-1.0)
    with pytest.raises(ValueError, match='max_commands_per_s'):
        TcpServerConfig(max_commands_per_s=math.inf)
    assert socket.AF_INET  # loopback only: every test above binds 127.0.0.1 port 0
