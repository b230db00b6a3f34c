"""Named poses are inside the limits; the kit is where upstream measured it and reachable."""

import json
import math

import numpy as np
import pytest
from upstream_reference import UPSTREAM_CONFIG

from phil_description.core import HANDS, load_robot_model


@pytest.fixture(scope='module')
def model():
    return load_robot_model()


def test_named_poses_exist_and_are_inside_the_soft_limits(model):
    assert {'init', 'home', 'ready', 'shutdown'} <= set(model.poses)
    for name, pose in model.poses.items():
        assert pose.shape == (13,)
        assert model.limit_violations(pose, soft=True) == [], name


def test_init_pose_is_the_locking_pin_pose_of_the_can_motors(model):
    """TMotor origins are zeroed at init, so init must equal every CAN joint's initial angle."""
    for joint in model.joints:
        if joint.motor.family.value != 'dynamixel':
            assert model.poses['init'][joint.index] == pytest.approx(
                joint.motor.initial_position_rad
            ), joint.name


@pytest.mark.skipif(not UPSTREAM_CONFIG.is_dir(), reason='upstream reference files not present')
def test_poses_match_upstream(model):
    upstream = json.loads((UPSTREAM_CONFIG / 'robot_poses.json').read_text())['poses']
    for name, degrees in upstream.items():
        np.testing.assert_allclose(np.degrees(model.poses[name]), degrees, atol=1e-9)


def test_kit_has_the_ten_hit_instruments_with_upstream_ids(model):
    expected = [
        'bass',
        'snare',
        'floor',
        'mid',
        'top',
        'closed hihat',
        'ride',
        'right crash',
        'left crash',
        'open hihat',
    ]
    assert [model.kit.by_id(i).name for i in range(10)] == expected
    assert model.kit.by_name('bass').pedal_joint == 'right_pedal'
    assert model.kit.by_name('bass').strikes == {}
    for name in expected[1:]:
        assert set(model.kit.by_name(name).strikes) == set(HANDS)
    with pytest.raises(KeyError, match="unknown instrument 'cowbell'.*snare"):
        model.kit.by_name('cowbell')


@pytest.mark.skipif(not UPSTREAM_CONFIG.is_dir(), reason='upstream reference files not present')
def test_kit_strike_points_are_upstreams_drum_coordinates(model):
    instruments = json.loads((UPSTREAM_CONFIG / 'drum_coordinate.json').read_text())
    for entry in instruments['instruments']:
        instrument = model.kit.by_name(entry['name'])
        for hand in HANDS:
            strike = instrument.strikes[hand]
            np.testing.assert_allclose(strike.position_m, entry[hand]['position'], atol=1e-9)
            assert math.degrees(strike.wrist_angle_rad) == pytest.approx(
                entry[hand]['wrist_angle_deg']
            )


def test_open_hihat_is_three_centimetres_above_closed(model):
    for hand in HANDS:
        closed = model.kit.by_name('closed hihat').strikes[hand].position_m
        opened = model.kit.by_name('open hihat').strikes[hand].position_m
        np.testing.assert_allclose(opened - closed, [0, 0, 0.03], atol=1e-9)


def test_every_strike_point_is_within_reach_for_some_waist_angle(model):
    """Geometric reach: the tip distance from the shoulder must lie between |L1 - L2| and
    L1 + L2, with L2 the forearm+stick at the strike's wrist angle (the full IK checks again)."""
    lengths = model.arm_lengths
    waist = model.joint('waist')
    waist_angles = np.linspace(waist.soft_lower_rad, waist.soft_upper_rad, 181)
    shoulders = model.shoulder_positions(waist_angles)
    for instrument in model.kit.instruments:
        for hand, strike in instrument.strikes.items():
            wrist = strike.wrist_angle_rad
            virtual = math.hypot(
                lengths.forearm_m + lengths.stick_m * math.cos(wrist),
                lengths.stick_m * math.sin(wrist),
            )
            distance = np.linalg.norm(strike.position_m - shoulders[hand], axis=-1)
            reachable = (distance <= lengths.upper_arm_m + virtual) & (
                distance >= abs(lengths.upper_arm_m - virtual)
            )
            assert reachable.any(), f'{instrument.name} ({hand} hand) is out of reach'
