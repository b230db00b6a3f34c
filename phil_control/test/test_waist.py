"""Waist choice (scan + cost) and the monotone waist trajectory between events."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phil_control.core.kinematics import (
    IkFailureReason,
    IkSolution,
    UpcomingWaist,
    WaistChoice,
    WaistFailure,
    WaistKeyframe,
    choose_waist,
    monotone_slopes,
    plan_waist_segment,
    solve_arms,
    waist_scan_angles,
)
from phil_control.core.kinematics.model_adapter import arm_geometry, joint_limits
from phil_control.core.profiles import hermite_segment
from phil_description.core import default_robot_model

# Link lengths and limits come from the URDF, the single source (the same numbers as upstream's
# kinematics.json): soft limits are the IK/planning limits.
MODEL = default_robot_model()
GEOMETRY = arm_geometry(MODEL)
LIMITS = joint_limits(MODEL)
# drum_coordinate.json: instrument -> (right tip m, left tip m, impact wrist deg).
KIT = {
    'snare': ((-0.061, 0.363, -0.443), (-0.139, 0.358, -0.427), 10.0),
    'floor': ((0.284, 0.358, -0.423), (0.180, 0.359, -0.457), 10.0),
    'mid': ((0.244, 0.585, -0.327), (0.188, 0.608, -0.339), 5.0),
    'top': ((-0.031, 0.614, -0.263), (-0.106, 0.600, -0.288), 5.0),
    'closed hihat': ((-0.266, 0.514, -0.174), (-0.318, 0.472, -0.183), 10.0),
    'ride': ((0.357, 0.625, -0.106), (0.295, 0.663, -0.095), 15.0),
    'right crash': ((0.496, 0.404, -0.208), (0.474, 0.444, -0.200), 10.0),
    'left crash': ((-0.162, 0.676, -0.083), (-0.205, 0.661, -0.121), 10.0),
    'open hihat': ((-0.266, 0.514, -0.144), (-0.318, 0.472, -0.153), 10.0),
}


def test_scan_is_upstreams_1801_angles():
    angles = waist_scan_angles(LIMITS)
    assert angles.size == 1801
    assert angles[0] == pytest.approx(-math.pi / 2, abs=1e-15)
    assert angles[-1] == pytest.approx(math.pi / 2, abs=1e-15)
    np.testing.assert_allclose(np.diff(angles), math.radians(0.1), rtol=1e-9)
    with pytest.raises(ValueError, match='step_rad'):
        waist_scan_angles(LIMITS, 0.0)


@pytest.mark.parametrize('instrument', sorted(KIT))
def test_choice_is_feasible_and_has_minimal_cost(instrument):
    """Independent scalar re-scan: same feasible range, and the choice is the first minimum."""
    right_tip, left_tip, wrist_deg = KIT[instrument]
    wrist = math.radians(wrist_deg)
    choice = choose_waist(GEOMETRY, LIMITS, right_tip, left_tip, wrist, wrist)
    assert isinstance(choice, WaistChoice)

    feasible = []
    for step in range(1801):
        waist = math.radians(-90.0 + 0.1 * step)
        result = solve_arms(GEOMETRY, LIMITS, right_tip, left_tip, waist, wrist, wrist)
        if isinstance(result, IkSolution):
            feasible.append(result)
    first, last = feasible[0].position('waist'), feasible[-1].position('waist')
    assert choice.feasible_min_rad == pytest.approx(first, abs=1e-12)
    assert choice.feasible_max_rad == pytest.approx(last, abs=1e-12)
    assert first <= choice.optimal_rad <= last

    def cost(solution: IkSolution) -> float:
        shoulders = solution.position('right_shoulder_1') + solution.position('left_shoulder_1')
        offset = abs(solution.position('waist') - first)
        return 2.0 * math.cos(shoulders) + math.cos(2.0 * math.pi / (last - first) * offset)

    costs = [cost(solution) for solution in feasible]
    best = feasible[int(np.argmin(costs))]
    assert choice.optimal_rad == pytest.approx(best.position('waist'), abs=1e-9)
    chosen = solve_arms(GEOMETRY, LIMITS, right_tip, left_tip, choice.optimal_rad, wrist, wrist)
    assert isinstance(chosen, IkSolution)
    assert cost(chosen) <= min(costs) + 1e-12


def test_snare_choice_turns_the_body_left():
    right_tip, left_tip, wrist_deg = KIT['snare']
    wrist = math.radians(wrist_deg)
    choice = choose_waist(GEOMETRY, LIMITS, right_tip, left_tip, wrist, wrist)
    assert isinstance(choice, WaistChoice)
    degrees = [
        round(math.degrees(value), 1)
        for value in (choice.optimal_rad, choice.feasible_min_rad, choice.feasible_max_rad)
    ]
    assert degrees == [15.4, -22.1, 52.7]


def test_nothing_feasible_is_a_typed_failure():
    failure = choose_waist(GEOMETRY, LIMITS, (2.0, 0.5, 0.0), KIT['snare'][1], 0.2, 0.2)
    assert isinstance(failure, WaistFailure)
    assert failure.sample_failure.reason is IkFailureReason.UNREACHABLE
    assert failure.sample_failure.joint == 'right_elbow'
    assert 'no waist angle' in failure.detail
    not_finite = choose_waist(GEOMETRY, LIMITS, KIT['snare'][0], (math.nan, 0.3, -0.4), 0.2, 0.2)
    assert isinstance(not_finite, WaistFailure)
    assert not_finite.sample_failure.reason is IkFailureReason.NOT_FINITE


def _choice(optimal: float, low: float = -1.0, high: float = 1.0) -> WaistChoice:
    return WaistChoice(optimal, low, high)


def test_next_angle_follows_the_mean_slope_towards_the_next_optima():
    upcoming = [
        UpcomingWaist(1.0, _choice(0.3)),
        UpcomingWaist(2.0, _choice(0.6)),
        UpcomingWaist(3.0, _choice(0.9)),
    ]
    segment = plan_waist_segment(WaistKeyframe(0.0, 0.0), upcoming)
    assert segment.start == WaistKeyframe(0.0, 0.0)
    assert segment.end.time_s == 1.0
    assert segment.end.angle_rad == pytest.approx(0.3)
    assert segment.start_velocity_rad_s == 0.0  # no previous keyframe: start at rest
    angles, velocities = segment.evaluate([0.0, 1.0])
    np.testing.assert_allclose(angles, [0.0, 0.3], atol=1e-15)
    assert velocities[0] == 0.0
    assert velocities[1] == pytest.approx(segment.end_velocity_rad_s)


def test_next_angle_falls_back_to_mid_range_outside_the_feasible_range():
    upcoming = [
        UpcomingWaist(1.0, _choice(0.3, -0.6, 0.2)),
        UpcomingWaist(2.0, _choice(0.6)),
        UpcomingWaist(3.0, _choice(0.9)),
    ]
    segment = plan_waist_segment(WaistKeyframe(0.0, 0.0), upcoming)
    assert segment.end.angle_rad == pytest.approx(-0.2)


def test_missing_lookahead_events_are_padded_with_the_last_optimum():
    one = plan_waist_segment(WaistKeyframe(0.0, 0.0), [UpcomingWaist(0.5, _choice(0.4))])
    padded = plan_waist_segment(
        WaistKeyframe(0.0, 0.0),
        [
            UpcomingWaist(0.5, _choice(0.4)),
            UpcomingWaist(1.5, _choice(0.4)),
            UpcomingWaist(2.5, _choice(0.4)),
        ],
    )
    assert one == padded
    # mean of 0.4 / 0.5, 0.4 / 1.5, 0.4 / 2.5 rad/s over 0.5 s
    assert one.end.angle_rad == pytest.approx((0.8 + 0.4 / 1.5 + 0.16) / 3.0 * 0.5)


def test_invalid_keyframes_raise():
    with pytest.raises(ValueError, match='upcoming'):
        plan_waist_segment(WaistKeyframe(0.0, 0.0), [])
    with pytest.raises(ValueError, match='increase'):
        plan_waist_segment(WaistKeyframe(1.0, 0.0), [UpcomingWaist(1.0, _choice(0.1))])
    with pytest.raises(ValueError, match='finite'):
        plan_waist_segment(WaistKeyframe(0.0, math.nan), [UpcomingWaist(1.0, _choice(0.1))])


def test_slopes_are_zero_at_extrema_and_on_flat_pieces():
    assert monotone_slopes((0.0, 1.0, 2.0, 3.0), (0.0, 1.0, 0.0, 1.0)) == (0.0, 0.0)
    assert monotone_slopes((0.0, 1.0, 2.0, 3.0), (0.0, 0.5, 0.5, 1.0)) == (0.0, 0.0)
    start, end = monotone_slopes((0.0, 1.0, 2.0, 3.0), (0.0, 1.0, 2.0, 1.0))
    assert start == pytest.approx(1.0) and end == 0.0
    start, end = monotone_slopes((0.0, 1.0, 2.0, 3.0), (0.0, 0.0, 1.0, 2.0))
    assert start == 0.0 and end == pytest.approx(1.0)


def test_slopes_are_limited_to_the_fritsch_carlson_circle():
    times, angles = (0.0, 1.0, 1.1, 2.1), (0.0, 10.0, 10.1, 20.0)
    start, end = monotone_slopes(times, angles)
    secant = (angles[2] - angles[1]) / (times[2] - times[1])
    assert math.hypot(start / secant, end / secant) == pytest.approx(3.0)


finite_steps = st.floats(0.05, 2.0)
finite_angles = st.floats(-1.5, 1.5)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(finite_steps, min_size=3, max_size=3), st.lists(finite_angles, min_size=4, max_size=4)
)
def test_waist_piece_between_the_middle_keyframes_is_monotone(steps, angles):
    times = np.concatenate([[0.0], np.cumsum(steps)])
    start, end = monotone_slopes(tuple(times), tuple(angles))
    segment = hermite_segment(angles[1], start, angles[2], end, times[2] - times[1])
    values, _ = segment.evaluate(np.linspace(0.0, times[2] - times[1], 201))
    steps_taken = np.diff(values[:, 0]) * np.sign(angles[2] - angles[1])
    assert (steps_taken >= -1e-12).all()


def test_previous_keyframe_shapes_the_start_slope():
    upcoming = [
        UpcomingWaist(1.0, _choice(0.3)),
        UpcomingWaist(2.0, _choice(0.6)),
        UpcomingWaist(3.0, _choice(0.9)),
    ]
    segment = plan_waist_segment(
        WaistKeyframe(0.0, 0.0), upcoming, previous=WaistKeyframe(-1.0, -0.3)
    )
    assert segment.start_velocity_rad_s == pytest.approx(0.3)
    assert segment.end_velocity_rad_s == pytest.approx(0.3)
    angles, velocities = segment.evaluate([0.25, 0.5, 5.0])
    np.testing.assert_allclose(angles, [0.075, 0.15, 0.3], atol=1e-12)
    np.testing.assert_allclose(velocities, 0.3, atol=1e-12)
