"""URDF forward kinematics agrees with upstream's modified-DH arm model and with REP 103."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phil_description.core import BASE_FRAME, KINEMATIC_FRAME, load_robot_model, transform_points

# Upstream's arm dimensions (m), used only by the DH oracle below.
SHOULDER_SPACING, UPPER_ARM, FOREARM, STICK = 0.520, 0.230, 0.200, 0.373
TOLERANCE_M = 1e-4


def craig(alpha, a, d, theta):
    """One modified (Craig) DH row: RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""
    ca, sa, ct, st_ = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array(
        [
            [ct, -st_, 0, a],
            [st_ * ca, ct * ca, -sa, -sa * d],
            [st_ * sa, ct * sa, ca, ca * d],
            [0, 0, 0, 1],
        ]
    )


def dh_tip(q0, q_shoulder_1, q_shoulder_2, q_elbow, q_wrist, side_sign):
    """Upstream FK of one stick tip in the kinematic frame (side_sign +1 right, -1 left)."""
    rows = [
        (0, 0, 0, q0),
        (0, side_sign * SHOULDER_SPACING / 2, 0, q_shoulder_1),
        (math.pi / 2, 0, 0, q_shoulder_2 - math.pi / 2),
        (0, UPPER_ARM, 0, q_elbow),
        (0, FOREARM, 0, q_wrist),
        (0, STICK, 0, 0),
    ]
    transform = np.eye(4)
    for row in rows:
        transform = transform @ craig(*row)
    return transform[:3, 3]


@pytest.fixture(scope='module')
def model():
    return load_robot_model()


def dh_tips(model, q):
    index = model.joint
    right = dh_tip(
        q[0],
        q[index('right_shoulder_1').index],
        q[index('right_shoulder_2').index],
        q[index('right_elbow').index],
        q[index('right_wrist').index],
        +1,
    )
    left = dh_tip(
        q[0],
        q[index('left_shoulder_1').index],
        q[index('left_shoulder_2').index],
        q[index('left_elbow').index],
        q[index('left_wrist').index],
        -1,
    )
    return right, left


def test_all_zero_joints(model):
    right, left = model.stick_tip_positions(np.zeros(13))
    np.testing.assert_allclose(right, [0.26, 0.0, -0.803], atol=TOLERANCE_M)
    np.testing.assert_allclose(left, [-0.26, 0.0, -0.803], atol=TOLERANCE_M)


def test_init_pose_holds_the_sticks_vertical_above_the_shoulders(model):
    right, left = model.stick_tip_positions(model.poses['init'])
    assert right[2] == pytest.approx(0.143, abs=TOLERANCE_M)
    assert left[2] == pytest.approx(0.143, abs=TOLERANCE_M)


def test_ready_pose_puts_the_tips_above_the_snare(model):
    right, left = model.stick_tip_positions(model.poses['ready'])
    np.testing.assert_allclose(right, [0.014, 0.425, -0.276], atol=1e-3)
    np.testing.assert_allclose(left, [-0.014, 0.425, -0.276], atol=1e-3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-math.pi, math.pi), min_size=13, max_size=13))
def test_urdf_fk_equals_upstream_dh_everywhere(model, angles):
    q = np.array(angles)
    right, left = model.stick_tip_positions(q)
    dh_right, dh_left = dh_tips(model, q)
    np.testing.assert_allclose(right, dh_right, atol=TOLERANCE_M)
    np.testing.assert_allclose(left, dh_left, atol=TOLERANCE_M)


def test_batched_fk_equals_single(model):
    rng = np.random.default_rng(7)
    q = rng.uniform(-1.5, 1.5, size=(5, 4, 13))
    right, _ = model.stick_tip_positions(q)
    assert right.shape == (5, 4, 3)
    single, _ = model.stick_tip_positions(q[3, 2])
    np.testing.assert_allclose(right[3, 2], single, atol=1e-12)


def test_rep103_base_frame_and_the_single_kinematic_frame_mapping(model):
    """base_link: x forward, y left, z up; kinematic_frame: x right, y forward, at shoulders."""
    q = model.poses['ready']
    base_to_kinematic = model.link_transform(q, KINEMATIC_FRAME, frame=BASE_FRAME)
    np.testing.assert_allclose(base_to_kinematic[:3, 0], [0, -1, 0], atol=1e-12)  # right
    np.testing.assert_allclose(base_to_kinematic[:3, 1], [1, 0, 0], atol=1e-12)  # forward
    np.testing.assert_allclose(base_to_kinematic[:3, 2], [0, 0, 1], atol=1e-12)
    right_base, left_base = model.stick_tip_positions(q, frame=BASE_FRAME)
    right_kin, left_kin = model.stick_tip_positions(q)
    assert right_base[0] > 0.3 and left_base[0] > 0.3  # in front of the robot
    assert right_base[1] < left_base[1]  # right hand on -y
    np.testing.assert_allclose(transform_points(base_to_kinematic, right_kin), right_base)
    shoulders = model.shoulder_positions(np.array(0.0))
    np.testing.assert_allclose(shoulders['right'], [0.26, 0, 0], atol=1e-12)


def test_positive_head_yaw_looks_left_and_positive_pitch_looks_down(model):
    def camera_axis(**joints):
        q = model.positions({name: math.radians(deg) for name, deg in joints.items()})
        return model.link_transform(q, 'head_camera')[:3, 0]

    assert camera_axis(head_yaw=30)[1] > 0.4
    assert camera_axis(head_pitch=30)[2] < -0.4


def test_waist_turns_the_shoulders_left_for_positive_angles(model):
    shoulders = model.shoulder_positions(np.radians(30.0))
    # Positive rotation about z turns the right shoulder forward (+y in the kinematic frame).
    assert shoulders['right'][1] > 0.1
