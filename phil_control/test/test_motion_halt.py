"""Smooth halts: continuous position and velocity, bounded deceleration, rest, hard limits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phil_control.core.motion import HoldSegment, plan_halt

NAMES = ('a', 'b', 'c')


def _check_stop(plan, positions, velocities, start_s):
    trajectory = plan.trajectory
    q0, v0 = trajectory.start_state()
    np.testing.assert_allclose(q0, positions, atol=1e-12)
    np.testing.assert_allclose(v0, velocities, atol=1e-12)
    assert trajectory.start_s == start_s
    q1, v1 = trajectory.end_state()
    np.testing.assert_array_equal(v1, 0.0)
    times = np.linspace(trajectory.start_s, trajectory.end_s, 201)
    sampled_positions, sampled_velocities = trajectory.sample(times)
    acceleration = np.diff(sampled_velocities, axis=0) / np.diff(times)[:, np.newaxis]
    # Speed only ever decreases, never reverses.
    assert (np.abs(sampled_velocities[1:]) <= np.abs(sampled_velocities[:-1]) + 1e-12).all()
    assert (sampled_velocities * np.sign(velocities) >= -1e-12).all()
    return q1, acceleration


def test_stop_decelerates_at_the_bound_for_the_fastest_joint():
    positions, velocities = np.array([0.1, 0.2, 0.3]), np.array([2.0, -1.0, 0.0])
    plan = plan_halt(NAMES, positions, velocities, 4.0, deceleration_rad_s2=10.0)
    assert plan.duration_s == pytest.approx(0.2) and plan.limited_by is None
    end, acceleration = _check_stop(plan, positions, velocities, 4.0)
    np.testing.assert_allclose(end, positions + velocities * 0.1)
    np.testing.assert_allclose(np.abs(acceleration).max(axis=0), [10.0, 5.0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(plan.deceleration_rad_s2, [10.0, 5.0, 0.0])


def test_per_joint_bounds():
    plan = plan_halt(NAMES, np.zeros(3), np.array([1.0, 1.0, 1.0]), 0.0, [10.0, 2.0, 10.0])
    assert plan.duration_s == pytest.approx(0.5)
    assert (plan.deceleration_rad_s2 <= [10.0, 2.0, 10.0]).all()


def test_at_rest_the_halt_is_a_short_hold():
    positions = np.array([0.1, 0.2, 0.3])
    plan = plan_halt(NAMES, positions, np.zeros(3), 1.0)
    assert isinstance(plan.trajectory.segments[0].segment, HoldSegment)
    assert plan.duration_s == pytest.approx(0.02)
    np.testing.assert_array_equal(plan.trajectory.end_state()[0], positions)


def test_a_hard_limit_shortens_the_stop():
    positions, velocities = np.array([0.9, 0.0, -0.9]), np.array([2.0, 0.5, -1.0])
    lower, upper = np.full(3, -1.0), np.full(3, 1.0)
    plan = plan_halt(NAMES, positions, velocities, 0.0, 5.0, lower, upper)
    assert plan.limited_by == 'a'
    assert plan.duration_s == pytest.approx(0.1)
    end, _ = _check_stop(plan, positions, velocities, 0.0)
    assert end[0] == pytest.approx(1.0) and (end >= lower).all() and (end <= upper).all()


def test_invalid_input_raises():
    with pytest.raises(ValueError, match='finite'):
        plan_halt(NAMES, [0.0, np.nan, 0.0], np.zeros(3), 0.0)
    with pytest.raises(ValueError, match='positive'):
        plan_halt(NAMES, np.zeros(3), np.zeros(3), 0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3),
    st.lists(st.floats(-20.0, 20.0), min_size=3, max_size=3),
    st.floats(1.0, 100.0),
)
def test_any_stop_is_continuous_bounded_and_inside_the_limits(positions, velocities, bound):
    positions, velocities = np.array(positions), np.array(velocities)
    lower, upper = np.full(3, -1.5), np.full(3, 1.5)
    plan = plan_halt(NAMES, positions, velocities, 2.0, bound, lower, upper)
    end, acceleration = _check_stop(plan, positions, velocities, 2.0)
    assert (end >= lower - 1e-12).all() and (end <= upper + 1e-12).all()
    if plan.limited_by is None:
        assert np.abs(acceleration).max() <= bound * (1 + 1e-6)
