"""Time-stamped trajectories: sampling, joins, cuts, knots and peak speeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.motion import HoldSegment, TimedSegment, Trajectory
from phil_control.core.profiles import Profile, hermite_segment, profile_segment

NAMES = ('a', 'b')


def _move(start, end, duration, profile=Profile.COSINE):
    return profile_segment(np.array(start, float), np.array(end, float), duration, profile)


def test_segments_are_placed_back_to_back_and_sampled_anywhere():
    trajectory = Trajectory.from_segments(
        NAMES, 5.0, [_move([0, 0], [1, -1], 2.0), _move([1, -1], [0.5, 0], 1.0)]
    )
    assert (trajectory.start_s, trajectory.end_s, trajectory.duration_s) == (5.0, 8.0, 3.0)
    positions, velocities = trajectory.sample([4.0, 5.0, 6.0, 7.0, 7.5, 8.0, 9.0])
    np.testing.assert_allclose(positions[[0, 1]], [[0, 0], [0, 0]])
    np.testing.assert_allclose(positions[2], [0.5, -0.5], atol=1e-12)
    np.testing.assert_array_equal(positions[3], [1.0, -1.0])
    np.testing.assert_allclose(positions[4], [0.75, -0.5], atol=1e-12)
    np.testing.assert_array_equal(positions[5:], [[0.5, 0.0], [0.5, 0.0]])
    assert velocities[2, 0] == pytest.approx(math.pi / 2 / 2.0)
    np.testing.assert_array_equal(velocities[[0, 5, 6]], 0.0)


def test_end_state_is_the_exact_target_even_off_a_float_grid():
    trajectory = Trajectory.from_segments(
        NAMES, 0.1, [_move([0, 0], [0.3, 0.7], 0.7) for _ in range(1)]
    )
    positions, velocities = trajectory.end_state()
    np.testing.assert_array_equal(positions, [0.3, 0.7])
    np.testing.assert_array_equal(velocities, [0.0, 0.0])
    np.testing.assert_array_equal(trajectory.sample(0.1 + 0.7)[0][0], [0.3, 0.7])


def test_invalid_construction_raises():
    with pytest.raises(ValueError, match='at least one'):
        Trajectory(NAMES, [])
    with pytest.raises(ValueError, match='starts at'):
        Trajectory(
            NAMES,
            [
                TimedSegment.at(_move([0, 0], [1, 1], 1.0), 0.0),
                TimedSegment.at(_move([1, 1], [0, 0], 1.0), 1.5),
            ],
        )
    with pytest.raises(ValueError, match='joint_names'):
        Trajectory(('a',), [TimedSegment.at(_move([0, 0], [1, 1], 1.0), 0.0)])


def test_then_joins_continuous_trajectories_and_holds_through_gaps():
    first = Trajectory.from_segments(NAMES, 0.0, [_move([0, 0], [1, 1], 1.0)])
    second = Trajectory.from_segments(NAMES, 1.0, [_move([1, 1], [2, 0], 1.0)])
    joined = first.then(second)
    assert (joined.start_s, joined.end_s, len(joined.segments)) == (0.0, 2.0, 2)
    later = Trajectory.from_segments(NAMES, 3.0, [_move([1, 1], [0, 0], 1.0)])
    gapped = first.then(later, allow_gap=True)
    assert isinstance(gapped.segments[1].segment, HoldSegment)
    np.testing.assert_array_equal(gapped.sample(2.0)[0][0], [1.0, 1.0])
    with pytest.raises(ValueError, match='not at'):
        first.then(later)
    jumped = Trajectory.from_segments(NAMES, 1.0, [_move([1.1, 1], [2, 0], 1.0)])
    with pytest.raises(ValueError, match='position jump'):
        first.then(jumped)
    moving = Trajectory.from_segments(
        NAMES, 1.0, [hermite_segment([1, 1], [0.5, 0], [2, 2], [0, 0], 1.0)]
    )
    with pytest.raises(ValueError, match='velocity jump'):
        first.then(moving)
    assert first.then(jumped, position_tolerance_rad=0.2).end_s == 2.0


def test_until_and_since_cut_without_changing_the_motion():
    trajectory = Trajectory.from_segments(
        NAMES, 0.0, [_move([0, 0], [1, 1], 1.0), _move([1, 1], [0, 2], 1.0)]
    )
    head = trajectory.until(1.4)
    tail = trajectory.since(0.6)
    assert (head.start_s, head.end_s, tail.start_s, tail.end_s) == (0.0, 1.4, 0.6, 2.0)
    times = np.linspace(0.6, 1.4, 17)
    for part in (head, tail):
        np.testing.assert_array_equal(part.sample(times)[0], trajectory.sample(times)[0])
    assert trajectory.until(0.0) is None and trajectory.since(2.0) is None
    np.testing.assert_array_equal(head.end_state()[0], trajectory.sample(1.4)[0][0])
    np.testing.assert_array_equal(tail.end_state()[0], [0.0, 2.0])


def test_knots_are_joins_and_trapezoid_phase_switches():
    trajectory = Trajectory.from_segments(
        NAMES,
        1.0,
        [_move([0, 0], [1, 1], 2.0, Profile.TRAPEZOIDAL), _move([1, 1], [0, 0], 1.0)],
    )
    np.testing.assert_allclose(trajectory.knots_s(), [1.5, 2.5, 3.0])
    assert trajectory.until(2.0).knots_s().tolist() == [1.5]


@pytest.mark.parametrize(
    ('profile', 'peak'),
    [
        (Profile.COSINE, math.pi / 2),
        (Profile.CUBIC, 1.5),
        (Profile.QUINTIC, 1.875),
        (Profile.TRAPEZOIDAL, 4.0 / 3.0),
    ],
)
def test_peak_velocities_per_segment(profile, peak):
    trajectory = Trajectory.from_segments(
        NAMES, 0.0, [_move([0, 0], [2.0, -1.0], 0.5, profile), HoldSegment(np.array([2, -1.0]), 1)]
    )
    peaks = trajectory.peak_velocities()
    np.testing.assert_allclose(peaks[0], [peak * 2.0 / 0.5, peak * 1.0 / 0.5])
    np.testing.assert_array_equal(peaks[1], [0.0, 0.0])
    dense = np.abs(trajectory.sample(np.linspace(0.0, 0.5, 2001))[1]).max(axis=0)
    np.testing.assert_allclose(dense, peaks[0], rtol=1e-5)
    sampled = trajectory.until(0.5 - 1e-9).peak_velocities()[0]  # a cut segment is sampled
    np.testing.assert_allclose(sampled, peaks[0], rtol=1e-3)
