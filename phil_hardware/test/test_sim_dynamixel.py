"""The simulated Dynamixel bank: ROBOTIS dynamixel_sdk on the PTY, and the bank on a manual clock.

The SDK tests open the PTY's symlink exactly as the controller opens /dev/ttyUSB0 (its baud-rate
call fails on a PTY and is tolerated) while the device loop runs in its thread.
"""

from __future__ import annotations

import math
import os
import time

import pytest
from dynamixel_sdk import (
    COMM_RX_CORRUPT,
    COMM_RX_TIMEOUT,
    COMM_SUCCESS,
    GroupSyncRead,
    GroupSyncWrite,
    PacketHandler,
    PortHandler,
)

from phil_description.core import default_robot_model
from phil_hardware.core.codecs import dynamixel, dynamixel_packet
from phil_hardware.core.codecs.dynamixel import ControlTable, ProfileGoal
from phil_hardware.sim import (
    DynamixelBank,
    DynamixelConfig,
    DynamixelServo,
    PtyPort,
    SimConfig,
    SimulatedRobot,
)

XM430_W210_T = 1030
YAW, PITCH = 'head_yaw', 'head_pitch'
DEADLINE_S = 10.0


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


@pytest.fixture
def sdk(model, tmp_path, patient_dynamixel_sdk):
    """(robot, port handler, packet handler) with the device loop running."""
    link = tmp_path / 'ttyDXL'
    with (
        PtyPort(link) as pty,
        SimulatedRobot(model, {}, pty, config=SimConfig(impacts=None)) as robot,
    ):
        port = PortHandler(str(link))
        assert port.openPort()
        port.setBaudRate(4_500_000)  # refused on a PTY (and by this SDK): must not matter
        yield robot, port, PacketHandler(2.0)
        port.closePort()
    assert not link.is_symlink()  # the link goes with the PTY


def _goal_record(tick: int) -> bytes:
    return b''.join(value.to_bytes(4, 'little') for value in (0, 0, tick))


def test_sdk_ping_torque_sync_write_and_sync_read_converge(model, sdk):
    robot, port, handler = sdk
    goals = {1: 2500, 2: 1500}
    for dxl_id in goals:
        assert handler.ping(port, dxl_id) == (XM430_W210_T, COMM_SUCCESS, 0)
        assert handler.write1ByteTxRx(port, dxl_id, ControlTable.TORQUE_ENABLE, 1) == (
            COMM_SUCCESS,
            0,
        )
    writer = GroupSyncWrite(port, handler, ControlTable.PROFILE_ACCELERATION, 12)
    reader = GroupSyncRead(port, handler, ControlTable.PRESENT_POSITION, 4)
    for dxl_id, tick in goals.items():
        assert writer.addParam(dxl_id, _goal_record(tick))
        assert reader.addParam(dxl_id)
    assert writer.txPacket() == COMM_SUCCESS

    deadline = time.monotonic() + DEADLINE_S
    present = {}
    while present != goals and time.monotonic() < deadline:
        assert reader.txRxPacket() == COMM_SUCCESS
        present = {i: reader.getData(i, ControlTable.PRESENT_POSITION, 4) for i in goals}
    assert present == goals

    truth = robot.joint_positions_rad()
    for joint, dxl_id in ((YAW, 1), (PITCH, 2)):
        motor = model.joint(joint).motor
        expected = motor.motor_to_joint_rad(dynamixel.tick_to_motor_rad(goals[dxl_id]))
        assert truth[model.joint(joint).index] == pytest.approx(expected, abs=2e-3)


def test_sdk_sees_every_injected_fault(model, sdk):
    robot, port, handler = sdk
    robot.set_fault(YAW, 'silence')
    assert handler.ping(port, 1)[1] == COMM_RX_TIMEOUT
    assert handler.ping(port, 2)[1] == COMM_SUCCESS
    robot.set_fault(YAW, 'corrupt')
    robot.clear_fault(YAW, 'silence')
    assert handler.ping(port, 1)[1] == COMM_RX_CORRUPT
    robot.clear_fault(YAW)
    robot.set_fault(YAW, 'short')
    assert handler.ping(port, 1)[1] in (COMM_RX_CORRUPT, COMM_RX_TIMEOUT)
    robot.clear_fault(YAW)

    robot.set_fault(YAW, 'over_current')
    _, result, error = handler.ping(port, 1)
    assert result == COMM_SUCCESS and error & dynamixel.ERROR_ALERT_BIT
    status, result, _ = handler.read1ByteTxRx(port, 1, ControlTable.HARDWARE_ERROR_STATUS)
    assert result == COMM_SUCCESS and status == 0x20  # overload
    robot.clear_fault(YAW)

    robot.set_fault(PITCH, 'out_of_range')
    raw, result, _ = handler.read4ByteTxRx(port, 2, ControlTable.PRESENT_POSITION)
    tick = int.from_bytes(raw.to_bytes(4, 'little'), 'little', signed=True)  # SDK: unsigned
    joint = model.joint(PITCH)
    assert result == COMM_SUCCESS
    assert joint.motor.motor_to_joint_rad(dynamixel.tick_to_motor_rad(tick)) > joint.upper_rad


def test_garbage_on_the_line_is_skipped(sdk):
    robot, port, handler = sdk
    garbage = bytes(range(256)) + b'\xff\xff\xfd\x00\x01\xff\xff' + b'\x00' * 20
    port.writePort(garbage)
    assert handler.ping(port, 2) == (XM430_W210_T, COMM_SUCCESS, 0)
    assert robot.bank.bytes_discarded >= 256


# ------------------------------------------------------------------ the bank on a manual clock
@pytest.fixture
def bank(model):
    config = DynamixelConfig(return_delay_s=100e-6)
    return DynamixelBank(
        [DynamixelServo(model.joint(YAW), config), DynamixelServo(model.joint(PITCH), config)]
    )


def _statuses(data: bytes) -> list[dynamixel.StatusPacket]:
    return dynamixel.StatusPacketReader().feed(data)


def test_replies_wait_for_the_return_delay_one_after_another(bank):
    bank.receive(dynamixel.build_present_position_sync_read([2, 1]), now_s=1.0)
    assert bank.poll(1.0 + 50e-6) == b''
    first = _statuses(bank.poll(1.0 + 100e-6))
    assert [s.dxl_id for s in first] == [2]
    assert bank.poll(1.0 + 150e-6) == b''
    second = _statuses(bank.poll(1.0 + 200e-6))
    assert [s.dxl_id for s in second] == [1]
    assert dynamixel.decode_present_position(second[0]) == 2048  # yaw at joint 0


def test_unstuffed_instruction_from_a_lax_sender_is_accepted(bank):
    data = b'\xff\xff\xfd\x00'  # must be stuffed on the wire; dynamixel_sdk 4.1 does not
    address = ControlTable.PROFILE_ACCELERATION.to_bytes(2, 'little')
    body = bytes((1, 9, 0, dynamixel.Instruction.WRITE)) + address + data
    packet = dynamixel_packet.HEADER[:3] + b'\x00' + body
    packet += dynamixel_packet.crc16(packet).to_bytes(2, 'little')
    bank.receive(packet, now_s=0.0)
    (status,) = _statuses(bank.poll(1.0))
    assert status.error == 0
    assert bank.servos[1].table[108:112] == data


def _run(bank, seconds, step_s=0.001):
    for _ in range(round(seconds / step_s)):
        bank.advance(step_s)


def test_torque_off_means_no_motion(bank):
    bank.receive(dynamixel.build_profile_goal_sync_write({1: ProfileGoal(0, 0, 3000)}), 0.0)
    _run(bank, 0.5)
    assert bank.servos[1].axis.position_rad == 0.0


def test_profile_velocity_limits_the_speed(bank):
    servo = bank.servos[1]
    bank.receive(dynamixel.build_write(1, ControlTable.TORQUE_ENABLE, b'\x01'), 0.0)
    bank.receive(dynamixel.build_profile_goal_sync_write({1: ProfileGoal(0, 50, 3000)}), 0.0)
    _run(bank, 0.2)
    speed = 50 * 0.229 * 2 * math.pi / 60  # 50 units of 0.229 rev/min
    assert abs(servo.axis.velocity_rad_s) == pytest.approx(speed, rel=1e-6)


def test_time_based_profile_arrives_after_the_profile_time(bank):
    servo = bank.servos[2]
    goal = (1324).to_bytes(4, 'little')  # 300 ticks from the power-on 1024
    bank.receive(dynamixel.build_write(2, 10, b'\x04'), 0.0)  # drive mode: time-based profile
    bank.receive(dynamixel.build_write(2, ControlTable.TORQUE_ENABLE, b'\x01'), 0.0)
    bank.receive(dynamixel.build_profile_goal_sync_write({2: ProfileGoal(200, 1000, 1324)}), 0.0)
    _run(bank, 0.95)
    assert servo.read(ControlTable.PRESENT_POSITION, 4)[1] != goal
    _run(bank, 0.1)
    assert servo.read(ControlTable.PRESENT_POSITION, 4)[1] == goal


def test_servo_refuses_eeprom_writes_with_torque_on_and_goals_beyond_its_limits(bank):
    bank.receive(dynamixel.build_write(2, ControlTable.TORQUE_ENABLE, b'\x01'), 0.0)
    bank.receive(dynamixel.build_write(2, 9, b'\x00'), 0.0)  # return delay: EEPROM
    bank.receive(dynamixel.build_write(2, 116, (5000).to_bytes(4, 'little')), 0.0)
    bank.receive(dynamixel.build_write(2, 132, b'\x00' * 4), 0.0)  # present position: read-only
    bank.receive(dynamixel.build_ping(7), 0.0)  # nobody there: no reply
    errors = [status.error for status in _statuses(bank.poll(1.0))]
    assert errors == [0, 7, 6, 7]


def test_pty_port_refuses_to_replace_a_regular_file_and_replaces_a_stale_link(tmp_path):
    occupied = tmp_path / 'ttyUSB0'
    occupied.write_text('not a device')
    with pytest.raises(FileExistsError, match='not a symlink'):
        PtyPort(occupied)
    assert occupied.read_text() == 'not a device'

    stale = tmp_path / 'sub' / 'ttyDXL'
    stale.parent.mkdir()
    stale.symlink_to('/dev/pts/nonexistent')
    with PtyPort(stale) as pty:
        assert os.readlink(stale) == pty.slave_path
    assert not stale.is_symlink()
