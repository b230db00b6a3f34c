"""Pedal generator (bass, hi-hat) and head generator (yaw, nod) shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.play.head_generator import (
    HeadContext,
    nod_intensity,
    nod_shape,
    plan_head,
)
from phil_control.core.play.pedal_generator import PedalPlan, bass_angle_rad, hihat_angle_rad
from phil_control.core.play.robot import PlayRobot
from phil_control.core.play.shapes import Transition
from phil_control.core.score import ScoreEvent
from phil_description.core import default_robot_model

DEG = math.pi / 180.0


@pytest.fixture(scope='module')
def robot():
    return PlayRobot.from_model(default_robot_model())


def _event(index, time_s, beat=0.3, right=0, left=0, vr=0, vl=0, kick=False):
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
        hihat_closed=True,
    )


def test_bass_strike_lands_exactly_at_the_event():
    t = np.array([0.0, 0.5, 0.6, 0.8, 1.0])  # T = 1.0: t_lift = max(0.6, 0.8) = 0.8
    angle = bass_angle_rad(t, 1.0, Transition.REST_TO_HIT) / DEG
    np.testing.assert_allclose(angle, [0, 0, 0, 0, -20], atol=1e-12)
    mid = bass_angle_rad(np.array([0.9]), 1.0, Transition.REST_TO_HIT)[0] / DEG
    assert mid == pytest.approx(-10.0)  # half-cosine midpoint


def test_bass_return_after_a_kick():
    t = np.array([0.0, 0.225, 0.45, 0.7])  # T = 1.0: t_stay = 0.45
    angle = bass_angle_rad(t, 1.0, Transition.HIT_TO_REST) / DEG
    np.testing.assert_allclose(angle, [-20, -10, 0, 0], atol=1e-12)
    both = bass_angle_rad(np.array([0.0, 0.5, 1.0]), 1.0, Transition.HIT_TO_HIT) / DEG
    np.testing.assert_allclose(both, [-20, 0, -20], atol=1e-12)


def test_bass_short_interval_uses_the_whole_interval():
    duration = 0.15
    t = np.array([0.0, 0.075, 0.15])
    double = bass_angle_rad(t, duration, Transition.HIT_TO_HIT) / DEG
    np.testing.assert_allclose(double[[0, 2]], [-20, -20])
    assert double[1] == pytest.approx(-10.0)  # half-way back, strike not started
    strike = bass_angle_rad(t, duration, Transition.REST_TO_HIT) / DEG
    np.testing.assert_allclose(strike, [0, -10, -20], atol=1e-12)


def test_hihat_pedal_changes_between_ten_and_ninety_percent():
    t = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    closing = hihat_angle_rad(t, 1.0, Transition.REST_TO_HIT) / DEG
    np.testing.assert_allclose(closing, [-3, -3, -8, -13, -13], atol=1e-12)
    opening = hihat_angle_rad(t, 1.0, Transition.HIT_TO_REST) / DEG
    np.testing.assert_allclose(opening, [-13, -13, -8, -3, -3], atol=1e-12)
    np.testing.assert_allclose(hihat_angle_rad(t, 1.0, Transition.HIT_TO_HIT) / DEG, -13)
    np.testing.assert_allclose(hihat_angle_rad(t, 1.0, Transition.REST_TO_REST) / DEG, -3)
    short = hihat_angle_rad(np.array([0.0, 0.075, 0.15]), 0.15, Transition.REST_TO_HIT) / DEG
    np.testing.assert_allclose(short, [-3, -8, -13])


def test_pedal_plan_reads_kick_and_hihat_flags():
    plan = PedalPlan.between(2.0, 3.0, (False, True), (True, False))
    right, left = plan.evaluate([3.0])
    assert right[0] == pytest.approx(-20 * DEG) and left[0] == pytest.approx(-3 * DEG)


def test_head_turns_towards_the_next_right_drum(robot):
    start = HeadContext.looking_at(robot, 5)
    events = [_event(0, 0.0), _event(1, 1.2, beat=1.2, right=1, vr=5)]
    plan, following = plan_head(robot, events, start)
    assert following.drum == 1 and following.yaw_rad == pytest.approx(robot.look_angle_rad(1))
    yaw, _ = plan.evaluate([0.0, 0.6, 1.2])
    expected_mid = 0.5 * (robot.look_angle_rad(5) + robot.look_angle_rad(1)) - math.pi / 2
    np.testing.assert_allclose(
        yaw,
        [
            robot.look_angle_rad(5) - math.pi / 2,
            expected_mid,
            robot.look_angle_rad(1) - math.pi / 2,
        ],
    )
    # a rest keeps the previous drum
    _, kept = plan_head(robot, [_event(1, 1.2), _event(2, 1.8)], following)
    assert kept.drum == 1 and kept.yaw_rad == following.yaw_rad


def test_head_yaw_change_is_rate_limited(robot):
    start = HeadContext.looking_at(robot, 5)
    far = [_event(0, 0.0), _event(1, 0.15, beat=0.15, right=7, vr=5)]
    _, following = plan_head(robot, far, start)
    reach = robot.head_yaw_rate_rad_s * 0.15 / 1.5
    assert abs(following.yaw_rad - start.yaw_rad) == pytest.approx(reach)
    assert abs(robot.look_angle_rad(7) - start.yaw_rad) > reach


def test_nod_intensity_and_shape():
    events = [
        _event(0, 0.0),
        _event(1, 0.3, right=5, vr=5, kick=True),
        _event(2, 0.6, right=5, vr=3, left=1, vl=5),
        _event(3, 0.9, right=5, vr=7),
    ]
    assert nod_intensity(events) == pytest.approx(min(1.0, (1.0 + 0.8) / 2))
    assert nod_intensity([_event(0, 0.0), _event(1, 0.6, beat=0.6)]) == 0.0
    np.testing.assert_allclose(
        nod_shape(np.array([0.0, 0.35, 0.7, 0.85, 0.9999])), [0.0, 0.5, 1.0, 0.5, 0.0], atol=1e-6
    )


def test_pitch_nods_on_the_beat(robot):
    start = HeadContext(drum=5, yaw_rad=robot.look_angle_rad(5), nod_intensity=1.0)
    loud = [_event(0, 0.0), _event(1, 0.6, beat=0.6, right=5, vr=7, left=1, vl=7, kick=True)]
    plan, following = plan_head(robot, loud, start)
    assert following.nod_intensity == 1.0 and following.nod_phase == pytest.approx(0.0)
    _, pitch = plan.evaluate([0.0, 0.42, 0.6])  # one cycle per 0.6 beat units
    np.testing.assert_allclose(pitch / DEG, [20.0, 0.0, 20.0], atol=1e-9)
    quiet = HeadContext(drum=5, yaw_rad=robot.look_angle_rad(5))
    plan, _ = plan_head(robot, [_event(0, 0.0), _event(1, 0.6, beat=0.6)], quiet)
    np.testing.assert_allclose(plan.evaluate([0.1, 0.42])[1] / DEG, 20.0)
