"""Socket-level tests of the TCP server on loopback: upstream client behaviour, framing,
several clients, fair service of a flood, acknowledged mode, QUIT, the command log and
shutdown."""

from __future__ import annotations

import math
import socket
import subprocess
import sys
import threading
import time

import pytest
from test_tcp_support import (
    MODEL,
    STATUS_LINE,
    TIMEOUT_S,
    VOCABULARY,
    GatedHandler,
    LineClient,
    RecordingHandler,
    running_server,
    wait_until,
)

from phil_control.core.behavior import BehaviorConfig, StateMachine
from phil_control.core.protocol import (
    Estop,
    Gesture,
    Hit,
    Look,
    Move,
    Play,
    PlayCtrlStop,
    Quit,
    Ready,
    Start,
    parse_line,
)
from phil_control.tcp import MachineCommandHandler, TcpServer, TcpServerConfig

REFERENCE_SESSION = [
    'START',
    'READY',
    'PLAY|BF',
    'GESTURE|wave',
    'HIT|closed hihat',
    'LOOK|-30.0000|10.0000',
    'POSE|ready',
    'MOVE|waist|10.0000|right_elbow|45.0000|2.0000',
    'PLAY_CTRL|speed|1.20',
    'PLAY_CTRL|stop',
]


def test_reference_client_session_one_command_per_write_and_no_replies():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        for command in REFERENCE_SESSION:
            client.send(command + '\n')
        client.send('GET_STATUS\n')
        data = client.sock.recv(4096).decode()  # as the reference client reads it
        assert data == STATUS_LINE  # nothing but the status: commands are silent
        fields = data.strip().split('|')
        assert fields[0] == 'STATUS' and fields[1] == 'IDLE'
        assert len(fields[2:]) == len(MODEL.joint_names) + 4
        assert float(fields[2 + len(MODEL.joint_names)]) == 1.0
        expected = [parse_line(line, VOCABULARY) for line in REFERENCE_SESSION]
        assert handler.commands() == expected
        assert isinstance(expected[0], Start) and isinstance(expected[-1], PlayCtrlStop)
        assert {client_id for _, client_id in handler.calls} == {1}
        client.send('QUIT\n')
        assert client.closed_by_server()
        assert handler.commands()[-1] == Quit()


def test_pipelined_commands_in_one_send():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.send('START\nREADY\r\nHIT|snare\nGET_STATUS\nGESTURE|nod\nGET_STATUS\n')
        assert client.lines(2) == [STATUS_LINE.strip()] * 2
        assert handler.commands() == [Start(), Ready(), Hit('snare'), Gesture('nod')]


def test_one_command_split_over_many_sends():
    with running_server() as (server, handler):
        client = LineClient(server.address)
        client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for byte in b'MOVE|waist|10|right_elbow|45|2.5\r\nGET_STA':
            client.send(bytes([byte]))
        client.send('TUS\n')
        assert client.line() == STATUS_LINE.strip()
        [command] = handler.commands()
        assert isinstance(command, Move) and command.duration_s == 2.5
        assert [joint for joint, _ in command.targets] == ['waist', 'right_elbow']


def test_several_clients_at_once_are_told_apart():
    with running_server() as (server, handler):
        clients = [LineClient(server.address) for _ in range(5)]
        wait_until(lambda: server.client_count == 5, 'five connections')
        for index, client in enumerate(clients):
            client.send(f'LOOK|{index}|0\n')
        for client in reversed(clients):
            assert client.status() == STATUS_LINE.strip()
        by_client = {client_id: command for command, client_id in handler.calls}
        assert sorted(by_client) == [1, 2, 3, 4, 5]
        assert all(isinstance(command, Look) for command in by_client.values())
        for client in clients:
            client.close()
        wait_until(lambda: server.client_count == 0, 'all clients gone')


class BlockingHandler(RecordingHandler):
    """Holds every command until released, like a planner that is slow to answer."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def handle(self, command, client_id):
        reply = super().handle(command, client_id)
        self.release.wait(10.0)
        return reply


def test_a_command_waiting_for_its_answer_does_not_hold_other_clients():
    with running_server(BlockingHandler()) as (server, handler):
        slow, other = LineClient(server.address), LineClient(server.address)
        try:
            slow.send('PROTOCOL|2\n')
            assert slow.line() == 'OK|PROTOCOL'
            slow.send('LOOK|0|10\nLOOK|0|20\n')
            wait_until(lambda: len(handler.calls) == 1, 'the first command handled')
            assert other.status() == STATUS_LINE.strip()  # served while LOOK waits
            assert len(handler.calls) == 1  # the second LOOK waits for the first's answer
        finally:
            handler.release.set()
        assert slow.lines(2) == ['OK|LOOK', 'OK|LOOK']
        assert [round(math.degrees(c.tilt_rad)) for c in handler.commands()] == [10, 20]


def test_another_client_is_served_while_a_flood_waits_for_a_slow_handler():
    flood = 500
    handler = GatedHandler(gated={1})  # only the flooding client's commands are slow
    with running_server(handler) as (server, _):
        flooder = LineClient(server.address)
        flooder.ack()
        other = LineClient(server.address)
        try:
            flooder.send(''.join(f'LOOK|0|{index % 30}\n' for index in range(flood)))
            handler.passes(3)
            wait_until(lambda: len(handler.calls_of(1)) == 4, 'the fourth flood line waiting')
            other.send('ESTOP\n')
            assert other.status() == STATUS_LINE.strip()
            assert handler.calls_of(2) == [Estop()]  # handled before its GET_STATUS reply
            assert len(handler.calls_of(1)) == 4  # while the flood is at its 4th line
        finally:
            handler.open()
        assert flooder.lines(flood) == ['OK|LOOK'] * flood
        assert [round(math.degrees(c.tilt_rad)) for c in handler.calls_of(1)] == [
            index % 30 for index in range(flood)
        ]


def test_commands_waiting_for_the_handler_do_not_hold_a_further_clients_command():
    held = 12  # more than a default thread pool has workers on a small machine
    handler = GatedHandler(gated=set(range(1, held + 1)))
    with running_server(handler) as (server, _):
        slow = [LineClient(server.address) for _ in range(held)]
        wait_until(lambda: server.client_count == held, 'the slow clients connected')
        try:
            for client in slow:
                client.send('START\n')
            wait_until(lambda: len(handler.calls) == held, 'every slow START in the handler')
            late = LineClient(server.address)
            late.ack()
            late.send('ESTOP\n')
            assert late.line() == 'OK|ESTOP'
        finally:
            handler.open()
        assert handler.calls_of(held + 1) == [Estop()]


def test_every_line_of_a_pipelined_flood_gets_one_reply_in_order():
    pattern = [
        ('LOOK|0|{}', 'OK|LOOK'),
        ('MOVE|hip|1', "ERR|MOVE|argument 1 (joint) unknown joint 'hip'"),
        ('HIT|snare', 'OK|HIT'),
        ('GET_STATUS', STATUS_LINE.strip()),
    ]
    lines, expected = [], []
    for index in range(3000):
        line, reply = pattern[index % len(pattern)]
        lines.append(line.format(index % 40))
        expected.append(reply)
    entries = []
    with running_server(log=entries.append) as (server, handler):
        client = LineClient(server.address)
        client.ack()
        sender = threading.Thread(
            target=client.send, args=(''.join(f'{line}\n' for line in lines),)
        )
        sender.start()
        replies = client.lines(len(lines))
        sender.join(10.0)
        assert [
            reply[: len(prefix)] for reply, prefix in zip(replies, expected, strict=True)
        ] == expected
        assert client.status() == STATUS_LINE.strip()  # and no reply more
        looks = [
            round(math.degrees(c.tilt_rad)) for c in handler.commands() if isinstance(c, Look)
        ]
        assert looks == [index % 40 for index in range(0, len(lines), len(pattern))]
    assert [entry.line for entry in entries] == ['PROTOCOL|2', *lines, 'GET_STATUS']


def test_ack_mode_answers_every_line_once():
    handler = RecordingHandler(
        reject={'HIT': 'HIT rejected: robot is PLAYING; motions are allowed only in IDLE'}
    )
    with running_server(handler) as (server, _):
        client = LineClient(server.address)
        client.ack()
        client.send('START\nHIT|snare\nbogus|1\nLOOK|0|nan\n\nGET_STATUS\nplay|BF\n')
        assert client.lines(6) == [
            'OK|START',
            'ERR|HIT|HIT rejected: robot is PLAYING; motions are allowed only in IDLE',
            "ERR|BOGUS|unknown opcode 'bogus'; valid: START, READY, QUIT, LOOK, GESTURE, MOVE, "
            'POSE, HIT, PLAY, PLAY_CTRL, PAUSE, RESUME, GET_STATUS, ESTOP, RESET, PROTOCOL, Q',
            "ERR|LOOK|argument 2 (tilt) 'nan' is not a decimal number",
            STATUS_LINE.strip(),
            'OK|PLAY',
        ]
        assert handler.commands() == [Start(), Hit('snare'), Play('BF')]
        client.send('PROTOCOL|1\nHIT|snare\nbogus\nGET_STATUS\n')
        assert client.lines(2) == ['OK|PROTOCOL', STATUS_LINE.strip()]


def test_ack_mode_is_per_connection():
    with running_server() as (server, _):
        acked, silent = LineClient(server.address), LineClient(server.address)
        acked.ack()
        silent.send('START\n')
        acked.send('START\n')
        assert acked.line() == 'OK|START'
        assert silent.status() == STATUS_LINE.strip()


def test_quit_is_acknowledged_then_the_connection_closes_and_others_go_on():
    with running_server() as (server, handler):
        quitter, other = LineClient(server.address), LineClient(server.address)
        quitter.ack()
        quitter.send('Q\nHIT|snare\n')
        assert quitter.line() == 'OK|QUIT'
        assert quitter.closed_by_server()
        assert handler.commands() == [Quit()]
        assert other.status() == STATUS_LINE.strip()
        late = LineClient(server.address)
        assert late.status() == STATUS_LINE.strip()


def test_a_quit_being_handled_when_the_server_stops_still_gets_its_reply():
    """The planner's QUIT ends the graph, so the bridge's server is told to stop while that
    QUIT is still being answered: the reply must reach the client before the close."""

    class StopsOnQuit(RecordingHandler):
        def handle(self, command, client_id):
            reply = super().handle(command, client_id)
            if isinstance(command, Quit):
                stopping = threading.Event()
                threading.Thread(target=lambda: (stopping.set(), server.stop())).start()
                stopping.wait(TIMEOUT_S)
                time.sleep(0.2)  # the graph's shutdown overtakes the planner's answer
            return reply

    with running_server(StopsOnQuit()) as (server, _):
        client = LineClient(server.address)
        client.ack()
        client.send('QUIT\n')
        assert client.line() == 'OK|QUIT'
        assert client.closed_by_server()


def test_command_log_records_every_line_with_client_and_outcome():
    entries = []
    with running_server(log=entries.append) as (server, _):
        client = LineClient(server.address)
        client.send('START\nMOVE|elbow|1\nGET_STATUS\n')
        client.line()
    assert [(e.client_id, e.line, e.opcode, e.accepted) for e in entries] == [
        (1, 'START', 'START', True),
        (1, 'MOVE|elbow|1', 'MOVE', False),
        (1, 'GET_STATUS', 'GET_STATUS', True),
    ]
    assert "unknown joint 'elbow'" in entries[1].reason
    assert all(entry.time_s > 0 for entry in entries)


def test_injected_clock_stamps_the_log():
    entries = []
    server = TcpServer(
        RecordingHandler(),
        VOCABULARY,
        TcpServerConfig(port=0),
        command_log=entries.append,
        clock=lambda: 42.0,
    )
    with server:
        client = LineClient(server.address)
        client.status()
    assert [entry.time_s for entry in entries] == [42.0]


def test_stop_closes_clients_and_the_listener_and_is_idempotent():
    with running_server() as (server, _):
        address = server.address
        client = LineClient(address)
        client.status()
        server.stop()
        assert client.closed_by_server()
        with pytest.raises(OSError):
            socket.create_connection(address, timeout=2.0)
        server.stop()


def test_port_in_use_raises_at_start():
    with running_server() as (server, handler):
        second = TcpServer(handler, VOCABULARY, TcpServerConfig(port=server.address[1]))
        with pytest.raises(OSError):
            second.start()


def test_ipv6_loopback():
    if not socket.has_ipv6:
        pytest.skip('no IPv6')
    try:
        context = running_server(host='::1')
        server, _ = context.__enter__()
    except OSError:
        pytest.skip('::1 not available')
    try:
        assert LineClient(server.address).status() == STATUS_LINE.strip()
    finally:
        context.__exit__(None, None, None)


def test_broken_handler_status_and_log_do_not_stop_the_server():
    class Broken(RecordingHandler):
        def handle(self, command, client_id):
            raise RuntimeError('boom')

        def status_line(self):
            raise KeyError('no status')

    def bad_log(entry):
        raise ValueError('disk full')

    with running_server(Broken(), log=bad_log) as (server, _):
        client = LineClient(server.address)
        client.send('START\n')
        client.ack()
        client.send('START\nGET_STATUS\n')
        assert client.lines(2) == [
            'ERR|START|internal error: RuntimeError: boom',
            "ERR|GET_STATUS|status unavailable: KeyError: 'no status'",
        ]


def test_machine_handler_end_to_end():
    machine = StateMachine(BehaviorConfig(pose_names=tuple(MODEL.poses)))
    decisions = []
    handler = MachineCommandHandler(
        machine, execute=decisions.append, commanded_rad=lambda: MODEL.poses['home']
    )
    with running_server(handler) as (server, _):
        client = LineClient(server.address)
        assert client.status() == 'STATUS|STANDBY|1.00|0|-|0'
        client.ack()
        client.send('START\nREADY\n')
        assert client.line() == 'OK|START'
        assert client.line().startswith('ERR|READY|READY rejected: robot is INIT')
        with handler.lock:
            machine.start_completed()
        client.send('READY\nPLAY|BF\nPLAY_CTRL|speed|3\nHIT|snare\nGET_STATUS\n')
        assert client.lines(4) == [
            'OK|READY',
            'OK|PLAY',
            'OK|PLAY_CTRL|speed 3 clamped to 2.00',
            'ERR|HIT|HIT rejected: robot is PLAYING; motions are allowed only in IDLE',
        ]
        status = client.line().split('|')
        assert status[:3] == ['STATUS', 'PLAYING', '10.00'] and status[15] == '2.00'
    assert [d.accepted for d in decisions] == [True, False, True, True, True, False]
    assert machine.snapshot().last_rejection.opcode == 'HIT'
    assert decisions[4].actions[0].speed == 2.0


def test_cores_and_server_import_without_ros():
    code = (
        "import sys; sys.modules['rclpy'] = None; sys.modules['phil_msgs'] = None; "
        'import phil_control.tcp, phil_control.core.protocol, phil_control.core.behavior'
    )
    subprocess.run([sys.executable, '-c', code], check=True, timeout=60)
