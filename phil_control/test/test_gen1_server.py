"""The Gen-1 server on loopback: commands handled in order per client, errors reported, state
lines to every client (the last one first to a newcomer), a client that does not read dropped."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from phil_control.gen1_bridge.server import MAX_OUTPUT_BYTES, Gen1Server

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server():
    handled, errors = [], []
    changed = threading.Condition()

    def handle(text, client_id):
        time.sleep(0.01)  # a planner's answer takes a while
        with changed:
            handled.append((client_id, text))
            changed.notify_all()

    def refuse(message, _client_id):
        with changed:
            errors.append(message.error)
            changed.notify_all()

    served = Gen1Server(handle, refuse, '127.0.0.1', 0)
    served.start()
    served.handled, served.errors, served.changed = handled, errors, changed
    yield served
    served.stop()


def _line(client: socket.socket) -> bytes:
    data = b''
    while not data.endswith(b'\n'):
        data += client.recv(1)
    return data


def test_commands_of_a_client_are_handled_in_order_and_errors_reported(server):
    with socket.create_connection(server.address, timeout=5.0) as client:
        client.sendall(b'r\nlook:0,90\n{"commands": ["gesture:nod",\n"p:TIM"]}\n{"x": 1}\ns\n')
        with server.changed:
            assert server.changed.wait_for(lambda: len(server.handled) == 5, 10.0)
    assert [text for _, text in server.handled] == ['r', 'look:0,90', 'gesture:nod', 'p:TIM', 's']
    assert len(server.errors) == 1 and 'neither "commands"' in server.errors[0]


def test_state_lines_reach_every_client_and_a_newcomer_gets_the_last_at_once(server):
    server.broadcast('{"state": 0}')
    with socket.create_connection(server.address, timeout=5.0) as first:
        assert _line(first) == b'{"state": 0}\n'
        with socket.create_connection(server.address, timeout=5.0) as second:
            assert _line(second) == b'{"state": 0}\n'
            server.broadcast('{"state": 2}')
            assert _line(first) == _line(second) == b'{"state": 2}\n'


def test_a_client_that_does_not_read_is_dropped_and_the_others_are_served(server):
    server.broadcast('{"state": 0}')
    with (
        socket.create_connection(server.address, timeout=10.0) as silent,
        socket.create_connection(server.address, timeout=10.0) as reader,
    ):
        assert _line(silent) == _line(reader) == b'{"state": 0}\n'  # both served from here on
        received = []
        progress = threading.Condition()
        reader.settimeout(None)

        def read() -> None:
            while chunk := reader.recv(65536):
                with progress:
                    received.append(len(chunk))
                    progress.notify_all()

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        line = '{"pad": "' + 'x' * 65000 + '"}'
        # Beyond what the kernel's socket buffers hold for the silent one, and its bound.
        count = 16 * MAX_OUTPUT_BYTES // len(line)
        for index in range(count):
            # As fast as the reader reads: it never falls behind by its bound, however slowly
            # a busy machine runs it.
            behind_by = index * (len(line) + 1) - MAX_OUTPUT_BYTES // 2
            with progress:
                assert progress.wait_for(
                    lambda behind_by=behind_by: sum(received) >= behind_by, 30
                )
            server.broadcast(line)
        server.broadcast('{"state": 1}')
        silent_bytes = 0
        with contextlib.suppress(ConnectionResetError):  # dropped: its connection ends
            while chunk := silent.recv(65536):
                silent_bytes += len(chunk)
        assert silent_bytes < count * (len(line) + 1)
        server.stop()  # the reader has had everything: its recv ends
        thread.join(10.0)
        assert sum(received) == count * (len(line) + 1) + len('{"state": 1}\n')


def test_a_taken_port_is_an_error_when_starting(server):
    other = Gen1Server(lambda *_: None, lambda *_: None, '127.0.0.1', server.address[1])
    with pytest.raises(OSError):
        other.start()
