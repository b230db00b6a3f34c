"""CommandWire against a real multiprocessing pipe: frames a ``Connection`` reads, written at
once when nothing waits, queued in order behind a frame the socket could not take whole."""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time

import pytest

from phil_hardware.rt.command_wire import CommandWire, encode_frame

BIG = b'x' * (4 << 20)  # larger than any socket buffer: the sender thread writes most of it
WAIT_S = 10.0


@pytest.fixture
def pipe():
    """(writer end, reader end, failures reported by the wire)."""
    writer, reader = multiprocessing.Pipe(duplex=True)
    failures: list[tuple[object, str]] = []
    wire = CommandWire(writer.fileno(), lambda tag, text: failures.append((tag, text)),
                       queue_size=2)
    yield wire, reader, failures
    reader.close()
    wire.close()
    writer.close()


def send_in_thread(wire: CommandWire, tag: object, message: object) -> None:
    """Send from another thread and check that the call returned (a blocked send would hang
    the node's callback)."""
    thread = threading.Thread(target=wire.send, args=(tag, message), daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), 'send blocked'


def test_frames_are_those_a_connection_reads_in_order(pipe):
    wire, reader, failures = pipe
    messages = [(1, 'configure', None), (2, 'chunk', {'points': [0.1, 0.2]}), (3, 'reset', '')]
    for message in messages:
        wire.send(message[0], message)
    assert [reader.recv() for _ in messages] == messages
    assert failures == []


def test_a_command_with_nothing_waiting_is_on_the_socket_when_send_returns(pipe):
    wire, reader, _failures = pipe
    wire.send(1, (1, 'halt', None))
    assert reader.poll(0)
    assert reader.recv() == (1, 'halt', None)


def test_a_frame_too_big_for_the_socket_goes_on_in_the_background_and_later_ones_queue(pipe):
    wire, reader, failures = pipe
    send_in_thread(wire, 1, (1, 'chunk', BIG))
    send_in_thread(wire, 2, (2, 'halt', None))
    send_in_thread(wire, 3, (3, 'reset', None))
    with pytest.raises(queue.Full):  # two wait in the outbox (queue_size=2)
        wire.send(4, (4, 'reset', None))
    assert reader.recv() == (1, 'chunk', BIG)
    assert reader.recv() == (2, 'halt', None)
    assert reader.recv() == (3, 'reset', None)
    assert not reader.poll(0.2)  # the refused command was not written
    wire.send(5, (5, 'reset', None))  # the queue drained: direct again
    assert reader.recv() == (5, 'reset', None)
    assert failures == []


def test_a_closed_reader_fails_the_direct_send_and_reports_the_queued_one(pipe):
    wire, reader, failures = pipe
    send_in_thread(wire, 1, (1, 'chunk', BIG))
    send_in_thread(wire, 2, (2, 'halt', None))
    reader.close()
    deadline = time.monotonic() + WAIT_S
    while len(failures) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [tag for tag, _ in failures] == [1, 2]
    assert all('send to the bus loop failed' in text for _, text in failures)
    with pytest.raises(BrokenPipeError):
        wire.send(3, (3, 'reset', None))


def test_a_frame_is_a_length_header_and_the_pickle():
    frame = encode_frame(('estop', 'operator'))
    assert int.from_bytes(frame[:4], 'big') == len(frame) - 4
