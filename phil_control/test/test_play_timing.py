"""Timing statistics, hit matching, crossing detection, Hermite sampling, waist repair."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.kinematics import WaistChoice, WaistKeyframe, WaistSegment
from phil_control.core.play import PlayRobot, PlaySession
from phil_control.core.play.timing import (
    downward_crossing,
    match_hits,
    sample_hermite,
    timing_stats,
)
from phil_control.core.play.waist_path import REPAIR_MARGIN_RAD, WaistPath, repair_angle
from phil_control.core.play.window_motion import sample_times
from phil_description.core import default_robot_model


def test_timing_stats_mean_percentile_and_drift():
    expected = np.linspace(0.0, 10.0, 101)
    errors = 0.001 + 0.0002 * expected  # 0.2 ms/s drift
    stats = timing_stats(errors, expected)
    assert stats.hits == 101
    assert stats.mean_error_s == pytest.approx(0.002)
    assert stats.max_abs_error_s == pytest.approx(0.003)
    assert stats.p99_abs_error_s == pytest.approx(np.percentile(np.abs(errors), 99))
    assert stats.drift_slope == pytest.approx(0.0002) and stats.drift_s == pytest.approx(0.002)
    assert timing_stats([-0.004, 0.002]).max_abs_error_s == 0.004
    assert math.isnan(timing_stats([]).mean_error_s)
    with pytest.raises(ValueError):
        timing_stats([0.0, math.nan])


def test_match_hits_pairs_nearest_within_tolerance():
    errors, missed, extra = match_hits([1.0, 2.0, 3.0], [1.001, 2.5, 2.999, 7.0], 0.01)
    np.testing.assert_allclose(errors, [0.001, -0.001])
    assert (missed, extra) == (1, 2)


def test_sample_hermite_reproduces_cubics_exactly():
    knots = np.array([0.0, 0.3, 0.5, 1.0])
    polynomial = np.poly1d([2.0, -1.0, 0.5, 0.25])
    positions = polynomial(knots)[:, None]
    velocities = polynomial.deriv()(knots)[:, None]
    queries = np.linspace(0.0, 1.0, 37)
    np.testing.assert_allclose(
        sample_hermite(knots, positions, velocities, queries)[:, 0], polynomial(queries)
    )


def _strike(t_hit, rebound_rate, approach_rate=2.0, period=0.001, phase=0.00037):
    times = np.arange(t_hit - 0.05, t_hit + 0.05, period) + phase
    heights = np.where(
        times < t_hit, approach_rate * (t_hit - times), rebound_rate * (times - t_hit)
    )
    return times, heights


@pytest.mark.parametrize('rebound', [-0.5, 0.3, 2.0, 8.0])
@pytest.mark.parametrize('phase', [0.00037, 0.00086, 0.00014, 0.0])
def test_crossing_is_found_from_the_approach_however_the_stick_rebounds(rebound, phase):
    # tip 2 m/s down onto the pad at t = 1 s; afterwards below (-), or quickly back up (+)
    times, heights = _strike(1.0, rebound, phase=phase)
    assert downward_crossing(times, heights, 0.0, 1.0, 0.02) == pytest.approx(1.0, abs=1e-9)


def test_no_crossing_when_the_stick_stays_above():
    times = np.arange(0.9, 1.1, 0.001)
    assert downward_crossing(times, 0.01 + 0.0 * times, 0.0, 1.0, 0.05) is None
    bounce = 0.004 + np.abs(times - 1.0)  # turns back 4 mm above the pad
    assert downward_crossing(times, bounce, 0.0, 1.0, 0.05) is None


@pytest.mark.parametrize('speed', [0.5, 1.0, 2.0])
def test_rebound_sample_follows_a_strike(speed):
    times = sample_times(2.0, 2.3, speed, rebound=True)
    assert times[0] == pytest.approx(2.0 + 0.0005 * speed)
    assert np.diff(times).max() <= 0.005 * speed + 1e-12 and times[-1] == 2.3


def test_waist_path_keyframes_keep_the_ends():
    segment = WaistSegment(WaistKeyframe(0.0, 0.1), WaistKeyframe(1.0, 0.3), 0.2, -0.1)
    path = WaistPath.from_segment(segment)
    np.testing.assert_allclose(path.evaluate([0.0, 0.5, 1.0]), [0.1, 0.2 + 0.3 / 8, 0.3])
    repaired = path.with_keyframe(0.4, -0.2)
    np.testing.assert_allclose(repaired.evaluate([0.0, 0.4, 1.0]), [0.1, -0.2, 0.3])
    assert repaired.velocities_rad_s[0] == 0.2 and repaired.end_velocity_rad_s == -0.1
    assert repaired.velocities_rad_s[1] == 0.0  # an extremum gets zero slope
    assert repaired.with_keyframe(0.4, 0.0) is repaired and path.with_keyframe(1.0, 0) is path


def test_repair_angle_moves_just_inside_the_feasible_range():
    choice = WaistChoice(0.2, -0.3, 0.5)
    assert repair_angle(0.9, choice) == pytest.approx(0.5 - REPAIR_MARGIN_RAD)
    assert repair_angle(-1.0, choice) == pytest.approx(-0.3 + REPAIR_MARGIN_RAD)
    assert repair_angle(0.1, choice) == 0.2  # inside yet failing: optimum


def test_hit_right_crash_needs_the_waist_repair_and_works():
    robot = PlayRobot.from_model(default_robot_model())
    session = PlaySession(robot)
    chunks = session.hit('right crash', now_s=0.0, current_positions_rad=robot.ready_rad)
    positions = np.concatenate([chunk.positions_rad for chunk in chunks])
    assert (positions <= robot.soft_upper_rad + 1e-12).all()
    assert (positions >= robot.soft_lower_rad - 1e-12).all()
    (hit,) = session.commanded_hits
    assert hit.instrument == 'right crash' and hit.hit.hand.value == 'right'
