"""The simulated EPOS4 drives (CiA 301 + 402), seen from the controller's end of a virtual bus.

Most tests step the simulator on a manual clock; the SDO test runs the device loop in its thread
and talks to it with the independent ``canopen`` library's SDO client.
"""

from __future__ import annotations

import math
import uuid

import can
import canopen
import pytest

from phil_description.core import default_robot_model
from phil_hardware.core.codecs import CanFrame, CodecError, epos4
from phil_hardware.core.codecs.epos4 import Cia402State, NmtCommand, ObjectIndex, SdoService
from phil_hardware.sim import ManualClock, SimConfig, SimulatedRobot

STEP_S = 0.001
WRIST = 'right_wrist'  # EPOS4 node 7 on can3
NODE = 7
TPDO = epos4.TPDO1_BASE + NODE


class Wire:
    """The controller's end of one virtual CAN channel."""

    def __init__(self, channel: str) -> None:
        self.bus = can.Bus(interface='virtual', channel=channel)

    def send(self, *frames: CanFrame) -> None:
        for frame in frames:
            self.bus.send(
                can.Message(
                    arbitration_id=frame.arbitration_id,
                    data=frame.data,
                    is_extended_id=frame.is_extended_id,
                )
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
def channel():
    return f'epos4-{uuid.uuid4()}'


@pytest.fixture
def rig(model, channel):
    sim_bus = can.Bus(interface='virtual', channel=channel)
    wire = Wire(channel)
    clock = ManualClock()
    robot = SimulatedRobot(model, {'can3': sim_bus}, clock=clock, config=SimConfig(impacts=None))
    yield robot, clock, wire
    sim_bus.shutdown()
    wire.bus.shutdown()


def exchange(robot, clock, wire, *frames, seconds=STEP_S):
    """Send frames, let the simulator run ``seconds``, return what it sent."""
    wire.send(*frames)
    for _ in range(max(1, round(seconds / STEP_S))):
        clock.advance(STEP_S)
        robot.step()
    return wire.drain()


def sdo(robot, clock, wire, request):
    replies = [
        f
        for f in exchange(robot, clock, wire, request)
        if f.arbitration_id == epos4.SDO_RESPONSE_BASE + NODE
    ]
    assert len(replies) == 1
    return epos4.decode_sdo_response(replies[0])


def tpdos(frames, node=NODE):
    return [
        epos4.decode_feedback(f) for f in frames if f.arbitration_id == epos4.TPDO1_BASE + node
    ]


def start(node=NODE):
    return epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, node, pad_to_dlc8=True)


def enable_csp(robot, clock, wire):
    exchange(
        robot,
        clock,
        wire,
        start(),
        epos4.encode_sdo_download(NODE, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1),
        epos4.encode_controlword(NODE, 0x06),
        epos4.encode_controlword(NODE, 0x0F),
    )


def test_silent_before_nmt_start_even_on_sync(rig):
    robot, clock, wire = rig
    assert exchange(robot, clock, wire, epos4.encode_sync(), epos4.encode_sync()) == []
    frames = exchange(robot, clock, wire, start(), epos4.encode_sync())
    assert [f.arbitration_id for f in frames] == [TPDO]


def test_upstream_probe_gets_an_abort_on_0x580_plus_n(rig):
    robot, clock, wire = rig
    reply = sdo(robot, clock, wire, epos4.encode_sdo_probe(NODE))
    assert reply.service is SdoService.ABORT and reply.abort_code == 0x05040001


def test_sdo_server_with_the_canopen_client(model, channel, patient_canopen_sdo):
    sim_bus = can.Bus(interface='virtual', channel=channel)
    network = canopen.Network()
    network.NOTIFIER_CYCLE = 0.05
    network.connect(interface='virtual', channel=channel)
    node = network.add_node(NODE, canopen.ObjectDictionary())
    try:
        with SimulatedRobot(model, {'can3': sim_bus}, config=SimConfig(impacts=None)):
            node.sdo.download(ObjectIndex.MODES_OF_OPERATION, 0, b'\x0a')
            assert node.sdo.upload(ObjectIndex.MODES_OF_OPERATION, 0) == b'\x0a'
            assert node.sdo.upload(0x6061, 0) == b'\x0a'
            assert node.sdo.upload(0x1000, 0) == (0x00020192).to_bytes(4, 'little')
            statusword = int.from_bytes(node.sdo.upload(ObjectIndex.STATUSWORD, 0), 'little')
            assert epos4.cia402_state(statusword) is Cia402State.SWITCH_ON_DISABLED
            for action, code in [
                (lambda: node.sdo.upload(0x2000, 0), 0x06020000),
                (lambda: node.sdo.upload(ObjectIndex.MODES_OF_OPERATION, 1), 0x06090011),
                (lambda: node.sdo.download(ObjectIndex.STATUSWORD, 0, b'\0\0'), 0x06010002),
                (
                    lambda: node.sdo.download(ObjectIndex.MODES_OF_OPERATION, 0, b'\x2a'),
                    0x06090030,
                ),
                (lambda: node.sdo.download(ObjectIndex.HOME_POSITION, 0, b'\0\0'), 0x06070010),
            ]:
                with pytest.raises(canopen.SdoAbortedError) as aborted:
                    action()
                assert aborted.value.code == code
    finally:
        network.disconnect()
        sim_bus.shutdown()


def test_upstream_size_not_indicated_download_is_accepted(rig):
    robot, clock, wire = rig
    request = epos4.encode_sdo_download(
        NODE, ObjectIndex.HOMING_METHOD, 0, 37, 4, size_indicated=False
    )
    assert request.data[0] == 0x22
    assert sdo(robot, clock, wire, request).service is SdoService.DOWNLOAD
    reply = sdo(robot, clock, wire, epos4.encode_sdo_upload_request(NODE, 0x6098, 0))
    assert reply.value(signed=True) == 37


def test_sdo_is_not_answered_while_stopped(rig):
    robot, clock, wire = rig
    exchange(robot, clock, wire, epos4.encode_nmt(NmtCommand.STOP_REMOTE_NODE, NODE))
    assert exchange(robot, clock, wire, epos4.encode_sdo_probe(NODE)) == []
    exchange(robot, clock, wire, epos4.encode_nmt(NmtCommand.ENTER_PRE_OPERATIONAL, NODE))
    assert sdo(robot, clock, wire, epos4.encode_sdo_probe(NODE)).abort_code == 0x05040001


def test_cia402_transitions_give_the_real_statuswords(rig):
    robot, clock, wire = rig
    exchange(
        robot,
        clock,
        wire,
        start(),
        epos4.encode_sdo_download(NODE, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1),
    )
    steps = [
        (None, 0x0240, Cia402State.SWITCH_ON_DISABLED),
        (0x06, 0x0231, Cia402State.READY_TO_SWITCH_ON),
        (0x07, 0x0233, Cia402State.SWITCHED_ON),
        (0x0F, 0x1237, Cia402State.OPERATION_ENABLED),  # bit 12: follows the target
        (0x06, 0x0231, Cia402State.READY_TO_SWITCH_ON),
        (0x0F, 0x1237, Cia402State.OPERATION_ENABLED),  # EPOS4: 3 + 4 in one go
        (0x02, 0x0217, Cia402State.QUICK_STOP_ACTIVE),
        (0x00, 0x0240, Cia402State.SWITCH_ON_DISABLED),
        (0x0F, 0x0240, Cia402State.SWITCH_ON_DISABLED),
    ]  # not allowed from here
    for controlword, statusword, state in steps:
        frames = [] if controlword is None else [epos4.encode_controlword(NODE, controlword)]
        (feedback,) = tpdos(exchange(robot, clock, wire, *frames, epos4.encode_sync()))
        assert (hex(feedback.statusword), epos4.cia402_state(feedback.statusword)) == (
            hex(statusword),
            state,
        )
        reply = sdo(robot, clock, wire, epos4.encode_sdo_upload_request(NODE, 0x6041, 0))
        assert reply.value() == statusword


def test_csp_target_is_applied_at_the_next_sync_and_followed(model, rig):
    robot, clock, wire = rig
    index = model.joint(WRIST).index
    enable_csp(robot, clock, wire)
    before = robot.joint_positions_rad()[index]
    exchange(robot, clock, wire, epos4.encode_target_position(NODE, 0.3), seconds=0.05)
    assert robot.joint_positions_rad()[index] == before  # no SYNC yet

    feedback = []
    for _ in range(60):
        feedback += tpdos(exchange(robot, clock, wire, epos4.encode_sync()))
    assert len(feedback) == 60  # one TPDO per SYNC
    assert feedback[-1].position_rad == pytest.approx(0.3, abs=2 * math.pi / 143360)
    assert feedback[-1].statusword == 0x1237
    motor = model.joint(WRIST).motor
    assert robot.joint_positions_rad()[index] == pytest.approx(
        motor.motor_to_joint_rad(0.3), abs=1e-4
    )


def test_shutdown_in_operation_enabled_switches_torque_off_and_holds(model, rig):
    robot, clock, wire = rig
    index = model.joint(WRIST).index
    enable_csp(robot, clock, wire)
    exchange(
        robot,
        clock,
        wire,
        epos4.encode_controlword(NODE, 0x06),
        epos4.encode_target_position(NODE, 0.5),
        epos4.encode_sync(),
        seconds=0.1,
    )
    assert robot.joint_positions_rad()[index] == model.joint(WRIST).motor.initial_position_rad


def _hold_with_cst(robot, clock, wire, model, target_rad, gravity_compensation):
    """Run upstream's wrist CST law over the wire for 2 s; return the final position error."""
    indices = [model.joint(name).index for name in ('right_shoulder_2', 'right_elbow', WRIST)]
    exchange(
        robot,
        clock,
        wire,
        start(),
        epos4.encode_sdo_download(NODE, ObjectIndex.MODES_OF_OPERATION, 0, 10, 1),
        epos4.encode_controlword(NODE, 0x06),
        epos4.encode_controlword(NODE, 0x0F),
    )
    measured = tpdos(exchange(robot, clock, wire, epos4.encode_sync()))[-1].position_rad
    previous_error, derivative = target_rad - measured, 0.0
    for _ in range(2000):
        error = target_rad - measured
        q = robot.joint_positions_rad()
        gravity = epos4.gravity_torque_mnm([q[i] for i in indices]) if gravity_compensation else 0
        torque, derivative = epos4.cst_torque_law(
            error, previous_error, derivative, 60.0, 1.0, gravity
        )
        previous_error = error
        frames = exchange(
            robot, clock, wire, epos4.encode_target_torque(NODE, torque), epos4.encode_sync()
        )
        measured = tpdos(frames)[-1].position_rad
    return target_rad - measured


# Motor angle 1.2 rad puts the stick nearly horizontal: ~0.09 N m of gravity at the wrist.
def test_cst_follows_the_upstream_law_against_wrist_gravity(model, rig):
    robot, clock, wire = rig
    error = _hold_with_cst(robot, clock, wire, model, 1.2, gravity_compensation=True)
    # Left over: Coulomb friction and the 25 % of gravity the gear efficiency eats, against
    # the P gain of ~1.6 N m/rad at the output.
    assert abs(error) < 0.03


def test_cst_without_gravity_compensation_sags(model, rig):
    robot, clock, wire = rig
    error = _hold_with_cst(robot, clock, wire, model, 1.2, gravity_compensation=False)
    assert abs(error) > 0.05


def test_homing_method_37_makes_the_current_position_the_home_position(rig):
    robot, clock, wire = rig
    exchange(
        robot,
        clock,
        wire,
        start(),
        epos4.encode_sdo_download(NODE, ObjectIndex.MODES_OF_OPERATION, 0, 6, 1),
        epos4.encode_sdo_download(NODE, ObjectIndex.HOMING_METHOD, 0, 37, 1),
        epos4.encode_sdo_download(NODE, ObjectIndex.HOME_POSITION, 0, 12345, 4),
        epos4.encode_controlword(NODE, 0x06),
        epos4.encode_controlword(NODE, 0x0F),
    )
    (feedback,) = tpdos(
        exchange(robot, clock, wire, epos4.encode_controlword(NODE, 0x1F), epos4.encode_sync())
    )
    assert feedback.statusword & 0x9400 == 0x9400  # referenced, homing attained, reached
    reply = sdo(robot, clock, wire, epos4.encode_sdo_upload_request(NODE, 0x6064, 0))
    assert reply.value(signed=True) == 12345


def test_reset_node_sends_bootup_and_forgets_its_settings(rig):
    robot, clock, wire = rig
    enable_csp(robot, clock, wire)
    frames = exchange(robot, clock, wire, epos4.encode_nmt(NmtCommand.RESET_NODE, 0))
    assert sorted((f.arbitration_id, f.data) for f in frames) == [(0x707, b'\0'), (0x708, b'\0')]
    assert exchange(robot, clock, wire, epos4.encode_sync()) == []  # pre-operational again
    reply = sdo(robot, clock, wire, epos4.encode_sdo_upload_request(NODE, 0x6060, 0))
    assert reply.value() == 0


def test_nmt_broadcast_starts_every_node(rig):
    robot, clock, wire = rig
    frames = exchange(
        robot, clock, wire, epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, 0), epos4.encode_sync()
    )
    assert sorted(f.arbitration_id for f in frames) == [0x187, 0x188]


def test_corrupt_frames_are_ignored_and_the_drive_still_answers(rig):
    robot, clock, wire = rig
    enable_csp(robot, clock, wire)
    device = robot.device(WRIST)
    garbage = [
        CanFrame(0x607, b'\x40\x60'),
        CanFrame(0x307, b'\x01\x02'),
        CanFrame(0x507, b''),
        CanFrame(0x000, b'\x01'),
        CanFrame(0x000, b'\x99\x07'),
    ]
    replies = exchange(robot, clock, wire, *garbage, seconds=0.01)
    assert replies == []
    assert device.frames_rejected == 5
    (feedback,) = tpdos(exchange(robot, clock, wire, epos4.encode_sync()))
    assert feedback.statusword == 0x1237
    assert sdo(robot, clock, wire, epos4.encode_sdo_probe(NODE)).abort_code == 0x05040001


@pytest.fixture
def operational(rig):
    robot, clock, wire = rig
    enable_csp(robot, clock, wire)
    exchange(robot, clock, wire, start(8))
    return robot, clock, wire


def _sync_frames(robot, clock, wire):
    return [
        f
        for f in exchange(robot, clock, wire, epos4.encode_sync())
        if f.arbitration_id in (0x187, 0x188)
    ]


def test_fault_silence_drops_tpdo_and_sdo(operational):
    robot, clock, wire = operational
    robot.set_fault(WRIST, 'silence')
    assert [f.arbitration_id for f in _sync_frames(robot, clock, wire)] == [0x188]
    assert exchange(robot, clock, wire, epos4.encode_sdo_probe(NODE)) == []


def test_fault_over_current_reports_torque_beyond_the_maximum(model, operational):
    robot, clock, wire = operational
    robot.set_fault(WRIST, 'over_current')
    (feedback,) = tpdos(_sync_frames(robot, clock, wire))
    assert feedback.torque_mnm > model.joint(WRIST).motor.max_torque_mnm


def test_fault_out_of_range_reports_a_position_beyond_the_limit(model, operational):
    robot, clock, wire = operational
    robot.set_fault(WRIST, 'out_of_range')
    (feedback,) = tpdos(_sync_frames(robot, clock, wire))
    joint = model.joint(WRIST)
    assert joint.motor.motor_to_joint_rad(feedback.position_rad) > joint.upper_rad
    robot.clear_fault(WRIST, 'out_of_range')
    (feedback,) = tpdos(_sync_frames(robot, clock, wire))
    assert feedback.position_rad == 0.0


@pytest.mark.parametrize(('kind', 'length'), [('short', 4), ('corrupt', 8)])
def test_fault_mangled_tpdo(operational, kind, length):
    robot, clock, wire = operational
    robot.set_fault(WRIST, kind)
    frame = next(f for f in _sync_frames(robot, clock, wire) if f.arbitration_id == TPDO)
    assert len(frame.data) == length
    if kind == 'short':
        with pytest.raises(CodecError):
            epos4.decode_feedback(frame)
    else:
        assert frame.data != robot.device(WRIST).tpdo_frames()[0].data
