"""The simulated TMotor AK servos, seen from the controller's end of a python-can virtual bus.

The simulator runs on a manual clock and is stepped by the test, so every number is exact and
nothing waits. Frames are built and decoded with the project's codecs (real wire bytes).
"""

from __future__ import annotations

import math
import uuid

import can
import pytest

from phil_description.core import default_robot_model
from phil_hardware.core.codecs import CanFrame, CodecError, tmotor
from phil_hardware.sim import ManualClock, SimConfig, SimulatedRobot, TMotorDeviceConfig

STEP_S = 0.001
ELBOW = 'right_elbow'  # node 4 on can1, direction -1, gear 10
SHOULDER_2 = 'right_shoulder_2'  # node 3, also on can1


class Wire:
    """The controller's end of one virtual CAN channel."""

    def __init__(self, channel: str) -> None:
        self.bus = can.Bus(interface='virtual', channel=channel)

    def send(self, frame: CanFrame) -> None:
        self.bus.send(
            can.Message(
                arbitration_id=frame.arbitration_id,
                data=frame.data,
                is_extended_id=frame.is_extended_id,
            )
        )

    def send_raw(self, arbitration_id: int, data: bytes, extended: bool = True) -> None:
        self.bus.send(
            can.Message(arbitration_id=arbitration_id, data=data, is_extended_id=extended)
        )

    def drain(self) -> list[CanFrame]:
        frames = []
        while (message := self.bus.recv(0)) is not None:
            frames.append(
                CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id)
            )
        return frames


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


@pytest.fixture
def rig(model, request):
    """(robot, clock, wire) with only can1 simulated; ``config`` via indirect parametrize."""
    config = getattr(request, 'param', None) or SimConfig(impacts=None)
    channel = f'tmotor-{uuid.uuid4()}'
    sim_bus = can.Bus(interface='virtual', channel=channel)
    wire = Wire(channel)
    clock = ManualClock()
    robot = SimulatedRobot(model, {'can1': sim_bus}, clock=clock, config=config)
    robot.step()  # powered up at t = 0: each motor's status rhythm starts here
    yield robot, clock, wire
    sim_bus.shutdown()
    wire.bus.shutdown()


def run(robot, clock, seconds):
    for _ in range(round(seconds / STEP_S)):
        clock.advance(STEP_S)
        robot.step()


def statuses(frames, node):
    return [tmotor.decode_feedback(f) for f in frames if f.arbitration_id & 0xFF == node]


def node_of(model, joint):
    return model.joint(joint).motor.device_id


def broadcast_ms(robot, clock, wire, nodes, seconds) -> dict[int, list[int]]:
    """Step for ``seconds``; per node, the clock's milliseconds of each status it sent."""
    heard: dict[int, list[int]] = {node: [] for node in nodes}
    for _ in range(round(seconds / STEP_S)):
        clock.advance(STEP_S)
        robot.step()
        for frame in wire.drain():
            if frame.arbitration_id in heard:
                heard[frame.arbitration_id].append(round(clock.now() * 1000))
    return heard


def test_status_is_broadcast_at_200_hz_and_reads_zero_at_power_on(model, rig):
    robot, clock, wire = rig
    nodes = [node_of(model, joint) for joint in ('right_shoulder_1', SHOULDER_2, ELBOW)]
    for times in broadcast_ms(robot, clock, wire, nodes, 0.1).values():
        assert times[0] <= 5 and len(times) == 20  # every 5 ms from a phase of its own
        assert set(map(int.__sub__, times[1:], times[:-1])) == {5}
    run(robot, clock, 0.01)
    frames = wire.drain()
    for node in nodes:
        own = [f for f in frames if f.arbitration_id == node]
        assert own and all(not f.is_extended_id and len(f.data) == 8 for f in own)
        status = tmotor.decode_feedback(own[-1])
        assert (status.position_rad, status.speed_erpm, status.current_a) == (0.0, 0, 0.0)
        assert status.temperature_c == 30 and status.error_code == 0


def test_each_motor_broadcasts_on_a_rhythm_of_its_own_that_a_stall_keeps(model, rig):
    # Real motors power up at different instants: their broadcasts do not all fall in the
    # same millisecond (which made one controller tick handle every status at once).
    robot, clock, wire = rig
    nodes = [node_of(model, joint) for joint in ('right_shoulder_1', SHOULDER_2, ELBOW)]
    before = broadcast_ms(robot, clock, wire, nodes, 0.05)
    phases = {node: {ms % 5 for ms in times} for node, times in before.items()}
    assert all(len(phase) == 1 for phase in phases.values()), phases
    assert len({phase.pop() for phase in phases.values()}) == len(nodes)
    clock.advance(0.023)  # the simulator's loop stalls: no burst of missed broadcasts after it
    robot.step()
    frames = wire.drain()
    assert [len(statuses(frames, node)) for node in nodes] == [1] * len(nodes)
    after = broadcast_ms(robot, clock, wire, nodes, 0.05)
    for node in nodes:
        assert {ms % 5 for ms in after[node]} == {before[node][0] % 5}
        assert len(after[node]) == 10


@pytest.mark.parametrize(
    'rig',
    [SimConfig(impacts=None, tmotor=TMotorDeviceConfig(status_extended_id=True))],
    indirect=True,
)
def test_status_with_extended_id_matches_the_node_low_byte(model, rig):
    robot, clock, wire = rig
    run(robot, clock, 0.005)  # one status period
    frames = wire.drain()
    node = node_of(model, ELBOW)
    assert any(f.arbitration_id == 0x2900 | node and f.is_extended_id for f in frames)
    assert statuses(frames, node)[0].position_rad == 0.0


def test_set_rpm_integrates_to_the_expected_position(model, rig):
    robot, clock, wire = rig
    joint, motor = model.joint(ELBOW), model.joint(ELBOW).motor
    start = robot.joint_positions_rad()[joint.index]
    velocity = 0.5  # joint rad/s
    erpm = tmotor.joint_velocity_to_erpm(
        velocity, motor.direction_sign, motor.gear_ratio, motor.pole_pairs
    )
    wire.send(tmotor.encode_set_rpm(motor.device_id, erpm))
    run(robot, clock, 1.0)
    moving = statuses(wire.drain(), motor.device_id)[-1]
    wire.send(tmotor.encode_set_rpm(motor.device_id, 0))
    run(robot, clock, 0.05)

    lag = robot.config.tmotor.velocity_time_constant_s
    travelled = robot.joint_positions_rad()[joint.index] - start
    # 1 s at 0.5 rad/s behind a first-order lag, plus the lag's run-out after the stop.
    assert travelled == pytest.approx(velocity * 1.0, abs=2e-3)
    assert travelled < velocity * (1.0 + lag)
    assert moving.speed_erpm == pytest.approx(erpm, abs=10)
    assert 0 < abs(moving.current_a) < motor.current_limit_a / 10
    reported = statuses(wire.drain(), motor.device_id)[-1]
    assert motor.motor_to_joint_rad(reported.position_rad) == pytest.approx(
        robot.joint_positions_rad()[joint.index], abs=math.radians(0.05)
    )


def test_set_rpm_is_limited_to_the_joint_velocity_limit(model, rig):
    robot, clock, wire = rig
    joint = model.joint(ELBOW)
    wire.send(tmotor.encode_set_rpm(joint.motor.device_id, -100_000))
    run(robot, clock, 0.05)
    assert robot.joint_velocities_rad_s()[joint.index] == pytest.approx(
        joint.velocity_limit_rad_s, rel=1e-4
    )
    run(robot, clock, 0.1)  # on into the mechanical end stop, 10 deg beyond the hard limit
    assert robot.joint_velocities_rad_s()[joint.index] == 0.0
    assert robot.joint_positions_rad()[joint.index] == pytest.approx(
        joint.upper_rad + math.radians(10.0)
    )


def test_set_origin_zeroes_the_report_and_set_pos_is_relative_to_it(model, rig):
    robot, clock, wire = rig
    joint, motor = model.joint(ELBOW), model.joint(ELBOW).motor
    wire.send(tmotor.encode_set_rpm(motor.device_id, 3000))
    run(robot, clock, 0.2)
    wire.send(tmotor.encode_set_rpm(motor.device_id, 0))
    run(robot, clock, 0.05)
    moved_to = robot.joint_positions_rad()[joint.index]
    assert statuses(wire.drain(), motor.device_id)[-1].position_rad != 0.0

    wire.send(tmotor.encode_set_origin(motor.device_id))
    run(robot, clock, 0.01)
    assert statuses(wire.drain(), motor.device_id)[-1].position_rad == 0.0
    assert robot.joint_positions_rad()[joint.index] == pytest.approx(moved_to, abs=1e-6)

    wire.send(tmotor.encode_set_position(motor.device_id, 0.2))
    run(robot, clock, 0.3)
    assert robot.joint_positions_rad()[joint.index] == pytest.approx(
        moved_to + 0.2 * motor.direction_sign, abs=1e-4
    )
    assert statuses(wire.drain(), motor.device_id)[-1].position_rad == pytest.approx(
        0.2, abs=math.radians(0.1)
    )


def test_corrupt_command_frames_are_ignored_and_the_motor_still_answers(model, rig):
    robot, clock, wire = rig
    joint, motor = model.joint(ELBOW), model.joint(ELBOW).motor
    node = motor.device_id
    device = robot.device(ELBOW)
    start = robot.joint_positions_rad()[joint.index]
    wire.send_raw(node | 3 << 8, b'\x00\x10')  # SET_RPM with 2 of 4 bytes
    wire.send_raw(node | 9 << 8, b'\x00\x00\x10\x00')  # unknown packet id
    wire.send_raw(node | 5 << 8, b'\x07')  # unknown origin mode
    wire.send_raw(node | 4 << 8, b'')  # SET_POS without payload
    wire.send_raw(node, b'\xff' * 8, extended=False)  # MIT-style standard frame: not ours
    run(robot, clock, 0.05)
    assert device.frames_rejected == 4
    assert 'right_elbow' in device.last_rejection and '0x00000404' in device.last_rejection
    assert robot.joint_positions_rad()[joint.index] == start
    assert len(statuses(wire.drain(), node)) == 10

    wire.send(tmotor.encode_set_rpm(node, 2000))
    run(robot, clock, 0.1)
    assert robot.joint_positions_rad()[joint.index] != start


def _elbow_and_neighbour(wire, model):
    frames = wire.drain()
    return (
        [f for f in frames if f.arbitration_id == node_of(model, ELBOW)],
        [f for f in frames if f.arbitration_id == node_of(model, SHOULDER_2)],
    )


def test_fault_silence_stops_the_broadcast_until_cleared(model, rig):
    robot, clock, wire = rig
    robot.set_fault(ELBOW, 'silence')
    run(robot, clock, 0.05)
    elbow, neighbour = _elbow_and_neighbour(wire, model)
    assert elbow == [] and len(neighbour) == 10
    robot.clear_fault(ELBOW)
    run(robot, clock, 0.05)
    assert len(_elbow_and_neighbour(wire, model)[0]) == 10


def test_fault_over_current_reports_above_the_limit(model, rig):
    robot, clock, wire = rig
    limit = model.joint(ELBOW).motor.current_limit_a
    robot.set_fault(ELBOW, 'over_current')
    run(robot, clock, 0.02)
    elbow, neighbour = _elbow_and_neighbour(wire, model)
    assert all(tmotor.decode_feedback(f).current_a > limit for f in elbow)
    assert all(tmotor.decode_feedback(f).current_a == 0.0 for f in neighbour)
    robot.set_fault(ELBOW, 'over_current', 40.0)
    run(robot, clock, 0.01)
    assert tmotor.decode_feedback(_elbow_and_neighbour(wire, model)[0][-1]).current_a == 40.0


def test_fault_out_of_range_reports_beyond_the_joint_limit(model, rig):
    robot, clock, wire = rig
    joint = model.joint(ELBOW)
    robot.set_fault(ELBOW, 'out_of_range')
    run(robot, clock, 0.02)
    reported = tmotor.decode_feedback(_elbow_and_neighbour(wire, model)[0][-1])
    assert joint.motor.motor_to_joint_rad(reported.position_rad) > joint.upper_rad
    assert robot.joint_positions_rad()[joint.index] == joint.motor.initial_position_rad


def test_fault_corrupt_keeps_id_and_length_but_garbles_the_payload(model, rig):
    robot, clock, wire = rig
    healthy = robot.device(ELBOW).status_frame()
    robot.set_fault(ELBOW, 'corrupt')
    run(robot, clock, 0.05)
    elbow, _ = _elbow_and_neighbour(wire, model)
    assert len(elbow) == 10 and all(len(f.data) == 8 for f in elbow)
    assert healthy.data not in {f.data for f in elbow}
    assert len({f.data for f in elbow}) > 1


def test_fault_short_frames_fail_decoding(model, rig):
    robot, clock, wire = rig
    robot.set_fault(ELBOW, 'short')
    run(robot, clock, 0.02)
    elbow, neighbour = _elbow_and_neighbour(wire, model)
    assert elbow and all(len(f.data) == 4 for f in elbow)
    with pytest.raises(CodecError, match='too short'):
        tmotor.decode_feedback(elbow[0])
    tmotor.decode_feedback(neighbour[0])
