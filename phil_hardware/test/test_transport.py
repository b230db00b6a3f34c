"""Transports: group policy, python-can virtual and udp_multicast buses, PTY serial port."""

from __future__ import annotations

import math
import os
import random
import socket
import subprocess
import sys
import threading
import time
import tty
import uuid
from pathlib import Path

import can
import pytest

from phil_description.core import CanBusParams, SerialBusParams
from phil_hardware.core import transport
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.transport import (
    CanTransport,
    SerialTransport,
    TransportError,
    check_multicast_group,
    frame_bits,
    open_can_bus,
    open_serial_port,
    serial_port,
    tty_reader,
)
from phil_hardware.core.transport.udp_fast_path import MAX_FRAMES_PER_DATAGRAM, UdpFastPath

SO_DETACH_FILTER = 27  # <asm-generic/socket.h>
WAIT_S = 10.0  # a bound on waits for what must come, never an expectation of speed


def unique_group() -> str:
    return f'ff11::7068:{random.randint(0x7000, 0xFFFF):x}'


def drain_until(transport_: CanTransport, count: int, timeout_s: float = WAIT_S) -> list[CanFrame]:
    frames: list[CanFrame] = []
    deadline = time.monotonic() + timeout_s
    while len(frames) < count and time.monotonic() < deadline:
        transport_.drain(frames)
        time.sleep(0.001)
    return frames


@pytest.mark.parametrize('channel', ['ff11::7068:6900', 'FF11::1'])
def test_interface_local_groups_are_accepted(channel):
    check_multicast_group('can0', channel)


@pytest.mark.parametrize(
    'channel',
    [
        'ff15:7079:7468:6f6e:6465:6d6f:6d63:6173',
        'ff02::1',
        'ff01::1',
        '239.74.163.2',
        'localhost',
        '::1',
    ],
)
def test_other_groups_are_refused_naming_the_bus(channel):
    with pytest.raises(TransportError, match="CAN bus 'can2'"):
        check_multicast_group('can2', channel)
    with pytest.raises(TransportError, match="'can2'"):
        open_can_bus(CanBusParams('can2', 'udp_multicast', channel, 1_000_000))


def test_unknown_interface_is_refused():
    with pytest.raises(TransportError, match="interface 'pcan' is not supported"):
        open_can_bus(CanBusParams('can0', 'pcan', 'x', 1_000_000))


def test_frame_bits_count_worst_case_stuffing_and_interframe_space():
    assert frame_bits(8, False) == 135  # 44 + 64 + 24 stuff bits + 3 IFS
    assert frame_bits(0, False) == 55
    assert frame_bits(8, True) == 160
    assert frame_bits(4, True) == 120


def test_virtual_bus_round_trip_counts_frames_and_skips_remote_frames():
    channel = f'phil-test-{random.random()}'
    params = CanBusParams('can0', 'virtual', channel, 1_000_000)
    controller = CanTransport('can0', open_can_bus(params))
    device = can.Bus(interface='virtual', channel=channel)
    try:
        assert controller.send(CanFrame(0x304, b'\x00\x00\x03\xe8', True))
        message = device.recv(WAIT_S)
        assert (message.arbitration_id, bytes(message.data), message.is_extended_id) == (
            0x304,
            b'\x00\x00\x03\xe8',
            True,
        )
        device.send(can.Message(arbitration_id=0x187, data=bytes(8), is_extended_id=False))
        device.send(can.Message(arbitration_id=0x1, is_remote_frame=True, is_extended_id=False))
        frames = drain_until(controller, 1)
        assert frames == [CanFrame(0x187, bytes(8), False)]
        assert controller.ignored == 1
        assert controller.frames_sent == 1 and controller.frames_received == 1
        assert controller.bits_sent == frame_bits(4, True)
        assert controller.bits_received == frame_bits(8, False)
        assert controller.drain([]) == 0  # nothing left, does not wait
    finally:
        controller.close()
        device.shutdown()


def test_send_failure_is_counted_not_raised():
    class RefusingBus:
        def send(self, message, timeout=None):
            raise can.CanOperationError('buffer full')

        def shutdown(self):
            pass

    refusing = CanTransport('can1', RefusingBus())
    assert refusing.send(CanFrame(0x80, b'')) is False
    assert refusing.send_errors == 1 and 'buffer full' in refusing.last_error


def test_udp_multicast_isolates_groups_drops_echo_and_survives_garbage():
    group, other_group = unique_group(), unique_group()
    a = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    b = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    c = CanTransport(
        'can1', open_can_bus(CanBusParams('can1', 'udp_multicast', other_group, 10**6))
    )
    raw = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
        raw.sendto(b'\xc1 not msgpack', (group, 43113))
        assert a.send(CanFrame(0x80, b''))
        frames = drain_until(b, 1)
        assert frames == [CanFrame(0x80, b'')]
        assert b.receive_errors == 1
        time.sleep(0.02)
        own: list[CanFrame] = []
        a.drain(own)
        # The kernel filter drops the echo: it never reaches user space to be counted.
        assert own == [] and a.echoes == 0
        assert b.send(CanFrame(0x181, b'\x01'))  # the filter drops only a's own port
        assert drain_until(a, 1) == [CanFrame(0x181, b'\x01')]
        other: list[CanFrame] = []
        c.drain(other)
        assert other == [] and c.frames_received == 0
    finally:
        raw.close()
        for bus in (a, b, c):
            bus.close()


def test_a_malformed_held_datagram_is_counted_and_its_whole_frames_kept():
    import msgpack

    group = unique_group()
    b = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    raw = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    good = [0x181, b'\x01', False, 0x1ABCDEF, b'\x02\x03', True]
    datagrams = [
        [time.monotonic(), 'other', *good[:4]],  # not whole frames: dropped
        [time.monotonic(), 'other', 0x182, 'text', False, *good],  # frame 0 is not one
        [time.monotonic(), 'other', 0x183, bytes(9), False],  # 9 bytes: not classic CAN
        ['not a time', 'other', *good],  # whole frames without a send time
    ]
    try:
        raw.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
        for datagram in datagrams:
            raw.sendto(msgpack.packb(datagram, use_bin_type=True), (group, 43113))
        frames: list[CanFrame] = []
        sent_at: list[float] = []
        deadline = time.monotonic() + WAIT_S
        while len(frames) < 4 and time.monotonic() < deadline:
            b.drain(frames, 1000, sent_at)
        pair = [CanFrame(0x181, b'\x01'), CanFrame(0x1ABCDEF, b'\x02\x03', True)]
        assert frames == pair + pair
        assert b.receive_errors == 3 and 'not (id, data of at most 8 bytes' in b.last_error
        assert b.frames_received == 4 and b.bits_received > 0
        assert all(math.isfinite(t) for t in sent_at[:2]) and all(map(math.isnan, sent_at[2:]))
    finally:
        raw.close()
        b.close()


def test_without_the_kernel_filter_own_frames_come_back_and_are_dropped_by_tag():
    group = unique_group()
    a = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    b = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    sock = a.bus._multicast._socket
    sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_FILTER, 0)
    a._fast.close()
    a._fast = UdpFastPath(
        sock, a.bus._multicast._send_destination, a._tag, filter_own_frames=False
    )
    try:
        assert a.send(CanFrame(0x80, b''))
        assert drain_until(b, 1) == [CanFrame(0x80, b'')]
        deadline = time.monotonic() + WAIT_S
        own: list[CanFrame] = []
        while a.echoes == 0 and time.monotonic() < deadline:
            a.drain(own)
        assert own == [] and a.echoes == 1
    finally:
        a.close()
        b.close()


def test_udp_multicast_frames_carry_their_send_time():
    group = unique_group()
    a = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    b = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    try:
        before = time.monotonic()
        assert a.send(CanFrame(0x181, b'\x01'))
        after = time.monotonic()
        frames: list[CanFrame] = []
        sent_at: list[float] = []
        deadline = time.monotonic() + WAIT_S
        while not frames and time.monotonic() < deadline:
            b.drain(frames, sent_at=sent_at)
        assert frames == [CanFrame(0x181, b'\x01')]
        assert len(sent_at) == 1 and before <= sent_at[0] <= after
    finally:
        for bus in (a, b):
            bus.close()


def test_held_frames_leave_as_one_datagram_each_with_its_send_time_and_order():
    group = unique_group()
    a = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    b = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    listener = None  # python-can's bus: joins only for the single frame (held ones are ours)
    frames = [
        CanFrame(0x200 + index, bytes([index] * 8)) for index in range(MAX_FRAMES_PER_DATAGRAM + 5)
    ]
    try:
        a.hold()
        stamps = []
        for frame in frames:
            stamps.append(time.monotonic())
            assert a.send(frame)
        # The first full datagram left when it filled up; the rest waits for the release.
        received: list[CanFrame] = []
        sent_at: list[float] = []
        deadline = time.monotonic() + WAIT_S
        while len(received) < MAX_FRAMES_PER_DATAGRAM and time.monotonic() < deadline:
            b.drain(received, 1000, sent_at)
        assert received == frames[:MAX_FRAMES_PER_DATAGRAM]
        before_release = time.monotonic()
        assert a.release() and a.release()  # a second release has nothing to send
        after_release = time.monotonic()
        while len(received) < len(frames) and time.monotonic() < deadline:
            b.drain(received, 1000, sent_at)
        assert received == frames and a.frames_sent == b.frames_received == len(frames)
        # Each frame carries the time its datagram left: the full one while the last frame
        # that filled it was sent, the rest at the release.
        full = MAX_FRAMES_PER_DATAGRAM
        assert all(stamps[full - 1] <= sent <= stamps[full] for sent in sent_at[:full])
        assert all(before_release <= sent <= after_release for sent in sent_at[full:])
        # A single frame, held or not, is what python-can's own bus reads.
        listener = can.Bus(interface='udp_multicast', channel=group, receive_own_messages=False)
        a.hold()
        assert a.send(CanFrame(0x181, b'\x01')) and a.release()
        message = listener.recv(WAIT_S)
        while message is not None and message.arbitration_id != 0x181:
            message = listener.recv(WAIT_S)
        assert message is not None and bytes(message.data) == b'\x01'
    finally:
        if listener is not None:
            listener.shutdown()
        for bus in (a, b):
            bus.close()


def test_a_release_that_the_socket_refuses_is_counted():
    group = unique_group()
    a = CanTransport('can0', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6)))
    a.hold()
    assert a.send(CanFrame(0x80, b''))
    a._fast._send_sock.close()
    assert not a.release()
    assert a.send_errors == 1 and 'send:' in a.last_error
    a.close()


def test_frames_without_a_send_time_report_nan():
    params = CanBusParams('can0', 'virtual', f'sent-at-{uuid.uuid4()}', 10**6)
    a, b = (CanTransport('can0', open_can_bus(params)) for _ in range(2))
    try:
        assert a.send(CanFrame(0x181, b'\x01'))
        frames: list[CanFrame] = []
        sent_at: list[float] = []
        b.drain(frames, sent_at=sent_at)
        assert frames == [CanFrame(0x181, b'\x01')] and len(sent_at) == 1
        assert math.isnan(sent_at[0])
    finally:
        for bus in (a, b):
            bus.close()


@pytest.fixture
def pty_pair():
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    yield master, os.ttyname(slave)
    os.close(master)
    os.close(slave)


def test_serial_port_on_a_pty_opens_and_exchanges_bytes(pty_pair):
    master, path = pty_pair
    warnings: list[str] = []
    assert transport.is_pty(path)
    port = open_serial_port(SerialBusParams('dxl', path, 4_500_000, 2.0, 1), warnings.append)
    serial_transport = SerialTransport('dxl', port)
    try:
        assert serial_transport.read() == b''  # non-blocking
        assert serial_transport.write(b'\xff\xff\xfd\x00\x01')
        assert os.read(master, 64) == b'\xff\xff\xfd\x00\x01'
        os.write(master, b'\x01\x02\x03')
        deadline = time.monotonic() + WAIT_S
        data = b''
        while len(data) < 3 and time.monotonic() < deadline:
            data += serial_transport.read()
        assert data == b'\x01\x02\x03'
        assert serial_transport.bytes_sent == 5 and serial_transport.bytes_received == 3
        assert all('latency' not in w for w in warnings)  # never advice for a PTY
    finally:
        serial_transport.close()


FILL_THE_LINE = """
import sys, time
from phil_description.core import SerialBusParams
from phil_hardware.core.transport import SerialTransport, open_serial_port
port = open_serial_port(SerialBusParams('dxl', sys.argv[1], 4_500_000, 2.0, 1), lambda text: None)
line = SerialTransport('dxl', port)
packets = 0
while packets < 100_000 and line.write(bytes(40)):
    packets += 1
started = time.monotonic()
again = line.write(bytes(40))
print(packets, line.write_errors, again, time.monotonic() - started, line.last_error)
"""


def test_a_full_serial_line_drops_the_packet_instead_of_waiting(pty_pair):
    # Nobody reads the master end, so the line fills up (a PTY holds some 20 kB). pyserial's
    # write(write_timeout=0) then retries EAGAIN in a busy loop, which in the SCHED_FIFO bus
    # loop froze every bus for as long as the simulator did not read. In a child process: a
    # write that spins cannot be interrupted from here.
    master, path = pty_pair
    try:
        result = subprocess.run(
            [sys.executable, '-c', FILL_THE_LINE, path], timeout=20, capture_output=True, text=True
        )
    except subprocess.TimeoutExpired:
        pytest.fail('a write waited for room on the full line')
    assert result.returncode == 0, result.stderr
    packets, errors, again, seconds, last_error = result.stdout.split(maxsplit=4)
    # A write that spun would have waited for a reader forever (the run's timeout above).
    assert 25 < int(packets) < 100_000 and int(errors) == 2 and again == 'False'
    assert 'output buffer full' in last_error


@pytest.mark.timeout(30)
def test_reading_the_line_never_waits_for_the_kernel(pty_pair, monkeypatch):
    # A read of a tty can wait for the kernel's tty worker (a time-sharing thread); the bus
    # loop's read takes what a reader thread has read, and never reads the descriptor itself.
    # Here every os.read of the reader waits until the test lets it go.
    master, path = pty_pair
    released = threading.Event()
    real_read = os.read

    def kernel_read(fd, size):
        released.wait()
        return real_read(fd, size)

    monkeypatch.setattr(tty_reader.os, 'read', kernel_read)
    port = open_serial_port(SerialBusParams('dxl', path, 4_500_000, 2.0, 1), lambda text: None)
    line = SerialTransport('dxl', port)
    try:
        os.write(master, b'\x01\x02')
        for _ in range(100):
            assert line.read() == b''  # the reader waits in its read: the loop does not
        released.set()
        os.write(master, b'\x03')
        data = b''
        while len(data) < 3:  # the pytest timeout bounds it
            data += line.read()
            time.sleep(0.001)
        assert data == b'\x01\x02\x03' and line.bytes_received == 3
        os.write(master, b'\x04\x05')
        while line.bytes_arrived < 5:  # the reader holds them for the next read
            time.sleep(0.001)
        assert line.bytes_received == 3 and line.read() == b'\x04\x05'
        assert line.bytes_arrived == line.bytes_received == 5
    finally:
        released.set()
        line.close()
    # close() waits a second for the reader; a busy machine may run it later, but it ends.
    for thread in threading.enumerate():
        if thread.name == 'tty-reader-dxl':
            thread.join()  # the pytest timeout bounds it


@pytest.mark.timeout(30)
def test_a_line_that_fails_counts_read_errors_and_keeps_the_loop_going():
    master, slave = os.openpty()
    tty.setraw(master)
    path = os.ttyname(slave)
    port = open_serial_port(SerialBusParams('dxl', path, 4_500_000, 2.0, 1), lambda text: None)
    line = SerialTransport('dxl', port)
    try:
        os.close(slave)
        os.close(master)  # the other end is gone: reading the line fails (EIO)
        while line.read_errors == 0:  # the pytest timeout bounds it
            assert line.read() == b''
            time.sleep(0.001)
        assert line.last_error.startswith('read: ')
    finally:
        line.close()


def test_missing_serial_port_is_an_error_naming_the_bus(tmp_path):
    params = SerialBusParams('dxl', str(tmp_path / 'ttyUSB9'), 4_500_000, 2.0, 1)
    with pytest.raises(TransportError, match="serial bus 'dxl': cannot open"):
        open_serial_port(params, lambda text: None)


def test_latency_timer_advice_for_a_slow_usb_adapter(tmp_path, monkeypatch):
    assert transport.read_latency_timer_ms('/dev/nonexistent-tty') is None
    sysfs = tmp_path / 'latency_timer'
    sysfs.write_text('16\n')
    monkeypatch.setattr(serial_port, 'latency_timer_path', lambda port: sysfs)
    advice = transport.latency_advice('/dev/ttyUSB0', 1)
    assert 'latency_timer is 16 ms (wanted 1 ms)' in advice and str(sysfs) in advice
    sysfs.write_text('1\n')
    assert transport.latency_advice('/dev/ttyUSB0', 1) is None


def test_serial_errors_are_counted_not_raised():
    class BrokenPort:
        in_waiting = 5

        def write(self, data):
            raise OSError('device disconnected')

        def read(self, size):
            raise OSError('device disconnected')

        def close(self):
            raise OSError('already gone')

    broken = SerialTransport('dxl', BrokenPort())
    assert broken.write(b'abc') is False
    assert broken.read() == b''
    broken.close()
    assert broken.write_errors == 1 and broken.read_errors == 1


def test_udp_multicast_sockets_get_a_receive_buffer_for_seconds_of_traffic():
    from phil_hardware.core.transport.can_bus import UDP_RECEIVE_BUFFER_BYTES

    bus = open_can_bus(CanBusParams('can0', 'udp_multicast', unique_group(), 10**6))
    try:
        granted = bus._multicast._socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    finally:
        bus.shutdown()
    limit = int(Path('/proc/sys/net/core/rmem_max').read_text())
    wanted = (
        UDP_RECEIVE_BUFFER_BYTES if os.geteuid() == 0 else min(limit, UDP_RECEIVE_BUFFER_BYTES)
    )
    assert granted >= wanted  # Linux reports twice the request (bookkeeping included)
