"""In-process rclpy test of the trajectory_generator node's goals (own context,
SingleThreadedExecutor: no callback of the node may block): move, look, pose and gesture goals,
bad goals, cancel and ~/halt; its stamps and its parameter checks.

The harness and the model of the played motion are in test_trajectory_generator_support."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_clock_support import SteerableClock  # noqa: E402
from test_trajectory_generator_support import (  # noqa: E402
    MODEL,
    NAMES,
    Played,
    _ns,
    harnesses,
)

from phil_control.trajectory_generator.node import TrajectoryGenerator  # noqa: E402
from phil_msgs.srv import Trigger  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

HALT_DECELERATION = 50.0


@pytest.fixture(scope='module')
def context():
    with ros_test_context() as ctx:
        yield ctx


@pytest.fixture
def harness(context):
    with harnesses(context) as make:
        yield make


def test_move_goal_reaches_the_target_at_the_requested_time(harness):
    h = harness()
    targets = {'right_elbow': 1.2, 'head_yaw': 0.4}
    handle = h.send(
        'move',
        joint_names=list(targets),
        positions_rad=list(targets.values()),
        duration_s=0.6,
        profile='quintic',
    )
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.success and response.result.reason == ''
    assert h.feedback and all(0.0 <= f.feedback.progress <= 1.0 for f in h.feedback)
    assert h.spin_until(lambda: len(h.chunks) >= 2)
    assert not any(msg.replace for msg in h.chunks)
    played = Played(h.chunks)
    assert abs(played.origin_ns - h.now_ns()) < 5e9  # stamped on CLOCK_MONOTONIC
    assert played.end_s - played.start_s == pytest.approx(0.6, abs=1e-6)
    start_positions, start_velocities = played.sample(played.start_s)
    np.testing.assert_allclose(start_positions, MODEL.poses['init'], atol=1e-9)
    np.testing.assert_allclose(start_velocities, 0.0, atol=1e-9)
    end_positions, end_velocities = played.sample(played.start_s + 0.6)
    expected = MODEL.positions(targets, MODEL.poses['init'])
    np.testing.assert_allclose(end_positions, expected, atol=1e-6)
    np.testing.assert_allclose(end_velocities, 0.0, atol=1e-6)
    state = h.states[-1]
    np.testing.assert_allclose(state.position, expected, atol=1e-12)
    assert played.relative(_ns(state.header.stamp)) == pytest.approx(played.end_s, abs=1e-6)


def test_a_motion_from_rest_starts_start_lead_after_it_is_planned(harness):
    # The chunk horizon (publish_lead_s) is long; a goal from rest must not wait for it.
    h = harness(start_lead_s=0.05, publish_lead_s=2.0)
    sent_ns = h.now_ns()
    h.send('look', pan_rad=0.2, tilt_rad=0.1, duration_s=0.3)
    assert h.spin_until(lambda: h.chunks)
    received_ns = h.now_ns()
    start_ns = _ns(h.chunks[0].trajectory.header.stamp)
    assert start_ns - sent_ns >= 0.05e9  # planned after the goal was sent
    assert start_ns - received_ns <= 0.05e9  # published at once, start_lead_s ahead of its start


def test_cancel_halts_without_a_jump_and_with_bounded_deceleration(harness):
    clock = SteerableClock()
    h = harness(clock_ns=clock, publish_lead_s=0.1)  # a halt starts 0.1 s ahead
    with clock.frozen():  # the cancel lands half way, however slow the test runs
        handle = h.send(
            'move',
            joint_names=['right_elbow', 'head_yaw'],
            positions_rad=[0.2, 1.2],
            duration_s=1.0,
        )
        assert h.spin_until(lambda: h.chunks)
        first = Played(h.chunks)
        clock.stall(first.start_s + 0.5 - first.relative(h.now_ns()))
        cancel = handle.cancel_goal_async()
        assert h.spin_until(cancel.done)
        assert h.spin_until(lambda: any(msg.replace for msg in h.chunks))  # halted
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_CANCELED
    assert not response.result.success and 'cancel' in response.result.reason
    h.spin_for(0.2)
    replaced = [i for i, msg in enumerate(h.chunks) if msg.replace]
    assert len(replaced) == 1
    played = Played(h.chunks)
    halt_s = played.relative(_ns(h.chunks[replaced[0]].trajectory.header.stamp))
    assert halt_s == pytest.approx(first.start_s + 0.5 + 0.1, abs=1e-6)
    origin = played.origin_ns
    assert all(Played([msg], origin).start_s >= halt_s for msg in h.chunks[replaced[0] :])
    before = Played(h.chunks[: replaced[0]], origin).sample(halt_s)
    after = played.sample(halt_s)
    np.testing.assert_allclose(after[0], before[0], atol=1e-5)  # no position jump
    np.testing.assert_allclose(after[1], before[1], atol=1e-3)  # no velocity jump
    assert np.abs(before[1]).max() > 0.5  # it really was moving
    times = np.linspace(halt_s, played.end_s, 200)
    velocities = np.array([played.sample(t)[1] for t in times])
    deceleration = np.abs(np.diff(velocities, axis=0)) / np.diff(times)[:, np.newaxis]
    assert deceleration.max() <= HALT_DECELERATION * 1.01
    np.testing.assert_allclose(played.sample(played.end_s)[1], 0.0, atol=1e-9)
    stopped = played.sample(played.end_s)[0]
    assert abs(stopped[NAMES.index('head_yaw')]) < 1.2  # stopped short of the target
    np.testing.assert_allclose(h.states[-1].position, stopped, atol=1e-6)


@pytest.mark.parametrize(
    ('fields', 'words'),
    [
        ({'joint_names': ['elbow'], 'positions_rad': [1.0]}, ["'elbow'", 'right_elbow']),
        ({'joint_names': ['right_elbow'], 'positions_rad': [2.6]}, ['right_elbow', 'outside']),
        (
            {'joint_names': ['head_yaw'], 'positions_rad': [1.0], 'duration_s': 0.05},
            ['head_yaw', 'rad/s', 'shortest allowed duration'],
        ),
        ({'joint_names': ['left_wrist'], 'positions_rad': [math.nan]}, ['left_wrist', 'nan']),
        (
            {'joint_names': ['left_wrist'], 'positions_rad': [0.1], 'duration_s': -1.0},
            ['duration_s', '-1.0'],
        ),
        (
            {'joint_names': ['left_wrist'], 'positions_rad': [0.1], 'profile': 'linear'},
            ['linear', 'cosine'],
        ),
    ],
)
def test_bad_move_goals_are_aborted_with_the_reason_and_publish_nothing(harness, fields, words):
    h = harness()
    response = h.result(h.send('move', **fields))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert not response.result.success
    assert all(word in response.result.reason for word in words), response.result.reason
    h.spin_for(0.3)
    assert h.chunks == []
    assert len(h.states) == 1  # only the initial latched state


def test_look_pose_and_gesture_goals_queue_back_to_back(harness):
    clock = SteerableClock()
    h = harness(clock_ns=clock)
    goals = []
    with clock.frozen():  # sent at one instant: a slow test does not leave gaps between them
        for name, fields in (
            ('look', {'pan_rad': 0.3, 'tilt_rad': -0.2, 'duration_s': 0.3}),
            ('pose', {'pose': 'ready', 'duration_s': 0.5}),
            ('gesture', {'gesture': 'nod'}),
        ):
            count = len(h.states)
            goals.append(h.send(name, **fields))
            assert h.spin_until(lambda count=count: len(h.states) > count)  # in this order
    results = [h.result(goal, timeout_s=15.0) for goal in goals]
    assert [r.status for r in results] == [GoalStatus.STATUS_SUCCEEDED] * 3
    h.spin_for(0.1)
    played = Played(h.chunks)
    assert played.end_s - played.start_s == pytest.approx(0.3 + 0.5 + 3.0, abs=1e-6)
    look_end = played.sample(played.start_s + 0.3)[0]
    assert look_end[NAMES.index('head_yaw')] == pytest.approx(0.3, abs=1e-6)
    assert look_end[NAMES.index('head_pitch')] == pytest.approx(-0.2, abs=1e-6)
    pose_end = played.sample(played.start_s + 0.8)[0]
    np.testing.assert_allclose(pose_end, MODEL.poses['ready'], atol=1e-6)
    nod_peak = played.sample(played.start_s + 1.8)[0][NAMES.index('head_pitch')]
    assert math.degrees(nod_peak) == pytest.approx(20.0, abs=1e-4)
    assert played.sample(played.end_s)[0][NAMES.index('head_pitch')] == pytest.approx(0.0)
    unknown = h.result(h.send('gesture', gesture='dance'))
    assert unknown.status == GoalStatus.STATUS_ABORTED and 'dance' in unknown.result.reason
    unknown_pose = h.result(h.send('pose', pose='sit'))
    assert 'sit' in unknown_pose.result.reason and 'ready' in unknown_pose.result.reason


def test_halt_service_aborts_the_goal_and_sends_one_replace_chunk(harness):
    h = harness(initial_positions_rad=MODEL.poses['ready'].tolist())
    handle = h.send('gesture', gesture='shake')
    assert h.spin_until(lambda: h.chunks)
    future = h.halt.call_async(Trigger.Request())
    assert h.spin_until(future.done) and future.result().accepted
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'halted by ~/halt' in response.result.reason
    h.spin_for(0.2)
    assert sum(msg.replace for msg in h.chunks) == 1
    played = Played(h.chunks)
    assert played.sample(played.start_s)[0] == pytest.approx(MODEL.poses['ready'])
    np.testing.assert_allclose(played.sample(played.end_s)[1], 0.0, atol=1e-9)


def test_stamps_follow_the_ros_clock(harness):
    h = harness()
    stamp = _ns(h.states[-1].header.stamp)
    assert abs(stamp - h.probe.get_clock().now().nanoseconds) < 5e9


def test_bad_parameters_stop_start_up(context):
    for name, value in (
        ('publish_lead_s', -0.1),
        ('start_lead_s', 0.2),  # more than publish_lead_s
        ('point_spacing_s', 0.0),
        ('max_active_goals', 100),
        ('initial_positions_rad', [0.0, 1.0]),
        ('stamp_clock', 'wall'),
    ):
        with pytest.raises(ValueError, match=name):
            TrajectoryGenerator(
                context=context, parameter_overrides=[Parameter(name, value=value)]
            )
