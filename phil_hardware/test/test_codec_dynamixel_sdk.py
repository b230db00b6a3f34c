"""The Dynamixel codec against the independent ROBOTIS `dynamixel_sdk` (Protocol 2.0).

The SDK writes into a fake port that records bytes and serves our status packets, so we check
both directions byte for byte: the SDK's instruction packets equal ours, and the SDK's readers
accept our status packets. One test runs the SDK's real PortHandler over a PTY against a tiny
servo made of our codec.
"""

from __future__ import annotations

import os
import select
import threading
import tty

import pytest
from dynamixel_sdk import COMM_SUCCESS, GroupSyncRead, GroupSyncWrite, PacketHandler, PortHandler
from hypothesis import assume, example, given
from hypothesis import strategies as st

from phil_hardware.core.codecs import dynamixel, dynamixel_packet
from phil_hardware.core.codecs.dynamixel import ControlTable, Instruction, ProfileGoal

XM430_W210_MODEL = 1030


class FakePort:
    """Just enough of dynamixel_sdk.PortHandler: records writes, serves queued bytes."""

    def __init__(self, replies: bytes = b'') -> None:
        self.is_using = False
        self.written: list[bytes] = []
        self._pending = bytearray(replies)

    def clearPort(self) -> None:  # noqa: N802 - SDK interface
        pass

    def writePort(self, packet) -> int:  # noqa: N802
        self.written.append(bytes(packet))
        return len(packet)

    def readPort(self, length: int) -> bytes:  # noqa: N802
        chunk = bytes(self._pending[:length])
        del self._pending[:length]
        return chunk

    def setPacketTimeout(self, packet_length: int) -> None:  # noqa: N802
        pass

    def setPacketTimeoutMillis(self, msec: float) -> None:  # noqa: N802
        pass

    def isPacketTimeout(self) -> bool:  # noqa: N802
        return not self._pending

    def getBaudRate(self) -> int:  # noqa: N802
        return 4_500_000


@pytest.fixture
def handler() -> PacketHandler:
    return PacketHandler(2.0)


def test_ping_bytes_and_status_accepted(handler):
    port = FakePort(dynamixel.build_status_packet(1, 0, bytes.fromhex('060426')))
    model, result, error = handler.ping(port, 1)
    assert port.written == [dynamixel.build_ping(1)]
    assert (result, error, model) == (COMM_SUCCESS, 0, XM430_W210_MODEL)


def test_torque_enable_write_bytes_and_empty_status(handler):
    port = FakePort(dynamixel.build_status_packet(2))
    result, error = handler.write1ByteTxRx(port, 2, ControlTable.TORQUE_ENABLE, 1)
    assert port.written == [dynamixel.build_write(2, ControlTable.TORQUE_ENABLE, b'\x01')]
    assert (result, error) == (COMM_SUCCESS, 0)


def test_read_bytes_and_status_error_byte_reach_the_sdk(handler):
    port = FakePort(dynamixel.build_status_packet(2, 0x80, (3072).to_bytes(4, 'little')))
    value, result, error = handler.read4ByteTxRx(port, 2, ControlTable.PRESENT_POSITION)
    assert port.written == [dynamixel.build_read(2, ControlTable.PRESENT_POSITION, 4)]
    assert (value, result, error) == (3072, COMM_SUCCESS, 0x80)


def test_group_sync_write_equals_profile_goal_builder(handler):
    goals = {1: ProfileGoal(2000, 1000, 2048), 2: ProfileGoal(0, 0, 1024)}
    port = FakePort()
    group = GroupSyncWrite(port, handler, ControlTable.PROFILE_ACCELERATION, 12)
    for dxl_id, goal in goals.items():
        data = b''.join(value.to_bytes(4, 'little') for value in goal)
        assert group.addParam(dxl_id, list(data))
    assert group.txPacket() == COMM_SUCCESS
    assert port.written == [dynamixel.build_profile_goal_sync_write(goals)]


def test_group_sync_read_bytes_and_answers_with_leading_garbage(handler):
    ticks = {1: 2048, 2: 1024}
    replies = b'\x00\x13' + b''.join(
        dynamixel.build_status_packet(dxl_id, 0, tick.to_bytes(4, 'little'))
        for dxl_id, tick in ticks.items()
    )
    port = FakePort(replies)
    group = GroupSyncRead(port, handler, ControlTable.PRESENT_POSITION, 4)
    for dxl_id in ticks:
        group.addParam(dxl_id)
    assert group.txRxPacket() == COMM_SUCCESS
    assert port.written == [dynamixel.build_present_position_sync_read(list(ticks))]
    for dxl_id, tick in ticks.items():
        assert group.isAvailable(dxl_id, ControlTable.PRESENT_POSITION, 4)
        assert group.getData(dxl_id, ControlTable.PRESENT_POSITION, 4) == tick


def test_sdk_rejects_our_status_packet_when_crc_is_corrupted(handler):
    packet = bytearray(dynamixel.build_status_packet(1, 0, b'\x00\x00\x00\x00'))
    packet[-1] ^= 0xFF
    _, result, _ = handler.readRx(FakePort(bytes(packet)), 1, 4)
    assert result != COMM_SUCCESS


def test_sdk_tx_does_not_stuff_so_stuffing_is_checked_on_rx_and_by_add_stuffing(handler):
    # dynamixel_sdk 4.1.0 txPacket discards addStuffing's result: its packet needing stuffing
    # is unstuffed on the wire. Our builder follows the manual instead.
    port = FakePort()
    handler.writeTxOnly(port, 1, ControlTable.GOAL_POSITION, 4, [0xFF, 0xFF, 0xFD, 0x00])
    ours = dynamixel.build_write(1, ControlTable.GOAL_POSITION, bytes.fromhex('fffffd00'))
    assert port.written[0] != ours
    assert len(ours) == len(port.written[0]) + 1


stuffing_prone = st.lists(
    st.sampled_from([0xFF, 0xFD, 0x00]) | st.integers(0, 255), max_size=30
).map(bytes)


@given(st.integers(0, 252), st.integers(0, 255))
def test_crc_equals_sdk(dxl_id, seed):
    data = bytes((dxl_id + seed * offset) & 0xFF for offset in range(seed % 40))
    assert dynamixel_packet.crc16(data) == PacketHandler(2.0).updateCRC(0, list(data), len(data))


@given(stuffing_prone)
def test_stuffing_equals_sdk_add_stuffing(params):
    handler = PacketHandler(2.0)
    body = bytes((Instruction.WRITE,)) + params
    length = len(body) + 2
    unstuffed = list(dynamixel_packet.HEADER + bytes((1,)) + length.to_bytes(2, 'little') + body)
    sdk_packet = handler.addStuffing(unstuffed + [0, 0])
    ours = dynamixel_packet.build_packet(1, Instruction.WRITE, params)
    assert bytes(sdk_packet[:-2]) == ours[:-2]


def sdk_unstuffs_its_own_stuffing(params: bytes) -> bool:
    """dynamixel_sdk 4.1 compacts in place while it still looks behind, so a second pattern
    right after a first stuffed one (e.g. FF FF FD FF FD FD) loses a byte on its own round
    trip. Such payloads say nothing about our packets; the oracle is only used elsewhere."""
    handler = PacketHandler(2.0)
    body = [0x55, 0] + list(params)
    raw = list(dynamixel_packet.HEADER) + [1] + list((len(body) + 2).to_bytes(2, 'little')) + body
    stuffed = handler.addStuffing(raw + [0, 0])
    return bytes(handler.removeStuffing(list(stuffed))[: len(raw)]) == bytes(raw)


@given(st.integers(0, 252), st.integers(0, 127), stuffing_prone.filter(len))
@example(0, 0, b'\xff\xff\xfd\x01')
def test_sdk_reader_accepts_our_status_packets(dxl_id, error, params):
    assume(sdk_unstuffs_its_own_stuffing(params))
    port = FakePort(dynamixel.build_status_packet(dxl_id, error, params))
    data, result, received_error = PacketHandler(2.0).readRx(port, dxl_id, len(params))
    assert result == COMM_SUCCESS
    assert (bytes(data), received_error) == (params, error)


def _serve_one_servo(master_fd: int, stop: threading.Event, dxl_id: int, tick: int) -> None:
    """A servo built from our codec: answers PING and READ of present position."""
    buffered = b''
    while not stop.is_set():
        readable, _, _ = select.select([master_fd], [], [], 0.02)
        if not readable:
            continue
        packets, buffered = dynamixel_packet.split_packets(buffered + os.read(master_fd, 256))
        for raw in packets:
            packet = dynamixel.parse_instruction_packet(raw)
            if packet.dxl_id != dxl_id:
                continue
            if packet.instruction == Instruction.PING:
                reply = dynamixel.build_status_packet(dxl_id, 0, bytes.fromhex('060426'))
            else:
                reply = dynamixel.build_status_packet(dxl_id, 0, tick.to_bytes(4, 'little'))
            os.write(master_fd, reply)


def test_the_sdk_unstuffing_defect_is_real_and_ours_is_right():
    params = b'\xff\xff\xfd\xff\xfd\xfd'
    assert not sdk_unstuffs_its_own_stuffing(params)
    status = dynamixel.parse_status_packet(dynamixel.build_status_packet(3, 0, params))
    assert status.params == params


def test_sdk_port_handler_over_pty_talks_to_codec_servo(patient_dynamixel_sdk):
    master_fd, slave_fd = os.openpty()
    tty.setraw(master_fd)
    tty.setraw(slave_fd)
    stop = threading.Event()
    servo = threading.Thread(target=_serve_one_servo, args=(master_fd, stop, 2, 1024))
    servo.start()
    port = PortHandler(os.ttyname(slave_fd))
    try:
        assert port.openPort()
        handler = PacketHandler(2.0)
        model, result, _ = handler.ping(port, 2)
        assert (result, model) == (COMM_SUCCESS, XM430_W210_MODEL)
        tick, result, _ = handler.read4ByteTxRx(port, 2, ControlTable.PRESENT_POSITION)
        assert (result, dynamixel.tick_to_motor_deg(tick)) == (COMM_SUCCESS, 90.0)
    finally:
        stop.set()
        servo.join()
        if port.is_open:
            port.closePort()
        os.close(slave_fd)
        os.close(master_fd)
