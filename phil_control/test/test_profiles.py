"""Trajectory profiles, upstream's sampling semantics and Hermite segments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phil_control.core.profiles import (
    DEFAULT_DT_S,
    Profile,
    hermite_segment,
    profile_position,
    profile_segment,
    profile_velocity,
    sample_count,
    sample_segment,
)

ALL_PROFILES = list(Profile)


@pytest.mark.parametrize('profile', ALL_PROFILES)
def test_endpoints_are_exact_and_at_rest(profile):
    assert profile_position(profile, 0.0) == 0.0
    assert profile_position(profile, 1.0) == 1.0
    assert profile_velocity(profile, 0.0) == 0.0
    assert profile_velocity(profile, 1.0) == 0.0
    np.testing.assert_array_equal(profile_position(profile, [-0.5, 1.5]), [0.0, 1.0])
    np.testing.assert_array_equal(profile_velocity(profile, [-0.5, 1.5]), [0.0, 0.0])


@pytest.mark.parametrize(
    ('profile', 'formula'),
    [
        (Profile.COSINE, lambda tau: (1.0 - np.cos(np.pi * tau)) / 2.0),
        (Profile.CUBIC, lambda tau: 3.0 * tau**2 - 2.0 * tau**3),
        (Profile.QUINTIC, lambda tau: 10.0 * tau**3 - 15.0 * tau**4 + 6.0 * tau**5),
    ],
)
def test_polynomial_and_cosine_shapes_match_facts(profile, formula):
    tau = np.linspace(0.0, 1.0, 101)
    np.testing.assert_allclose(profile_position(profile, tau), formula(tau), atol=1e-15)


@pytest.mark.parametrize('profile', ALL_PROFILES)
def test_velocity_is_the_derivative_of_position(profile):
    tau = np.linspace(0.001, 0.999, 999)
    step = 1e-6
    numeric = (profile_position(profile, tau + step) - profile_position(profile, tau - step)) / (
        2.0 * step
    )
    # The trapezoid's kinks at 0.25 and 0.75 cost the central difference about 1.3e-6.
    np.testing.assert_allclose(profile_velocity(profile, tau), numeric, atol=5e-6)


@pytest.mark.parametrize('profile', ALL_PROFILES)
def test_progress_is_monotone(profile):
    progress = profile_position(profile, np.linspace(0.0, 1.0, 2001))
    assert (np.diff(progress) >= 0.0).all()


def test_trapezoid_phases_are_quarter_half_quarter_with_peak_four_thirds():
    tau = np.linspace(0.0, 1.0, 4001)
    speed = profile_velocity(Profile.TRAPEZOIDAL, tau)
    assert speed.max() == pytest.approx(4.0 / 3.0)
    cruising = tau[np.isclose(speed, 4.0 / 3.0)]
    assert cruising.min() == pytest.approx(0.25) and cruising.max() == pytest.approx(0.75)
    accelerating = tau < 0.25
    np.testing.assert_allclose(speed[accelerating], 16.0 / 3.0 * tau[accelerating])
    decelerating = tau > 0.75
    np.testing.assert_allclose(
        speed[decelerating], 16.0 / 3.0 * (1.0 - tau[decelerating]), atol=1e-12
    )
    assert profile_position(Profile.TRAPEZOIDAL, 0.25) == pytest.approx(1.0 / 6.0)
    assert profile_position(Profile.TRAPEZOIDAL, 0.5) == pytest.approx(0.5)
    assert profile_position(Profile.TRAPEZOIDAL, 0.75) == pytest.approx(5.0 / 6.0)


@pytest.mark.parametrize('profile', ALL_PROFILES)
def test_sampling_follows_upstream(profile):
    start, end = np.array([0.1, -0.2, 1.0]), np.array([0.3, 0.4, 1.0])
    times, positions, velocities = sample_segment(start, end, 3.0, profile)
    count = 600
    assert times.shape == (count,) and positions.shape == velocities.shape == (count, 3)
    np.testing.assert_allclose(times, np.arange(1, count + 1) * DEFAULT_DT_S, rtol=1e-12)
    assert times[-1] == 3.0
    first = profile_position(profile, 1.0 / count)
    np.testing.assert_allclose(positions[0], start + first * (end - start), atol=1e-15)
    np.testing.assert_array_equal(positions[-1], end)
    np.testing.assert_array_equal(velocities[-1], 0.0)
    middle = count // 2 - 1  # k = n / 2, tau = 0.5
    np.testing.assert_allclose(
        velocities[middle], profile_velocity(profile, 0.5) * (end - start) / 3.0
    )
    np.testing.assert_array_equal(positions[:, 2], 1.0)
    # Central differences of the samples against the sampled velocities.
    numeric = (positions[2:] - positions[:-2]) / (2.0 * DEFAULT_DT_S)
    np.testing.assert_allclose(velocities[1:-1], numeric, atol=2e-3)


def test_sample_count_rounds_and_keeps_at_least_one_sample():
    assert sample_count(3.0) == 600
    assert sample_count(1.0) == 200
    assert sample_count(0.0124) == 2
    assert sample_count(0.0126) == 3
    assert sample_count(0.001) == 1
    times, positions, _ = sample_segment([0.0], [1.0], 0.001)
    np.testing.assert_array_equal(times, [0.001])
    np.testing.assert_array_equal(positions, [[1.0]])


def test_a_duration_off_the_grid_keeps_its_length():
    times, positions, _ = sample_segment([0.0], [2.0], 0.0123, Profile.CUBIC)
    np.testing.assert_allclose(times, [0.00615, 0.0123])
    np.testing.assert_allclose(positions[:, 0], [1.0, 2.0])


def test_evaluation_at_arbitrary_times_matches_the_samples():
    segment = profile_segment([0.0, 1.0], [1.0, -1.0], 1.0, Profile.QUINTIC)
    times, positions, velocities = segment.sample()
    at_positions, at_velocities = segment.evaluate(times)
    np.testing.assert_array_equal(at_positions, positions)
    np.testing.assert_array_equal(at_velocities, velocities)
    before_and_after, speeds = segment.evaluate([-0.1, 0.0, 1.0, 7.0])
    np.testing.assert_array_equal(
        before_and_after, [[0.0, 1.0], [0.0, 1.0], [1.0, -1.0], [1.0, -1.0]]
    )
    np.testing.assert_array_equal(speeds, 0.0)
    middle, _ = segment.evaluate([0.5])
    np.testing.assert_allclose(middle, [[0.5, 0.0]], atol=1e-15)


@pytest.mark.parametrize(
    ('arguments', 'name'),
    [
        (([math.nan, 0.0], [1.0, 1.0], 1.0), 'start_q'),
        (([0.0, 0.0], [1.0, math.inf], 1.0), 'end_q'),
        (([0.0, 0.0], [1.0, 1.0, 1.0], 1.0), 'end_q'),
        (([[0.0]], [[1.0]], 1.0), 'start_q'),
        (([0.0], [1.0], 0.0), 'duration_s'),
        (([0.0], [1.0], -2.0), 'duration_s'),
        (([0.0], [1.0], math.nan), 'duration_s'),
        (([0.0], [1.0], 1.0, 'cosine'), 'profile'),
        (([0.0], [1.0], 1.0, Profile.COSINE, 0.0), 'dt_s'),
        (([0.0], [1.0], 1.0, Profile.COSINE, math.inf), 'dt_s'),
    ],
)
def test_invalid_inputs_name_the_argument(arguments, name):
    with pytest.raises(ValueError, match=name):
        sample_segment(*arguments)


def test_invalid_evaluation_times_raise():
    segment = profile_segment([0.0], [1.0], 1.0)
    with pytest.raises(ValueError, match='times_s'):
        segment.evaluate([0.1, math.nan])


def test_hermite_with_rest_ends_is_the_cubic_and_quintic_profile():
    tau = np.linspace(0.0, 1.0, 51)
    cubic = hermite_segment(0.0, 0.0, 1.0, 0.0, 2.0)
    positions, _ = cubic.evaluate(2.0 * tau)
    np.testing.assert_allclose(positions[:, 0], profile_position(Profile.CUBIC, tau), atol=1e-15)
    quintic = hermite_segment(0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0)
    assert (cubic.degree, quintic.degree) == (3, 5)
    positions, _ = quintic.evaluate(2.0 * tau)
    np.testing.assert_allclose(positions[:, 0], profile_position(Profile.QUINTIC, tau), atol=1e-15)


states = st.floats(-3.0, 3.0)


@settings(max_examples=200, deadline=None)
@given(states, states, states, states, states, states, st.floats(0.05, 5.0), st.booleans())
def test_hermite_meets_any_start_and_end_state(q0, v0, q1, v1, a0, a1, duration, quintic):
    accelerations = (a0, a1) if quintic else (None, None)
    segment = hermite_segment([q0], [v0], [q1], [v1], duration, *accelerations)
    positions, velocities = segment.evaluate([0.0, duration])
    np.testing.assert_allclose(positions[:, 0], [q0, q1], atol=1e-9)
    assert positions[1, 0] == q1
    np.testing.assert_allclose(velocities[:, 0], [v0, v1], atol=1e-9)
    step = duration * 1e-5
    inner = np.linspace(step, duration - step, 41)
    ahead, _ = segment.evaluate(inner + step * 0.5)
    behind, _ = segment.evaluate(inner - step * 0.5)
    _, speeds = segment.evaluate(inner)
    np.testing.assert_allclose(speeds[:, 0], (ahead - behind)[:, 0] / step, atol=1e-5, rtol=1e-5)
    if quintic:
        curvature = np.polynomial.polynomial.polyder(segment.coefficients[:, 0], 2)
        accelerations = np.polynomial.polynomial.polyval([0.0, 1.0], curvature) / duration**2
        np.testing.assert_allclose(accelerations, [a0, a1], atol=1e-9)


def test_hermite_sampling_and_validation():
    segment = hermite_segment([0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0], 0.5)
    times, positions, velocities = segment.sample()
    assert times.shape == (100,) and times[-1] == 0.5
    np.testing.assert_array_equal(positions[-1], [1.0, 1.0])
    np.testing.assert_array_equal(positions[:, 1], 1.0)
    assert velocities.shape == (100, 2)
    with pytest.raises(ValueError, match='end_v'):
        hermite_segment([0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0], 0.5)
    with pytest.raises(ValueError, match='start_v'):
        hermite_segment([0.0], [math.nan], [1.0], [0.0], 0.5)
    with pytest.raises(ValueError, match='duration_s'):
        hermite_segment([0.0], [0.0], [1.0], [0.0], 0.0)
    with pytest.raises(ValueError, match='together'):
        hermite_segment([0.0], [0.0], [1.0], [0.0], 1.0, start_a=[0.0])
