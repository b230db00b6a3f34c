"""Golden tests of the GET_STATUS line and of its reader."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.protocol import format_status, parse_status
from phil_description.core import default_robot_model

MODEL = default_robot_model()
JOINTS = len(MODEL.joint_names)


def test_before_start_the_joint_list_is_empty():
    assert format_status('STANDBY') == 'STATUS|STANDBY|1.00|0|-|0\n'
    assert format_status('STANDBY', None, 1.0) == 'STATUS|STANDBY|1.00|0|-|0\n'
    assert format_status('STANDBY', [], 1.0) == 'STATUS|STANDBY|1.00|0|-|0\n'


def test_oldest_upstream_form_stops_after_the_speed():
    assert format_status('STANDBY', pause_fields=False) == 'STATUS|STANDBY|1.00\n'


def test_home_pose_angles_in_degrees_with_two_decimals():
    line = format_status('INIT', MODEL.poses['home'], 1.0)
    assert line == (
        'STATUS|INIT|10.00|90.00|90.00|0.00|90.00|0.00|90.00|70.00|70.00|0.00|0.00'
        '|0.00|0.00|1.00|0|-|0\n'
    )


def test_ready_pose_with_speed_and_resume_point():
    line = format_status('IDLE', MODEL.poses['ready'], 1.25, 'BF', 3)
    assert line == (
        'STATUS|IDLE|0.00|120.00|60.00|-10.00|65.00|-10.00|65.00|45.00|45.00|0.00'
        '|0.00|0.00|20.00|1.25|1|BF|3\n'
    )


def test_rounding_and_negative_zero_as_cpp_fixed_precision_prints_them():
    angles = np.radians([12.346, -0.001, 0.006, 179.999, -45.674] + [0.0] * 8)
    fields = format_status('PLAYING', angles, 0.5).split('|')
    assert fields[2:7] == ['12.35', '-0.00', '0.01', '180.00', '-45.67']
    assert fields[15] == '0.50'


def test_play_id_cannot_break_the_field_split():
    line = format_status('IDLE', None, 1.0, 'a|b\nc', 2)
    assert line == 'STATUS|IDLE|1.00|1|a_b_c|2\n'


def test_reader_matches_the_reference_client_field_counts():
    report = parse_status(format_status('IDLE', MODEL.poses['ready'], 1.2, 'TI', 7), JOINTS)
    assert report.state == 'IDLE' and report.speed == pytest.approx(1.2)
    assert report.resume_play_id == 'TI' and report.resume_bar == 7
    assert report.joint_angles_deg == pytest.approx(np.degrees(MODEL.poses['ready']), abs=0.01)
    empty = parse_status('STATUS|STANDBY|1.00|0|-|0\n', JOINTS)
    assert empty.joint_angles_deg == () and empty.resume_play_id is None
    old = parse_status(format_status('IDLE', MODEL.poses['home'], 1.0, pause_fields=False), JOINTS)
    assert len(old.joint_angles_deg) == JOINTS and old.speed == 1.0
    with pytest.raises(ValueError):
        parse_status('OK|START', JOINTS)


def test_angles_are_last_commanded_values_passed_in_not_rounded_twice():
    angles = [math.radians(33.333)] * JOINTS
    fields = format_status('IDLE', angles).split('|')
    assert fields[2 : 2 + JOINTS] == ['33.33'] * JOINTS
