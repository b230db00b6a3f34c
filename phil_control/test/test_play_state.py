"""State generator: elbow lift and wrist strike shapes, incl. a worked upstream example."""

from __future__ import annotations

import numpy as np
import pytest

from phil_control.core.play.shapes import Transition
from phil_control.core.play.state_generator import (
    StrikeContext,
    elbow_offset_deg,
    plan_strikes,
    split_sub_steps,
    strike_velocity,
    wrist_lift_deg,
    wrist_offset_deg,
)
from phil_control.core.play.timeline import Timeline, hit_source
from phil_control.core.score import ScoreEvent


def _event(index, time_s, beat, right=0, left=0, vr=0, vl=0, kick=False, closed=True):
    return ScoreEvent(
        index=index,
        bar=1,
        beat_units=beat,
        time_s=time_s,
        bpm=100.0,
        right_drum=right,
        left_drum=left,
        right_velocity=vr,
        left_velocity=vl,
        kick=kick,
        hihat_closed=closed,
    )


def _hit_window_plan(hand='left', velocity=5):
    timeline = Timeline(hit_source('snare', velocity, hand))
    timeline.ensure_release(0.6)
    window = timeline.windows[0]
    return plan_strikes(split_sub_steps(window.events), hand, StrikeContext())[0]


def test_upstream_worked_example_hit_at_one_second():
    # Upstream's HIT: impact at t = 1.0 s, v = 5, beat 0.6 -> 12 sub-steps of 1/12 s.
    plan = _hit_window_plan()
    times = np.array([0.1, 0.3, 0.5, 0.7, 0.8, 0.85, 1.0])
    elbow, wrist = (np.degrees(values) for values in plan.evaluate(times))
    np.testing.assert_allclose(elbow[:3], 0.0, atol=1e-9)  # nothing until 0.5 s
    np.testing.assert_allclose(wrist[:4], 20.0, atol=1e-9)  # stay holds until 0.7 s
    assert elbow[4] == pytest.approx(15.0, abs=1e-6)  # elbow top at 0.8 s
    assert wrist[5] == pytest.approx(50.0, abs=1e-6)  # wrist top at 0.85 s
    assert elbow[6] == pytest.approx(0.0, abs=1e-9)  # impact: elbow back at 0
    assert wrist[6] == pytest.approx(-5.0, abs=1e-9)  # impact: press
    # between the listed instants: cubic halves and the parabola's midpoint
    elbow_mid, wrist_mid = (np.degrees(v) for v in plan.evaluate([0.65, 0.9, 0.775, 0.925]))
    np.testing.assert_allclose(elbow_mid[:2], [7.5, 7.5], atol=1e-6)
    np.testing.assert_allclose(wrist_mid[2:], [35.0, 50.0 - 55.0 * 0.25], atol=1e-6)
    segments = {segment for segment in plan.segments if segment.transition.ends_in_hit}
    assert segments == {StrikeContext(Transition.REST_TO_HIT, 0.5, 1.0, 5)}


def test_worked_example_accelerates_into_the_press():
    plan = _hit_window_plan()
    times = np.linspace(0.86, 1.0, 15)
    _, wrist = plan.evaluate(times)
    steps = np.diff(wrist)
    assert (steps < 0).all() and (np.diff(steps) < 0).all()  # falling faster and faster


def test_rest_to_hit_never_starts_earlier_than_half_a_second():
    plan = _hit_window_plan(velocity=7)
    elbow, wrist = plan.evaluate(np.linspace(0.01, 0.5, 50))
    assert np.all(elbow == 0.0) and np.allclose(np.degrees(wrist), 20.0)


@pytest.mark.parametrize(
    ('velocity', 'factor'),
    [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0), (6, 4 / 3), (7, 5 / 3)],
)
def test_wrist_lift_factor_by_intensity(velocity, factor):
    assert wrist_lift_deg(0.6, velocity) == pytest.approx(20.0 + 30.0 * factor)
    # T < 0.5 s: magnitude 40 T + 10 deg
    assert wrist_lift_deg(0.25, velocity) == pytest.approx(20.0 + 20.0 * factor)


@pytest.mark.parametrize(('velocity', 'top'), [(3, 0.0), (4, 13.5), (5, 15.0), (7, 18.0)])
def test_elbow_lift_by_intensity_and_duration(velocity, top):
    segment = StrikeContext(Transition.REST_TO_HIT, 0.0, 0.8, velocity)
    t_lift = max(0.5 * 0.8, 0.8 - 0.2)
    assert elbow_offset_deg(np.array([t_lift]), 0.8, segment)[0] == pytest.approx(top)
    short = StrikeContext(Transition.HIT_TO_HIT, 0.0, 0.15, velocity)
    assert np.all(elbow_offset_deg(np.linspace(0, 0.15, 7), 0.15, short) == 0.0)  # T < 0.2 s
    mid = StrikeContext(Transition.HIT_TO_HIT, 0.0, 0.3, velocity)
    expected = 15.0 * 0.3 / 0.5 * (0.0 if velocity <= 3 else 0.1 * velocity + 0.5)
    assert elbow_offset_deg(np.array([0.15]), 0.3, mid)[0] == pytest.approx(expected)


def test_hit_to_hit_shape():
    # T = 0.4 s, v = 5: press -> lift by 0.2 s (arriving at rest), then straight down to press.
    segment = StrikeContext(Transition.HIT_TO_HIT, 0.0, 0.4, 5)
    lift = 20.0 + (40.0 * 0.4 + 10.0)
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    wrist = wrist_offset_deg(t, 0.4, segment)
    np.testing.assert_allclose(wrist[[0, 2, 4]], [-5.0, lift, -5.0])
    assert wrist[1] == pytest.approx(lift - (lift + 5.0) * 0.25)  # decelerating rise
    assert wrist[3] == pytest.approx(lift - (lift + 5.0) * 0.25)  # accelerating fall
    long = StrikeContext(Transition.HIT_TO_HIT, 0.0, 0.8, 5)
    held = wrist_offset_deg(np.array([0.4, 0.5, 0.55]), 0.8, long)
    np.testing.assert_allclose(held, 50.0)  # hold until T - 0.25


def test_hit_to_rest_returns_to_stay_with_zero_velocity():
    segment = StrikeContext(Transition.HIT_TO_REST, 0.0, 0.05, 5)
    t = np.array([0.0, 0.05, 0.05 - 1e-6])
    wrist = wrist_offset_deg(t, 0.05, segment)
    assert wrist[0] == pytest.approx(-5.0) and wrist[1] == pytest.approx(20.0)
    assert (wrist[1] - wrist[2]) / 1e-6 == pytest.approx(0.0, abs=0.1)  # vs 1000 deg/s at start


def test_sub_steps_follow_the_beat_column_and_search_half_a_second_ahead():
    events = [
        _event(-1, 0.0, 0.0),
        _event(0, 0.3, 0.3, right=5, vr=5),
        _event(1, 0.45, 0.15, left=1, vl=3),
        _event(2, 1.2, 0.75, right=5, vr=5),
        _event(3, 1.5, 0.3, right=5, vr=5),
    ]
    steps = split_sub_steps(events)
    assert steps.generated == 6
    # lines split into round(beat / 0.05) parts; splitting stops 0.5 s after events[1]
    np.testing.assert_allclose(
        steps.times_s[:10], [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
    )
    assert steps.times_s[-1] == pytest.approx(1.2)
    assert list(steps.velocities['right'][[6, 9]]) == [5, 0]
    assert steps.velocities['left'][9] == 3


def test_velocity_zero_with_a_drum_is_a_soft_hit_and_velocity_without_drum_is_ignored():
    assert strike_velocity(_event(0, 1.0, 0.6, right=1, vr=0), 'right') == 1
    assert strike_velocity(_event(0, 1.0, 0.6, left=0, vl=5), 'left') == 0
    assert strike_velocity(_event(0, 1.0, 0.6, right=5, vr=7), 'right') == 7
    segment = StrikeContext(Transition.REST_TO_HIT, 0.0, 0.5, 1)
    wrist = wrist_offset_deg(np.array([0.0, 0.3, 0.5]), 0.5, segment)
    np.testing.assert_allclose(wrist, [20.0, 20.0, -5.0])  # no lift, still a stroke
