"""CommandWire and CommandReader against a real multiprocessing pipe: frames a ``Connection``
reads, written at once when nothing waits, queued in order behind a frame the socket could not
take whole; read by the loop without ever waiting, a large frame over several calls."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import threading
import time

import pytest

from phil_hardware.rt.command_wire import NO_MESSAGE, CommandReader, CommandWire, encode_frame

BIG = b'x' * (4 << 20)  # larger than any socket buffer: the sender thread writes most of it
WAIT_S = 10.0


@pytest.fixture
def pipe():
    """(writer end, reader end, failures reported by the wire)."""
    writer, reader = multiprocessing.Pipe(duplex=True)
    failures: list[tuple[object, str]] = []
    wire = CommandWire(
        writer.fileno(), lambda tag, text: failures.append((tag, text)), queue_size=3
    )
    yield wire, reader, failures
    reader.close()
    wire.close()
    writer.close()


def send_in_thread(wire: CommandWire, tag: object, message: object) -> None:
    """Send from another thread and check that the call returned (a blocked send would hang
    the node's callback) without an error (raised here)."""
    errors: list[Exception] = []

    def send() -> None:
        try:
            wire.send(tag, message)
        except Exception as error:  # raised again in the test's thread
            errors.append(error)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), 'send blocked'
    if errors:
        raise errors[0]


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
    with pytest.raises(queue.Full):  # three wait, the one being written included
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


def test_a_wire_without_room_for_a_waiting_command_is_refused():
    writer, reader = multiprocessing.Pipe(duplex=True)
    try:
        with pytest.raises(ValueError, match='queue_size must be at least 1, not 0'):
            CommandWire(writer.fileno(), lambda tag, text: None, queue_size=0)
    finally:
        writer.close()
        reader.close()


def test_a_frame_is_a_length_header_and_the_pickle():
    frame = encode_frame(('estop', 'operator'))
    assert int.from_bytes(frame[:4], 'big') == len(frame) - 4


# -- the loop's side: CommandReader ----------------------------------------------------------


@pytest.fixture
def reading():
    """(the node's Connection, a CommandReader on the loop's end, the loop's Connection)."""
    node_end, loop_end = multiprocessing.Pipe(duplex=True)
    reader = CommandReader(loop_end.fileno(), max_read_bytes=64 * 1024)
    yield node_end, reader, loop_end
    reader.close()
    node_end.close()
    loop_end.close()


def read_until_message(reader: CommandReader, max_calls: int = 10_000) -> object:
    for _ in range(max_calls):
        message = reader.next_message()
        if message is not NO_MESSAGE:
            return message
    raise AssertionError('no message arrived')


def test_the_reader_returns_at_once_with_nothing_and_reads_what_a_connection_sends(reading):
    node_end, reader, _loop_end = reading
    assert reader.next_message() is NO_MESSAGE  # did not wait
    node_end.send((1, 'ping', None))
    node_end.send((2, 'chunk', {'points': [0.5]}))
    assert read_until_message(reader) == (1, 'ping', None)
    assert read_until_message(reader) == (2, 'chunk', {'points': [0.5]})
    assert reader.next_message() is NO_MESSAGE


def test_a_frame_larger_than_one_read_arrives_over_several_calls(reading):
    node_end, reader, _loop_end = reading
    payload = b'y' * (1 << 20)
    sender = threading.Thread(target=node_end.send, args=((3, 'chunk', payload),))
    sender.start()
    calls_without = 0
    message = NO_MESSAGE
    while message is NO_MESSAGE:
        message = reader.next_message()
        calls_without += message is NO_MESSAGE
    sender.join(WAIT_S)
    assert message == (3, 'chunk', payload)
    assert calls_without >= 10  # 1 MiB at most 64 KiB per call


def test_replies_through_the_connection_still_block_and_arrive(reading):
    node_end, reader, loop_end = reading
    node_end.send((4, 'ping', None))
    assert read_until_message(reader) == (4, 'ping', None)
    loop_end.send((4, True, 'pong', None))  # the reader's MSG_DONTWAIT left the fd blocking
    assert node_end.recv() == (4, True, 'pong', None)


def test_a_closed_writer_ends_the_reader_after_its_last_message(reading):
    node_end, reader, _loop_end = reading
    node_end.send((5, 'shutdown', None))
    node_end.close()
    assert read_until_message(reader) == (5, 'shutdown', None)
    with pytest.raises(EOFError):
        reader.next_message()


def test_an_unpicklable_frame_fails_alone_and_the_next_one_reads(reading):
    node_end, reader, _loop_end = reading
    node_end.send_bytes(b'\x80\x05 not a pickle')
    node_end.send((6, 'ping', None))
    deadline = time.monotonic() + WAIT_S
    with pytest.raises(pickle.UnpicklingError):
        while time.monotonic() < deadline:
            reader.next_message()
    assert read_until_message(reader) == (6, 'ping', None)


def test_a_corrupt_length_ends_the_stream_as_a_socket_error(reading):
    node_end, reader, _loop_end = reading
    os.write(node_end.fileno(), (-5).to_bytes(4, 'big', signed=True) + b'xxxx')
    deadline = time.monotonic() + WAIT_S
    with pytest.raises(OSError, match='corrupt command frame'):
        while time.monotonic() < deadline:
            reader.next_message()


def test_waiting_for_input_returns_when_a_frame_arrives_or_one_is_buffered(reading):
    node_end, reader, _loop_end = reading
    start = time.monotonic()
    assert not reader.wait_readable(0.05)
    assert time.monotonic() - start >= 0.04  # it waited
    node_end.send((8, 'ping', None))
    node_end.send((9, 'ping', None))
    assert reader.wait_readable(WAIT_S)
    assert read_until_message(reader) == (8, 'ping', None)
    # Both frames came in one read: the second waits in the buffer, not on the socket.
    assert reader.wait_readable(0.0)
    assert read_until_message(reader) == (9, 'ping', None)
    assert not reader.wait_readable(0.0)
    node_end.close()
    assert reader.wait_readable(WAIT_S)  # the end of the stream is input too
