"""The wire check: the independent decoder reads hand-computed frames of each protocol as the
documents define them; a captured controller session (configure, enable, move, in both EPOS4
frame forms) reads alike in it, in upstream's simulator's rules and in our codecs; and what
would be wrong on the wire is reported, naming the record."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from test_bus_controller_sim import move_chunk
from test_bus_rig import make_rig

from phil_description.core import load_robot_model
from phil_hardware.core.wire_check import (
    CapturedCan,
    CapturedSerial,
    CaptureError,
    CaptureWriter,
    WireChecker,
    WireCommand,
    WireError,
)
from phil_hardware.core.wire_check.capture import parse_line
from phil_hardware.core.wire_check.spec_decoder import (
    crc16,
    decode_can,
    decode_dynamixel,
    split_serial,
)

DEG = math.pi / 180.0
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope='module')
def model():
    return load_robot_model(xacro_args={'sim': 'true'})


# --- the independent decoder on frames computed by hand from the documents --------------------


@pytest.mark.parametrize(
    ('can_id', 'extended', 'data', 'command'),
    [
        # AK servo mode: SET_RPM (packet 3) to node 3, 1000 ERPM big-endian.
        (0x0303, True, '000003e8', WireCommand('tmotor', 3, 'set_rpm', (1000,))),
        # SET_POS (packet 4) to node 0: -12.5 deg = -125000 = 0xFFFE17B8.
        (0x0400, True, 'fffe17b8', WireCommand('tmotor', 0, 'set_position', (-125000,))),
        # SET_ORIGIN (packet 5), temporary.
        (0x0506, True, '00', WireCommand('tmotor', 6, 'set_origin', (0,))),
        # CiA 301: NMT start node 7 (2 or 8 bytes), SYNC.
        (0x000, False, '0107', WireCommand('can', 7, 'nmt', (1,))),
        (0x000, False, '8007000000000000', WireCommand('can', 7, 'nmt', (0x80,))),
        (0x080, False, '', WireCommand('can', 0, 'sync')),
        # RPDOs of node 8: controlword 0x000F, target position -2 counts, torque -260 per mille.
        (0x208, False, '0f00', WireCommand('epos4', 8, 'controlword', (0x0F,))),
        (0x308, False, 'feffffff', WireCommand('epos4', 8, 'target_position', (-2,))),
        (0x508, False, 'fcfe', WireCommand('epos4', 8, 'target_torque', (-260,))),
        # SDO download 0x6060/0 = 8, 1 byte stated (0x2F) and size not stated (0x22).
        (
            0x607,
            False,
            '2f60600008000000',
            WireCommand('epos4', 7, 'sdo_download', (0x6060, 0, 8, 1)),
        ),
        (
            0x607,
            False,
            '2260600008000000',
            WireCommand('epos4', 7, 'sdo_download', (0x6060, 0, 8, 0)),
        ),
        (0x60A, False, '4041600000000000', WireCommand('epos4', 10, 'sdo_upload', (0x6041, 0))),
        # Upstream's discovery probe: 8 zero bytes, a download segment outside any transfer.
        (0x60A, False, '0000000000000000', WireCommand('epos4', 10, 'sdo_segment', (0, 0))),
    ],
)
def test_the_independent_decoder_reads_the_documented_frames(can_id, extended, data, command):
    assert decode_can(can_id, extended, bytes.fromhex(data)) == command


@pytest.mark.parametrize(
    ('can_id', 'extended', 'data', 'said'),
    [
        (0x0903, True, '000003e8', 'TMotor packet 9'),
        (0x000, False, '07', r'not \[command, node\]'),
        (0x307, False, '39e3', 'needs 4'),
        (0x607, False, '2160600004000000', 'not an expedited'),  # a segmented download
        (0x707, False, '05', 'no request'),
    ],
)
def test_what_the_documents_do_not_define_is_refused_by_name(can_id, extended, data, said):
    with pytest.raises(WireError, match=said):
        decode_can(can_id, extended, bytes.fromhex(data))


def test_the_dynamixel_framing_crc_and_stuffing_follow_protocol_2():
    # The ROBOTIS manual's PING example for id 1: FF FF FD 00 01 03 00 01 19 4E.
    assert crc16(bytes.fromhex('fffffd0001030001')) == 0x4E19
    ping = bytes.fromhex('fffffd00010300 01 194e'.replace(' ', ''))
    packets, rest = split_serial(ping + ping[:5])
    assert packets == [(1, 0x01, b'')] and rest == ping[:5]
    # A sync write at 108 of (0, 0, goal 1024) to ids 1 and 2.
    records = b''.join(
        bytes([servo]) + (0).to_bytes(8, 'little') + goal.to_bytes(4, 'little')
        for servo, goal in ((1, 1024), (2, 3072))
    )
    commands = decode_dynamixel(0xFE, 0x83, (108).to_bytes(2, 'little') + b'\x0c\x00' + records)
    assert commands == [
        WireCommand('dynamixel', 1, 'profile_goal', (0, 0, 1024)),
        WireCommand('dynamixel', 2, 'profile_goal', (0, 0, 3072)),
    ]
    with pytest.raises(WireError, match='wrong CRC'):
        split_serial(ping[:-1] + b'\x00')


def test_capture_lines_are_candump_log_lines():
    assert parse_line('(1700000000.250000) can1 00000303#000003E8') == CapturedCan(
        1700000000.25, 'can1', 0x303, True, bytes.fromhex('000003e8')
    )
    assert parse_line('(1.5) dxl FFFFFD00') == CapturedSerial(1.5, 'dxl', b'\xff\xff\xfd\x00')
    with pytest.raises(CaptureError, match='capture.log:3: only classic CAN data frames'):
        parse_line('(1.0) can0 123##0AA', 'capture.log:3')


# --- a captured session ---------------------------------------------------------------------


def _captured_session(model, form: str) -> list:
    model = load_robot_model(xacro_args={'sim': 'true', 'epos4_frame_form': form})
    rig = make_rig(model)
    stream = io.StringIO()
    rig.robot.wire_capture = CaptureWriter(stream)
    try:
        ctl = rig.controller
        ctl.configure()
        ctl.activate()
        goal = np.array(ctl.queue.target_rad)
        for name, step_deg in (('right_wrist', -20), ('left_pedal', 10), ('waist', 15)):
            goal[model.joint_names.index(name)] += step_deg * DEG
        goal[model.joint_names.index('head_pitch')] += 10 * DEG
        assert ctl.push_chunk(move_chunk(ctl, goal, 0.5)) is None
        rig.run(1.0)
        ctl.deactivate()
        rig.run(0.05)
    finally:
        rig.close()
    return [parse_line(line) for line in stream.getvalue().splitlines()]


@pytest.mark.parametrize('form', ['cia301', 'upstream'])
def test_a_captured_session_reads_alike_three_ways(model, form):
    records = _captured_session(model, form)
    report = WireChecker(load_robot_model(xacro_args={'epos4_frame_form': form})).check(records)
    assert report.problems == [] and report.ok, report.problems
    # Checked against the other form, every EPOS4 request that differs in form is named.
    other = 'upstream' if form == 'cia301' else 'cia301'
    mixed = WireChecker(load_robot_model(xacro_args={'epos4_frame_form': other})).check(records)
    assert mixed.problem_count > 40
    assert f'not in the {other} frame form of node' in mixed.problems[0]
    kinds = set(report.by_kind)
    assert {
        'can nmt',
        'can sync',
        'epos4 sdo_download',
        'epos4 controlword',
        'epos4 target_position',
        'tmotor set_rpm',
        'tmotor set_origin',
        'dynamixel ping',
        'dynamixel write',
        'dynamixel profile_goal',
        'dynamixel sync_read',
    } <= kinds, kinds
    assert report.by_kind['epos4 target_position'] > 4 * 500  # 4 drives at 1 kHz
    # Upstream's simulator ignores controlwords and the TMotor origin, as documented.
    assert set(report.ignored_upstream) == {'epos4 controlword', 'tmotor set_origin'}


def test_frames_the_motors_sent_are_counted_not_read(model):
    """A candump capture on the robot holds the motors' frames too."""
    replies = [
        CapturedCan(0.0, 'can0', 0x2900, True, bytes(8)),  # TMotor status, extended id
        CapturedCan(0.0, 'can0', 0x002, False, bytes(8)),  # TMotor status, 11-bit id = node
        CapturedCan(0.0, 'can3', 0x187, False, bytes(8)),  # TPDO1
        CapturedCan(0.0, 'can3', 0x587, False, bytes(8)),  # SDO response
        CapturedCan(0.0, 'can3', 0x707, False, b'\x05'),  # heartbeat
        CapturedCan(0.0, 'can3', 0x087, False, bytes(8)),  # emergency
        CapturedCan(0.0, 'can3', 0x080, False, b''),  # SYNC: the controller's
    ]
    report = WireChecker(model).check(replies)
    assert report.device_frames == 6 and report.commands == 1 and report.ok, report.problems


def test_what_is_wrong_on_the_wire_is_reported_naming_the_record(model):
    wrong = [
        # A TMotor node that is not on can0 (upstream's simulator would not move it either).
        CapturedCan(0.0, 'can0', 0x0309, True, bytes.fromhex('000003e8')),
        # right_wrist's target position in the wrong byte order: far outside its limits.
        CapturedCan(0.001, 'can3', 0x307, False, (15929).to_bytes(4, 'big')),
        # A frame nobody defines (0x600 + node 127 is an SDO request; 0x7E5 is LSS).
        CapturedCan(0.002, 'can3', 0x7E5, False, b'\x05'),
    ]
    report = WireChecker(model).check(wrong)
    assert not report.ok and report.problem_count == 4, report.problems
    text = '\n'.join(report.problems)
    assert 'record 1 can0 00000309#000003E8: upstream simulator reads None' in text
    assert 'record 1 can0 00000309#000003E8: no tmotor 9 on can0 in the URDF' in text
    assert (
        'record 2 can3 307#00003E39: right_wrist target' in text and 'outside its limits' in text
    )
    assert 'record 3 can3 7E5#05: independent decoder: standard id 0x7E5' in text
