"""Base generator: Bezier paths between drums, 1.2 s look-ahead, time law, base wrist."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.play.base_generator import (
    ArmContext,
    arm_targets_at_events,
    bezier_path,
    plan_arm_segment,
    struck_drum,
)
from phil_control.core.play.robot import PlayRobot, UnknownDrumError
from phil_control.core.play.shapes import Transition, smoothstep
from phil_control.core.score import ScoreEvent
from phil_description.core import default_robot_model


@pytest.fixture(scope='module')
def robot():
    return PlayRobot.from_model(default_robot_model())


def _event(index, time_s, right=0, left=0, closed=True):
    return ScoreEvent(
        index=index,
        bar=1,
        beat_units=0.3,
        time_s=time_s,
        bpm=100.0,
        right_drum=right,
        left_drum=left,
        right_velocity=5 if right else 0,
        left_velocity=5 if left else 0,
        hihat_closed=closed,
    )


def test_bezier_control_points_and_clearance():
    start, end = np.array([0.0, 0.4, -0.4]), np.array([0.3, 0.6, -0.2])
    s = np.linspace(0.0, 1.0, 201)
    path = bezier_path(start, end, s)
    np.testing.assert_allclose(path[0], start)
    np.testing.assert_allclose(path[-1], end)
    # x-y moves along the straight line (inner points at 1/3 and 2/3), at Bezier parameter s
    np.testing.assert_allclose(path[:, :2], start[:2] + s[:, None] * (end - start)[:2])
    h = 0.08 + 0.6 * abs(end[2] - start[2])
    p1z, p2z = start[2], end[2] + h
    expected_z = (
        (1 - s) ** 3 * start[2]
        + 3 * (1 - s) ** 2 * s * p1z
        + 3 * (1 - s) * s**2 * p2z
        + s**3 * end[2]
    )
    np.testing.assert_allclose(path[:, 2], expected_z)
    # the stick comes down onto the target: z falls just before the end
    assert path[-2, 2] > end[2]


def test_same_drum_stays():
    point = np.array([0.1, 0.5, -0.3])
    np.testing.assert_array_equal(
        bezier_path(point, point, np.linspace(0, 1, 5)), np.tile(point, (5, 1))
    )


def test_rest_to_hit_within_look_ahead_moves_with_smoothstep_and_linear_wrist(robot):
    events = [_event(-1, 0.0), _event(0, 0.6), _event(1, 1.2, right=6)]
    segment, context = plan_arm_segment(robot, events, 'right', ArmContext(5))
    assert context == ArmContext(5, Transition.REST_TO_HIT, 0.0, 6, 1.2)
    snare, ride = robot.target('right', 5), robot.target('right', 6)
    times = np.array([0.0, 0.3, 0.6, 0.9, 1.2])
    positions, wrists = segment.evaluate(times)
    s = smoothstep(times / 1.2)
    np.testing.assert_allclose(positions, bezier_path(snare.position_m, ride.position_m, s))
    np.testing.assert_allclose(wrists, snare.wrist_rad + s * (ride.wrist_rad - snare.wrist_rad))
    # the next window continues the same motion (start time from the context)
    following, again = plan_arm_segment(robot, events[1:], 'right', context)
    assert again == context and following == segment


def test_hit_beyond_look_ahead_is_not_seen(robot):
    events = [_event(-1, 0.0), _event(0, 0.6), _event(1, 1.25, right=6)]
    segment, context = plan_arm_segment(robot, events, 'right', ArmContext(5))
    assert context.transition is Transition.REST_TO_REST
    assert segment.start == segment.end == robot.target('right', 5)
    at_limit = [_event(-1, 0.0), _event(1, 1.2, right=6)]
    assert plan_arm_segment(robot, at_limit, 'right', ArmContext(5))[1].target_drum == 6


def test_hit_to_rest_stays_on_the_struck_drum(robot):
    events = [_event(0, 0.0, right=3), _event(1, 0.6), _event(2, 2.0, right=2)]
    segment, context = plan_arm_segment(robot, events, 'right', ArmContext(5))
    assert context.transition is Transition.HIT_TO_REST and context.drum == 3
    positions, _ = segment.evaluate([0.0, 0.6])
    np.testing.assert_allclose(positions, np.tile(robot.target('right', 3).position_m, (2, 1)))


def test_open_hihat_uses_the_open_coordinate(robot):
    assert struck_drum(_event(0, 0.0, right=5, closed=False), 'right') == 9
    assert struck_drum(_event(0, 0.0, right=5, closed=True), 'right') == 5
    open_z = robot.target('right', 9).position_m[2]
    assert open_z == pytest.approx(robot.target('right', 5).position_m[2] + 0.03)


def test_targets_at_upcoming_events_follow_the_plan(robot):
    events = [_event(-1, 0.0), _event(0, 0.3, left=1), _event(1, 0.6), _event(2, 0.9, left=4)]
    targets = arm_targets_at_events(robot, events, 'left', ArmContext(1), 3)
    assert len(targets) == 3
    np.testing.assert_allclose(targets[0][0], robot.target('left', 1).position_m)
    np.testing.assert_allclose(targets[2][0], robot.target('left', 4).position_m)
    assert targets[2][1] == pytest.approx(robot.target('left', 4).wrist_rad)
    middle = bezier_path(
        robot.target('left', 1).position_m, robot.target('left', 4).position_m, smoothstep([0.5])
    )
    np.testing.assert_allclose(targets[1][0], middle[0])


def test_unknown_drum_is_a_typed_error(robot):
    with pytest.raises(UnknownDrumError, match='drum id 0'):
        robot.target('right', 0)
    assert math.isclose(
        robot.look_angle_rad(1),
        math.atan2(robot.target('right', 1).position_m[1], robot.target('right', 1).position_m[0]),
    )
