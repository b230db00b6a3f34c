"""The whole simulated robot: joint-space truth, history, impacts over the wire, bus set-up."""

from __future__ import annotations

import logging
import math
import re
import select
import threading
import time
import uuid
from dataclasses import asdict

import can
import numpy as np
import pytest

from phil_control.core.kinematics import ARM_JOINT_NAMES, ArmGeometry, JointLimits, solve_arms
from phil_description.core import CanBusParams, default_robot_model
from phil_hardware.core.clock import MonotonicClock
from phil_hardware.core.codecs import CanFrame, dynamixel, epos4, tmotor
from phil_hardware.core.codecs.epos4 import NmtCommand, ObjectIndex
from phil_hardware.core.transport import CanTransport, open_can_bus
from phil_hardware.core.transport.can_bus import restrict_to_own_group
from phil_hardware.sim import Limb, ManualClock, PtyPort, SimConfig, SimulatedRobot
from phil_hardware.sim.loop_stalls import LoopStalls
from phil_hardware.sim.multicast import check_channel

STEP_S = 0.001


def unique_group(offset: int = 0) -> str:
    """A fresh interface-local multicast group (``offset`` apart for a sibling bus)."""
    return f'ff11::7068:{0x7000 + offset + (uuid.uuid4().int % 0x800) * 2:x}'


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


class Rig:
    """A simulated robot on virtual buses plus the controller's ends of them."""

    def __init__(self, model, initial=None, config=None, buses=('can1', 'can3')) -> None:
        channels = {name: f'robot-{uuid.uuid4()}' for name in buses}
        self.sim_buses = {n: can.Bus(interface='virtual', channel=c) for n, c in channels.items()}
        self.wires = {n: can.Bus(interface='virtual', channel=c) for n, c in channels.items()}
        self.clock = ManualClock()
        self.robot = SimulatedRobot(
            model,
            self.sim_buses,
            clock=self.clock,
            config=config or SimConfig(),
            initial_positions_rad=initial,
        )

    def send(self, bus, *frames):
        for frame in frames:
            self.wires[bus].send(
                can.Message(
                    arbitration_id=frame.arbitration_id,
                    data=frame.data,
                    is_extended_id=frame.is_extended_id,
                )
            )

    def received(self, bus):
        frames = []
        while (message := self.wires[bus].recv(0)) is not None:
            frames.append(
                CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id)
            )
        return frames

    def run(self, seconds, each_step=()):
        for _ in range(round(seconds / STEP_S)):
            self.send('can3', *each_step)
            self.clock.advance(STEP_S)
            self.robot.step()

    def close(self):
        for bus in (*self.sim_buses.values(), *self.wires.values()):
            bus.shutdown()


@pytest.fixture
def rig(model):
    created = []

    def make(**kwargs):
        created.append(Rig(model, **kwargs))
        return created[-1]

    yield make
    for item in created:
        item.close()


def test_reported_positions_convert_to_the_joint_truth(model, rig):
    setup = rig()
    elbow, wrist = model.joint('right_elbow'), model.joint('right_wrist')
    setup.send('can1', tmotor.encode_set_rpm(elbow.motor.device_id, 4000))
    setup.send(
        'can3',
        epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, 7),
        epos4.encode_sdo_download(7, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1),
        epos4.encode_controlword(7, 0x06),
        epos4.encode_controlword(7, 0x0F),
        epos4.encode_target_position(7, -0.4),
    )
    setup.run(0.2, each_step=[epos4.encode_sync()])
    setup.send('can1', tmotor.encode_set_rpm(elbow.motor.device_id, 0))
    setup.run(0.05, each_step=[epos4.encode_sync()])

    truth = setup.robot.joint_positions_rad()
    status = [
        tmotor.decode_feedback(f)
        for f in setup.received('can1')
        if f.arbitration_id == elbow.motor.device_id
    ][-1]
    tpdo = [epos4.decode_feedback(f) for f in setup.received('can3') if f.arbitration_id == 0x187][
        -1
    ]
    assert abs(truth[elbow.index] - elbow.motor.initial_position_rad) > 0.2  # it did move
    assert elbow.motor.motor_to_joint_rad(status.position_rad) == pytest.approx(
        truth[elbow.index], abs=math.radians(0.1)
    )
    assert wrist.motor.motor_to_joint_rad(tpdo.position_rad) == pytest.approx(
        truth[wrist.index], abs=1e-4
    )
    untouched = [j.index for j in model.joints if j.name not in ('right_elbow', 'right_wrist')]
    np.testing.assert_array_equal(truth[untouched], model.poses['init'][untouched])


def test_one_loop_iteration_takes_a_bounded_share_of_a_flood(model, rig):
    # A 1 kHz controller sends ~7,400 frames a second, and every frame the simulator sends comes
    # back to it (multicast loopback). Short of CPU, its sockets never run dry: an iteration
    # that drained thousands of frames per bus before the periodic sends left every device
    # silent for seconds (FEEDBACK_TIMEOUT on all joints). The backlog waits for later ones.
    setup = rig()
    setup.robot.step()  # powered up
    flood = 1000
    setup.send('can3', *[epos4.encode_sync()] * flood)
    setup.clock.advance(0.005)  # every motor's status is due in the flooded iteration
    setup.robot.step()
    first = setup.robot.frames_received
    assert 0 < first <= 300
    assert any(
        f.arbitration_id == model.joint('right_elbow').motor.device_id
        for f in setup.received('can1')
    )  # the periodic status went out meanwhile
    for _ in range(flood):
        if setup.robot.frames_received == flood:
            break
        setup.clock.advance(STEP_S)
        setup.robot.step()
    assert setup.robot.frames_received == flood  # nothing lost, only spread out


def test_a_backlog_of_syncs_is_answered_once_with_the_newest_target(model, rig):
    # A simulator that fell behind must not keep acting on old targets: of the SYNCs taken in
    # one iteration only the newest is answered, after every target that came before it.
    setup = rig()
    setup.send(
        'can3',
        epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, 7),
        epos4.encode_sdo_download(7, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1),
        epos4.encode_controlword(7, 0x06),
        epos4.encode_controlword(7, 0x0F),
    )
    setup.run(0.01)
    setup.received('can3')
    syncs_before = setup.robot.device('right_wrist').sync_count
    for step in range(5):  # five 1 ms cycles queued at once
        setup.send(
            'can3', epos4.encode_target_position(7, -0.01 * (step + 1)), epos4.encode_sync()
        )
    setup.clock.advance(STEP_S)
    setup.robot.step()
    replies = [f for f in setup.received('can3') if f.arbitration_id == 0x187]
    assert len(replies) == 1 and setup.robot.syncs_skipped == 4
    # Every SYNC still latched its target: the motion passes through all of them.
    assert setup.robot.device('right_wrist').sync_count == syncs_before + 5
    setup.run(0.05, each_step=[epos4.encode_sync()])
    tpdo = [epos4.decode_feedback(f) for f in setup.received('can3') if f.arbitration_id == 0x187][
        -1
    ]
    assert tpdo.position_rad == pytest.approx(-0.05, abs=1e-3)  # the newest target


def test_history_is_time_stamped_and_a_ring(model, rig):
    setup = rig(config=SimConfig(history_capacity=50, history_period_s=0.002, impacts=None))
    setup.run(0.2)
    t, q = setup.robot.history()
    assert t.shape == (50,) and q.shape == (50, len(model.joints))
    assert np.all(np.diff(t) >= 0.002 - 1e-9)
    assert t[-1] == pytest.approx(0.2)
    np.testing.assert_allclose(q, np.tile(model.poses['init'], (50, 1)))


def _pose_above_the_snare(model):
    """Right tip on the snare strike point, then the wrist raised 20 deg (tip ~13 cm up)."""
    geometry = ArmGeometry(**asdict(model.arm_lengths))
    limits = JointLimits({j.name: (j.soft_lower_rad, j.soft_upper_rad) for j in model.joints})
    pose = model.poses['init'].copy()
    strike = model.kit.by_name('snare').strikes['right']
    left_tip = model.stick_tip_positions(pose)[1]
    solution = solve_arms(
        geometry,
        limits,
        strike.position_m,
        left_tip,
        0.0,
        strike.wrist_angle_rad,
        pose[model.joint('left_wrist').index],
    )
    for column, name in enumerate(ARM_JOINT_NAMES):
        pose[model.joint(name).index] = solution.positions_rad[column]
    pose[model.joint('right_wrist').index] += math.radians(20.0)
    return pose, strike


def test_a_wrist_stroke_over_the_wire_is_detected_as_a_snare_hit(model, rig):
    start, strike = _pose_above_the_snare(model)
    setup = rig(initial=start)
    heard = []
    setup.robot.add_impact_listener(heard.append)
    wrist = model.joint('right_wrist')
    # CSP to 10 deg below the strike angle: the tip goes down through the pad.
    travel = strike.wrist_angle_rad - math.radians(10) - start[wrist.index]
    setup.send(
        'can3',
        epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, 7),
        epos4.encode_sdo_download(7, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1),
        epos4.encode_controlword(7, 0x06),
        epos4.encode_controlword(7, 0x0F),
    )
    setup.run(0.05, each_step=[epos4.encode_sync()])
    assert setup.robot.impacts() == []
    setup.send('can3', epos4.encode_target_position(7, travel * wrist.motor.direction_sign))
    setup.run(0.1, each_step=[epos4.encode_sync()])
    setup.robot.flush_impacts()

    impacts = setup.robot.impacts()
    assert [(i.instrument, i.limb) for i in impacts] == [('snare', Limb.RIGHT_HAND)]
    assert heard == impacts
    assert 0.05 < impacts[0].time_s < 0.08
    np.testing.assert_allclose(impacts[0].position_m, strike.position_m, atol=0.01)


def test_configuration_errors_name_the_problem(model):
    bus = can.Bus(interface='virtual', channel=f'robot-{uuid.uuid4()}')
    try:
        with pytest.raises(ValueError, match="unknown CAN bus.*'can9'"):
            SimulatedRobot(model, {'can9': bus})
        with pytest.raises(ValueError, match='13 values'):
            SimulatedRobot(model, {'can0': bus}, initial_positions_rad=np.zeros(3))
        with pytest.raises(KeyError, match='simulated joints: waist'):
            SimulatedRobot(model, {'can0': bus}).device('head_yaw')
    finally:
        bus.shutdown()


@pytest.mark.parametrize('channel', ['ff02::7068:1', 'ff15::1', '239.74.163.2', 'can0'])
def test_multicast_channels_that_could_leave_the_machine_are_refused(channel):
    with pytest.raises(ValueError, match='can2'):
        check_channel('can2', 'udp_multicast', channel)


def test_udp_multicast_buses_see_only_their_own_group():
    groups = [unique_group(index) for index in range(2)]
    buses = [
        open_can_bus(CanBusParams(f'can{i}', 'udp_multicast', group, 10**6))
        for i, group in enumerate(groups)
    ]
    listener = open_can_bus(CanBusParams('can0', 'udp_multicast', groups[0], 10**6))
    try:
        buses[1].send(can.Message(arbitration_id=0x123, data=b'\x01', is_extended_id=False))
        buses[0].send(can.Message(arbitration_id=0x456, data=b'\x02', is_extended_id=False))
        received = listener.recv(10.0)
        assert received is not None and received.arbitration_id == 0x456
        assert listener.recv(0.05) is None  # the other group's frame never arrives
    finally:
        for bus in (*buses, listener):
            bus.shutdown()


def test_a_command_moves_the_joint_from_its_send_time_however_late_the_loop_runs(model):
    joint = next(j for j in model.joints if j.motor.family == 'tmotor' and j.motor.bus == 'can0')
    group = unique_group()
    device_side = open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6))
    robot = SimulatedRobot(model, {'can0': device_side}, clock=MonotonicClock())
    wire = CanTransport(
        'controller', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6))
    )
    try:
        robot.step()
        axis = robot.device(joint.name).axis
        before = axis.position_rad
        assert wire.send(tmotor.encode_set_rpm(joint.motor.device_id, 2000.0))
        time.sleep(0.03)  # the device loop is late by 30 ms
        robot.step()
        moved_s = (axis.position_rad - before) / axis.velocity_rad_s
        assert axis.velocity_rad_s > 0.5 and moved_s > 0.015  # not from the late step only
    finally:
        device_side.shutdown()
        wire.close()


def test_dynamixel_truth_uses_the_tick_convention(model, tmp_path):
    pose = model.poses['ready']
    with PtyPort(tmp_path / 'dxl') as pty:
        robot = SimulatedRobot(model, {}, pty, clock=ManualClock(), initial_positions_rad=pose)
        servo = robot.device('head_pitch')
        tick = int.from_bytes(servo.read(132, 4)[1], 'little', signed=True)
        motor = model.joint('head_pitch').motor
        assert motor.motor_to_joint_rad(dynamixel.tick_to_motor_rad(tick)) == pytest.approx(
            pose[model.joint('head_pitch').index], abs=2 * math.pi / 4096
        )


def test_replies_leave_as_one_datagram_only_to_a_client_that_sends_them_so(model):
    # A python-can client sends frame by frame and must read the replies so; the bus loop
    # sends a tick's frames as one datagram and reads the step's replies as one.
    tmotors = [j for j in model.joints if j.motor.family == 'tmotor' and j.motor.bus == 'can0']
    assert len(tmotors) >= 2
    group = unique_group()
    device_side = open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6))
    clock = ManualClock()
    robot = SimulatedRobot(model, {'can0': device_side}, clock=clock)
    robot.step()  # powered up
    wire = CanTransport(
        'controller', open_can_bus(CanBusParams('can0', 'udp_multicast', group, 10**6))
    )

    def statuses_after_a_step() -> list[CanFrame]:
        clock.advance(0.1)  # every status broadcast is due
        robot.step()
        frames: list[CanFrame] = []
        deadline = time.monotonic() + 2.0
        while len(frames) < len(tmotors) and time.monotonic() < deadline:
            wire.drain(frames)
        return frames

    try:
        assert len(statuses_after_a_step()) == len(tmotors)
        assert wire.held_received == 0  # frame by frame
        wire.hold()
        for joint in tmotors:
            assert wire.send(tmotor.encode_set_rpm(joint.motor.device_id, 0.0))
        assert wire.release()
        time.sleep(0.01)
        robot.step()  # takes the held datagram
        frames_before = wire.frames_received
        assert len(statuses_after_a_step()) == len(tmotors)
        assert wire.held_received == 1 and wire.frames_received - frames_before == len(tmotors)
        assert robot.send_errors == 0
    finally:
        device_side.shutdown()
        wire.close()


def test_another_groups_frame_queued_before_the_restriction_is_discarded():
    # Between python-can's bind and the restriction to its own group, a socket gets every
    # group joined on the port (another bus of the same process, a parallel test).
    groups = [unique_group(index) for index in range(2)]
    other = open_can_bus(CanBusParams('can1', 'udp_multicast', groups[1], 10**6))
    unrestricted = can.Bus(interface='udp_multicast', channel=groups[0])
    try:
        other.send(can.Message(arbitration_id=0x123, data=b'\x01', is_extended_id=False))
        readable, _, _ = select.select([unrestricted.fileno()], [], [], 10.0)
        assert readable, "the other group's frame never reached the unrestricted socket"
        restrict_to_own_group(
            unrestricted, CanBusParams('can0', 'udp_multicast', groups[0], 10**6)
        )
        assert unrestricted.recv(0.05) is None
    finally:
        other.shutdown()
        unrestricted.shutdown()


@pytest.mark.timeout(30)
def test_a_device_loop_that_did_not_run_says_so(model, caplog):
    # Every simulated device is silent while the loop does not run: a feedback timeout it
    # causes is the machine's, not a drive's, and the simulator says so.
    bus = can.Bus(interface='virtual', channel=f'stall-{uuid.uuid4().hex}')
    clock = ManualClock()
    robot = SimulatedRobot(model, {'can0': bus}, clock=clock)
    with caplog.at_level(logging.WARNING, logger='phil_hardware.sim.robot'):
        robot.start()
        try:
            for gap_s in (0.05, 0.08, 0.35, 0.02):
                clock.advance(gap_s)
                while robot.time_s < clock.now():  # the pytest timeout bounds it
                    time.sleep(0.001)
        finally:
            robot.stop()
            bus.shutdown()
    assert robot.stalls.count == 1 and robot.stalls.longest_s == pytest.approx(0.35)
    assert re.search(
        r'device loop stalled for 350 ms \(the machine did not run it; its own work took \d+ ms, '
        r"the simulator's other threads \d+ ms\)",
        caplog.text,
    ), caplog.text
    # Where the time went: this thread's wait for a CPU and the hypervisor's steal, over the
    # window since they were last read (the loop reads them once a second of its clock: at 0).
    assert re.search(
        r'in the last 480 ms this thread waited \d+ ms for a CPU and the hypervisor took '
        r'\d+ ms of all CPUs',
        caplog.text,
    ), caplog.text


def test_a_stall_of_the_loops_own_work_says_the_simulator_fell_behind(caplog):
    stalls = LoopStalls()
    with caplog.at_level(logging.WARNING, logger='phil_hardware.sim.robot'):
        stalls.iteration(0.0, 0.0)
        _burn_cpu(0.15)  # a step that computes for 150 ms
        stalls.iteration(0.2, 0.2)
    found = re.search(
        r'stalled for 200 ms \(its own work took (\d+) ms of it: the simulator fell behind\)',
        caplog.text,
    )
    assert found, caplog.text
    assert int(found.group(1)) >= 150


def _burn_cpu(seconds: float) -> None:
    burnt_from_s = time.thread_time()
    while time.thread_time() - burnt_from_s < seconds:
        pass


def test_a_stall_while_another_thread_computed_names_the_simulators_other_threads(caplog):
    stalls = LoopStalls()
    with caplog.at_level(logging.WARNING, logger='phil_hardware.sim.robot'):
        stalls.iteration(0.0, 0.0)
        other = threading.Thread(target=_burn_cpu, args=(0.15,))
        other.start()
        other.join()
        stalls.iteration(0.2, 0.2)
    found = re.search(
        r"stalled for 200 ms \(the simulator's other threads took (\d+) ms of it, holding "
        r"Python's lock: the simulator fell behind\)",
        caplog.text,
    )
    assert found, caplog.text
    assert int(found.group(1)) >= 150


@pytest.mark.timeout(30)
def test_the_simulated_time_starts_with_the_loop_not_with_the_set_up(model):
    bus = can.Bus(interface='virtual', channel=f'setup-{uuid.uuid4().hex}')
    clock = ManualClock()
    robot = SimulatedRobot(model, {'can0': bus}, clock=clock)
    clock.advance(5.0)  # the set-up took 5 s
    robot.start()
    try:
        while robot.time_s < clock.now():  # the pytest timeout bounds it
            time.sleep(0.001)
    finally:
        robot.stop()
        bus.shutdown()
    times_s, _ = robot.history()
    # Two samples, at construction and at the start: no physics was replayed between them.
    assert times_s.tolist() == [0.0, 5.0]
