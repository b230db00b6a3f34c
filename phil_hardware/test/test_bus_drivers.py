"""Per-family controller drivers: golden frames for known states (hand-computed)."""

from __future__ import annotations

import math

import pytest

from phil_description.core import default_robot_model
from phil_hardware.core.bus_controller.config import CanopenFrameForm, controller_config_from_model
from phil_hardware.core.bus_controller.dynamixel import DynamixelBank
from phil_hardware.core.bus_controller.epos4 import (
    CONFIGURE_SDOS,
    Epos4Group,
    drive_fault_text,
    mode_switch_frames,
    nmt_pre_operational,
    nmt_start,
    probe_frame,
    sdo_download,
    shutdown_frames,
)
from phil_hardware.core.bus_controller.tmotor import TMotorGroup, is_status_frame
from phil_hardware.core.codecs import dynamixel as dxl
from phil_hardware.core.codecs.frame import CanFrame

DEG = math.pi / 180.0


@pytest.fixture(scope='module')
def config():
    return controller_config_from_model(default_robot_model(sim=True))


def by_joint(items, name):
    return next(item for item in items if item.joint == name)


def test_velocity_law_frame_for_a_known_state_right_elbow(config):
    # right_elbow: node 4, dir -1, initial 90 deg, gear 10, 21 pole pairs, gain 4000.
    # Motor target (80-90)*-1 = 10 deg, measured 11 deg: 4000 * -1 deg = -69.81 ERPM;
    # feed-forward -1 * 0.5 rad/s * 21 * 10 * 60 / 2pi = -1002.68 ERPM; sum -1072.49 -> -1072.
    motor = by_joint(TMotorGroup(config.joints).motors, 'right_elbow')
    frame = TMotorGroup.velocity_frame(motor, 80 * DEG, 0.5, 79 * DEG)
    assert frame == CanFrame(0x304, bytes.fromhex('fffffbd0'), True)


def test_velocity_law_frame_without_a_measurement_is_the_feed_forward_alone(config):
    # The state above without its position term: -1002.68 ERPM -> -1003.
    motor = by_joint(TMotorGroup(config.joints).motors, 'right_elbow')
    frame = TMotorGroup.velocity_frame(motor, 80 * DEG, 0.5, None)
    assert frame == CanFrame(0x304, bytes.fromhex('fffffc15'), True)
    resting = TMotorGroup.velocity_frame(motor, 80 * DEG, 0.0, None)
    assert resting == CanFrame(0x304, bytes(4), True)


def test_velocity_law_frame_clamps_at_100000_erpm(config):
    motor = by_joint(TMotorGroup(config.joints).motors, 'waist')  # node 0, dir +1, gear 9
    frame = TMotorGroup.velocity_frame(motor, 80 * DEG, 60.0, -80 * DEG)  # 108290 + 2793
    assert frame == CanFrame(0x300, bytes.fromhex('000186a0'), True)
    assert TMotorGroup.stop_frame(motor) == CanFrame(0x300, bytes(4), True)


def test_origin_frames_are_temporary_set_origin_for_every_tmotor(config):
    frames = TMotorGroup(config.joints).origin_frames()
    assert [f.arbitration_id for _, f in frames] == [
        0x500,
        0x501,
        0x502,
        0x503,
        0x504,
        0x505,
        0x506,
    ]
    assert all(f.data == b'\x00' and f.is_extended_id for _, f in frames)


def test_status_frame_matching_accepts_sil_and_extended_forms_only(config):
    status = bytes.fromhex('0384000a0064190000'[:16])
    assert is_status_frame(CanFrame(0x004, status, False), 4)
    assert is_status_frame(CanFrame(0x2904, status, True), 4)
    assert not is_status_frame(CanFrame(0x304, status[:4], True), 4)  # our SET_RPM
    assert not is_status_frame(CanFrame(0x604, status, True), 4)  # SET_POS_SPD command
    assert not is_status_frame(CanFrame(0x004, status[:6], False), 4)  # short
    assert not is_status_frame(CanFrame(0x104, status, False), 4)


def test_tmotor_feedback_decodes_to_joint_units(config):
    motor = by_joint(TMotorGroup(config.joints).motors, 'right_elbow')
    # motor +10.0 deg, 1000 ERPM, 1.00 A, 25 degC -> joint 90 - 10 = 80 deg.
    frame = CanFrame(0x004, bytes.fromhex('0064 0064 0064 19 00'), False)
    feedback, position, velocity = TMotorGroup.decode(motor, frame)
    assert position == pytest.approx(80 * DEG)
    assert velocity == pytest.approx(-1000 * 2 * math.pi / (21 * 10 * 60))
    assert feedback.current_a == pytest.approx(1.0) and feedback.temperature_c == 25


def test_cst_switch_sequence_frames_for_the_right_wrist(config):
    drive = by_joint(Epos4Group(config.joints, config.gravity_joints).drives, 'right_wrist')
    measured = [math.nan] * 13
    measured[3], measured[4], measured[7] = -10 * DEG, 65 * DEG, 45 * DEG
    frames = drive.switch_to(1, 50 * DEG, measured)
    assert frames == [
        CanFrame(0x607, bytes.fromhex('2f6060000a000000')),  # 0x6060 = 10 (CST)
        CanFrame(0x207, bytes.fromhex('0600')),  # Shutdown
        CanFrame(0x207, bytes.fromhex('0f00')),  # Enable operation (no SYNC)
    ]
    # e = motor target 40 deg - measured 45 deg; no derivative kick right after the switch;
    # gravity 0.0845*9.81*0.121*sin(100 deg)/35*1000 = 2.822 mNm;
    # tau = 60 * -0.08727 - 2.822 = -8.058 mNm = -259.5 per mille -> -260 = 0xFEFC.
    assert drive.cyclic_frame(50 * DEG, measured) == CanFrame(0x507, bytes.fromhex('fcfe'))
    back = drive.switch_to(0, 50 * DEG, measured)
    assert back[0] == CanFrame(0x607, bytes.fromhex('2f60600008000000'))
    # CSP: motor 40 deg = 40 * 398.22 = 15929 counts (0x3E39).
    assert drive.cyclic_frame(50 * DEG, measured) == CanFrame(0x307, bytes.fromhex('393e0000'))


def test_pedal_cst_has_no_gravity_term(config):
    drive = by_joint(Epos4Group(config.joints, config.gravity_joints).drives, 'right_pedal')
    assert drive.gravity_indices == ()


def test_maxon_shutdown_is_controlword_6_then_sync():
    assert shutdown_frames(8) == [CanFrame(0x208, b'\x06\x00'), CanFrame(0x080, b'')]


# Every frame whose form CiA 301 and upstream differ in, for right_wrist (node 7), in both.
FORMS = {
    CanopenFrameForm.CIA301: {
        'sdo 1 byte (0x6060 = 8)': '2f60600008000000',
        'sdo 2 bytes (0x60B2 = 0)': '2bb2600000000000',
        'sdo 4 bytes (0x607A = -2)': '237a6000feffffff',
        'nmt start': '0107',
        'nmt pre-operational': '8007',
        'controlword shutdown': '0600',
        'controlword enable': '0f00',
        'sdo probe (read 0x1000/0)': '4000100000000000',
    },
    CanopenFrameForm.UPSTREAM: {
        'sdo 1 byte (0x6060 = 8)': '2260600008000000',
        'sdo 2 bytes (0x60B2 = 0)': '22b2600000000000',
        'sdo 4 bytes (0x607A = -2)': '227a6000feffffff',
        'nmt start': '0107000000000000',
        'nmt pre-operational': '8007000000000000',
        'controlword shutdown': '0600000000000000',
        'controlword enable': '0f00000000000000',
        'sdo probe (read 0x1000/0)': '0000000000000000',  # upstream's probe: 8 zero bytes
    },
}


@pytest.mark.parametrize('form', list(CanopenFrameForm), ids=lambda form: form.value)
def test_each_frame_form_gives_its_golden_frames(form):
    switch = mode_switch_frames(7, 8, form)
    frames = {
        'sdo 1 byte (0x6060 = 8)': switch[0],
        'sdo 2 bytes (0x60B2 = 0)': sdo_download(7, 0x60B2, 0, 0, 2, form),
        'sdo 4 bytes (0x607A = -2)': sdo_download(7, 0x607A, 0, -2, 4, form),
        'nmt start': nmt_start(7, form),
        'nmt pre-operational': nmt_pre_operational(7, form),
        'controlword shutdown': shutdown_frames(7, form)[0],
        'controlword enable': switch[2],
        'sdo probe (read 0x1000/0)': probe_frame(7, form),
    }
    ids = {'sdo': 0x607, 'nmt': 0x000, 'controlword': 0x207}
    assert {what: frame.data.hex() for what, frame in frames.items()} == FORMS[form]
    for what, frame in frames.items():
        assert frame.arbitration_id == ids[what.split()[0]], what


def test_configure_sdo_list_follows_upstream_order_and_object_sizes():
    assert [(hex(i), v, s) for i, _, v, s in CONFIGURE_SDOS] == [
        ('0x6060', 8, 1),
        ('0x60b0', 0, 4),
        ('0x60b2', 0, 2),
        ('0x6060', 9, 1),
        ('0x60b1', 0, 4),
        ('0x6060', 10, 1),
        ('0x60b2', 0, 2),
        ('0x6060', 6, 1),
        ('0x6098', 37, 1),
        ('0x30b1', 0, 4),
        ('0x30b0', 0, 4),
    ]


def test_drive_fault_text_only_for_fault_states():
    assert drive_fault_text(0x0237) == ''
    assert 'fault' in drive_fault_text(0x0208)


def test_dynamixel_goal_write_and_read_packets(config):
    bank = DynamixelBank('dxl', config.joints)
    bank.set_present(bank.servos)
    targets = [0.0] * 13
    targets[12] = 0.0  # head_pitch joint 0 -> motor +90 deg -> tick 1024
    targets[11] = 10 * DEG  # head_yaw dir -1 -> motor -10 deg -> tick 2048 + 113.78 = 2162
    expected = dxl.build_profile_goal_sync_write(
        {1: dxl.ProfileGoal(0, 0, 2162), 2: dxl.ProfileGoal(0, 0, 1024)}
    )
    assert bank.goal_packet(targets) == expected
    assert bank.read_packet() == dxl.build_present_position_sync_read([1, 2])


def test_dynamixel_read_replies_are_collected_over_several_feeds(config):
    bank = DynamixelBank('dxl', config.joints)
    bank.set_present(bank.servos)
    bank.read_packet()
    reply = dxl.build_status_packet(2, 0, (1024).to_bytes(4, 'little'))
    assert bank.feed(reply[:5]) == []  # half a packet this tick
    [(servo, status)] = bank.feed(reply[5:])  # the rest on the next
    assert servo.joint == 'head_pitch'
    assert bank.position_reply(servo, status) == pytest.approx(0.0)
    assert bank.read_pending  # id 1 still outstanding
    bank.read_packet()
    assert bank.missed_replies == 1
    assert bank.feed(dxl.build_status_packet(9, 0, bytes(4))) == []
    assert bank.bad_replies == 1
