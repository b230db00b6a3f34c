"""Kinematics inputs from the URDF model and the IK -> URDF forward-kinematics round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.kinematics import (
    ARM_JOINT_NAMES,
    IkFailure,
    IkFailureReason,
    IkSolution,
    solve_arms,
)
from phil_control.core.kinematics.model_adapter import (
    arm_geometry,
    arm_joint_indices,
    from_model_positions,
    joint_limits,
    round_trip_errors_m,
    to_model_positions,
    urdf_stick_tips,
)
from phil_description.core import default_robot_model

MODEL = default_robot_model()
GEOMETRY = arm_geometry(MODEL)
LIMITS = joint_limits(MODEL)
TOLERANCE_M = 1e-4
# The kit points that have stick strikes, with both hands.
STRIKES = [
    (instrument.name, hand)
    for instrument in MODEL.kit.instruments
    for hand in sorted(instrument.strikes)
]


def test_geometry_is_read_from_the_urdf_and_matches_upstream():
    assert (
        GEOMETRY.shoulder_offset_m,
        GEOMETRY.upper_arm_m,
        GEOMETRY.forearm_m,
        GEOMETRY.stick_m,
    ) == pytest.approx((0.26, 0.230, 0.200, 0.373), abs=1e-12)


def test_soft_limits_are_upstreams_ik_limits_and_hard_limits_the_motor_ranges():
    soft = {name: tuple(math.degrees(v) for v in b) for name, b in LIMITS.bounds_rad.items()}
    hard = {
        name: tuple(math.degrees(v) for v in b)
        for name, b in joint_limits(MODEL, soft=False).bounds_rad.items()
    }
    assert set(soft) == set(MODEL.joint_names)
    assert soft['right_elbow'] == pytest.approx((0.0, 140.0))
    assert hard['right_elbow'] == pytest.approx((0.0, 140.1))
    assert soft['left_wrist'] == pytest.approx((-90.0, 90.0))
    assert hard['left_wrist'] == pytest.approx((-90.0, 100.0))
    assert soft['left_shoulder_1'] == pytest.approx((30.0, 180.0))
    for name in MODEL.joint_names:
        assert hard[name][0] <= soft[name][0] and soft[name][1] <= hard[name][1], name


def test_vectors_map_between_the_solver_and_the_model():
    indices = arm_joint_indices(MODEL)
    assert [MODEL.joint_names[i] for i in indices] == list(ARM_JOINT_NAMES)
    arm = np.arange(9, dtype=float) / 10.0
    full = to_model_positions(MODEL, arm)
    assert full.shape == (13,)
    np.testing.assert_array_equal(from_model_positions(MODEL, full), arm)
    head = MODEL.joint('head_pitch').index
    assert full[head] == MODEL.poses['init'][head]
    batch = to_model_positions(MODEL, np.tile(arm, (4, 1)), base_rad=MODEL.poses['ready'])
    assert batch.shape == (4, 13) and batch[0, head] == MODEL.poses['ready'][head]


def test_upstream_worked_example_with_urdf_geometry():
    strikes = MODEL.kit.by_name('snare').strikes
    wrist = math.radians(10.0)
    solution = solve_arms(
        GEOMETRY,
        LIMITS,
        strikes['right'].position_m,
        strikes['left'].position_m,
        0.0,
        wrist,
        wrist,
    )
    assert isinstance(solution, IkSolution)
    expected_deg = {
        'right_shoulder_1': 131.5,
        'left_shoulder_1': 71.3,
        'right_shoulder_2': -10.9,
        'right_elbow': 72.0,
        'left_shoulder_2': -37.1,
        'left_elbow': 95.3,
    }
    for joint, degrees in expected_deg.items():
        assert math.degrees(solution.position(joint)) == pytest.approx(degrees, abs=0.1), joint
    errors = round_trip_errors_m(
        MODEL, solution, strikes['right'].position_m, strikes['left'].position_m
    )
    assert max(errors) < TOLERANCE_M


def _companion_tips(waist: float, wrist: float) -> tuple[np.ndarray, np.ndarray]:
    """URDF FK tips of the ready arm pose at a waist and wrist angle (always reachable)."""
    pose = MODEL.poses['ready'].copy()
    for name, value in (('waist', waist), ('right_wrist', wrist), ('left_wrist', wrist)):
        pose[MODEL.joint(name).index] = value
    return MODEL.stick_tip_positions(pose)


@pytest.mark.parametrize(('instrument', 'hand'), STRIKES)
def test_ik_round_trips_through_urdf_fk_over_waist_and_wrist_sweep(instrument, hand):
    """Every kit point, each hand: IK -> URDF FK lands within 0.1 mm wherever IK succeeds."""
    strike = MODEL.kit.by_name(instrument).strikes[hand]
    solved = 0
    failures = set()
    for waist_deg in range(-60, 61, 10):
        for wrist_deg in (-10.0, 0.0, math.degrees(strike.wrist_angle_rad), 20.0, 30.0):
            waist, wrist = math.radians(waist_deg), math.radians(wrist_deg)
            right, left = _companion_tips(waist, wrist)
            if hand == 'right':
                right = strike.position_m
            else:
                left = strike.position_m
            result = solve_arms(GEOMETRY, LIMITS, right, left, waist, wrist, wrist)
            if isinstance(result, IkFailure):
                assert result.joint is not None and result.joint.startswith(hand), result
                failures.add(result.reason)
                continue
            solved += 1
            errors = round_trip_errors_m(MODEL, result, right, left)
            assert max(errors) < TOLERANCE_M, (waist_deg, wrist_deg, errors)
    assert solved >= 10
    assert failures <= {IkFailureReason.UNREACHABLE, IkFailureReason.JOINT_LIMIT}


def test_batched_round_trip_equals_scalar():
    strikes = MODEL.kit.by_name('floor').strikes
    wrist = math.radians(10.0)
    solutions = []
    for waist_deg in (-20.0, -10.0, 0.0):
        result = solve_arms(
            GEOMETRY,
            LIMITS,
            strikes['right'].position_m,
            strikes['left'].position_m,
            math.radians(waist_deg),
            wrist,
            wrist,
        )
        assert isinstance(result, IkSolution), result
        solutions.append(result.positions_rad)
    right, left = urdf_stick_tips(MODEL, np.array(solutions))
    assert right.shape == left.shape == (3, 3)
    errors = round_trip_errors_m(
        MODEL, np.array(solutions), strikes['right'].position_m, strikes['left'].position_m
    )
    assert errors[0].shape == (3,) and max(errors[0].max(), errors[1].max()) < TOLERANCE_M
