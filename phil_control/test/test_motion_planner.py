"""MotionPlanner: seamless joins, queueing, halts, and chunks from other nodes."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from phil_control.core.motion import (
    Chunk,
    ChunkingConfig,
    ContinuityTolerance,
    GestureRequest,
    LookRequest,
    MotionPlanner,
    MoveRequest,
    PlannedMotion,
    PoseRequest,
    Rejection,
    RejectReason,
    chunk_trajectory,
)
from phil_description.core import default_robot_model

MODEL = default_robot_model()
ELBOW = MODEL.joint('right_elbow').index
YAW = MODEL.joint('head_yaw').index


def _planner(**options) -> MotionPlanner:
    return MotionPlanner(MODEL, **options)


def _ok(result) -> PlannedMotion:
    assert isinstance(result, PlannedMotion), result
    return result


def test_starts_from_the_init_pose_or_the_given_state():
    planner = _planner()
    np.testing.assert_array_equal(planner.state.positions_rad, MODEL.poses['init'])
    assert not planner.has_commanded
    assert planner.set_initial_state(MODEL.poses['home'], 5.0)
    assert planner.state.time_s == 5.0
    np.testing.assert_array_equal(planner.sample(7.0)[0][0], MODEL.poses['home'])
    assert not planner.set_initial_state(np.full(13, math.nan), 6.0)
    _ok(planner.submit(LookRequest(0.1, 0.1), 10.0))
    assert planner.has_commanded
    assert not planner.set_initial_state(MODEL.poses['init'], 20.0)
    given = _planner(initial_positions_rad=MODEL.poses['ready'], initial_time_s=3.0)
    np.testing.assert_array_equal(given.state.positions_rad, MODEL.poses['ready'])


def test_consecutive_motions_join_and_queue_behind_each_other():
    planner = _planner()
    first = _ok(planner.submit(MoveRequest({'right_elbow': 1.0}, 1.0), 10.0))
    assert (first.motion_start_s, first.end_s) == (10.0, 11.0)
    # Accepted while the first is queued: waits for it, even if asked to start earlier.
    second = _ok(planner.submit(GestureRequest('nod'), 10.5))
    assert (second.motion_start_s, second.end_s) == (11.0, 14.0)
    np.testing.assert_array_equal(
        second.trajectory.start_state()[0], first.trajectory.end_state()[0]
    )
    assert planner.state.time_s == 14.0
    # Requested later than the queue end: the joints hold in between.
    third = _ok(planner.submit(LookRequest(0.2, 0.0, 0.5), 20.0))
    assert third.motion_start_s == 20.0
    times = np.linspace(10.0, 20.5, 2101)
    positions, velocities = planner.sample(times)
    steps = np.abs(np.diff(positions, axis=0)).max()
    assert steps < 0.01  # no jump anywhere
    np.testing.assert_array_equal(positions[-1], planner.state.positions_rad)
    assert planner.state.positions_rad[YAW] == 0.2
    assert planner.state.positions_rad[ELBOW] == 1.0


def test_plan_does_not_commit_and_rejections_change_nothing():
    planner = _planner()
    planned = _ok(planner.plan(PoseRequest('home'), 1.0))
    assert not planner.has_commanded and planner.state.time_s == 0.0
    planner.commit(planned)
    state = planner.state
    fast = planner.submit(MoveRequest({'head_yaw': 1.5}, 0.05), 0.0)
    assert isinstance(fast, Rejection) and fast.reason is RejectReason.TOO_FAST
    assert 'head_yaw' in fast.detail and 'allowed 8.000 rad/s' in fast.detail
    assert planner.state is state
    with pytest.raises(ValueError, match='stale'):
        planner.commit(planned)


def test_too_fast_names_the_shortest_allowed_duration():
    planner = _planner()
    result = planner.submit(MoveRequest({'head_yaw': 1.0}, 0.1), 0.0)
    assert isinstance(result, Rejection)
    shortest = math.pi / 2 * 1.0 / 8.0
    assert f'{shortest:.3f} s' in result.detail
    _ok(planner.submit(MoveRequest({'head_yaw': 1.0}, shortest * (1 + 1e-12)), 0.0))


def test_halt_stops_from_the_commanded_sample_without_a_jump():
    planner = _planner(halt_deceleration_rad_s2=20.0)
    _ok(planner.submit(MoveRequest({'right_elbow': 2.0, 'head_yaw': 1.0}, 1.0), 10.0))
    _ok(planner.submit(GestureRequest('shake'), 0.0))
    before = planner.sample(10.5)
    halt = planner.halt_at(10.5)
    assert halt.trajectory.start_s == 10.5
    np.testing.assert_allclose(halt.trajectory.start_state()[0], before[0][0], atol=1e-12)
    np.testing.assert_allclose(halt.trajectory.start_state()[1], before[1][0], atol=1e-12)
    assert planner.state.time_s == pytest.approx(10.5 + halt.duration_s)
    np.testing.assert_array_equal(planner.state.velocities_rad_s, 0.0)
    times = np.linspace(10.0, 12.0, 4001)
    positions, velocities = planner.sample(times)
    assert np.abs(np.diff(positions, axis=0)).max() < 0.01
    accelerations = np.diff(velocities, axis=0) / np.diff(times)[:, np.newaxis]
    after = times[1:] > 10.5 + 1e-3
    assert np.abs(accelerations[after]).max() <= 20.0 * (1 + 1e-6)
    # The shake was dropped: a new request starts from the halted state.
    nxt = _ok(planner.submit(LookRequest(0.0, 0.0, 1.0), 0.0))
    assert nxt.motion_start_s == pytest.approx(planner.state.time_s - 1.0)


def test_a_request_after_a_moving_end_is_preceded_by_a_stop():
    planner = _planner()
    moving = Chunk(
        ('head_yaw',),
        1.0,
        np.array([0.0, 0.5]),
        np.array([[0.0], [0.25]]),
        np.array([[0.0], [1.0]]),
    )
    assert not isinstance(planner.accept_chunk(moving, 0.0), Rejection)
    planned = _ok(planner.submit(LookRequest(0.5, 0.0, 1.0), 0.0))
    start_positions, start_velocities = planned.trajectory.start_state()
    assert planned.trajectory.start_s == 1.5
    assert start_velocities[YAW] == pytest.approx(1.0) and start_positions[YAW] == 0.25
    assert planned.motion_start_s > 1.5
    assert planned.trajectory.end_state()[0][YAW] == 0.5


def test_a_moving_end_already_past_needs_no_stop():
    planner = _planner()
    moving = Chunk(
        ('head_yaw',),
        1.0,
        np.array([0.0, 0.5]),
        np.array([[0.0], [0.25]]),
        np.array([[0.0], [1.0]]),
    )
    assert not isinstance(planner.accept_chunk(moving, 0.0), Rejection)
    planned = _ok(planner.submit(LookRequest(0.5, 0.0, 1.0), 3.0))
    assert planned.trajectory.start_s == planned.motion_start_s == 3.0
    positions, velocities = planned.trajectory.start_state()
    assert positions[YAW] == 0.25 and velocities[YAW] == 0.0
    np.testing.assert_array_equal(planner.sample(2.0)[1][0], 0.0)  # held at rest in between


def _score_chunk(planner: MotionPlanner, at_s: float, **changes) -> Chunk:
    """A chunk from rest at the commanded positions at at_s (built with the core's own tools)."""
    other = MotionPlanner(MODEL, initial_positions_rad=planner.sample(at_s)[0][0])
    planned = _ok(other.submit(MoveRequest({'right_elbow': 1.2}, 0.4), at_s))
    chunk = chunk_trajectory(planned.trajectory, ChunkingConfig())[0]
    return dataclasses.replace(chunk, **changes)


def test_chunks_continuing_the_state_are_queued():
    planner = _planner()
    chunk = _score_chunk(planner, 5.0)
    trajectory = planner.accept_chunk(chunk, now_s=4.9)
    assert not isinstance(trajectory, Rejection), trajectory
    assert planner.state.time_s == pytest.approx(5.4)
    assert planner.state.positions_rad[ELBOW] == pytest.approx(1.2)
    follow = _score_chunk(planner, 5.4)
    assert not isinstance(planner.accept_chunk(follow, 5.0), Rejection)


@pytest.mark.parametrize(
    ('changes', 'now', 'reason', 'words'),
    [
        ({'start_s': 4.0}, 4.5, RejectReason.LATE, ['past']),
        ({}, 4.0, RejectReason.OVERLAP, ['queued motion ends']),
        ({'positions_rad': 'shift'}, 4.0, RejectReason.DISCONTINUOUS, ['right_elbow', 'position']),
        ({'velocities_rad_s': 'kick'}, 4.0, RejectReason.DISCONTINUOUS, ['velocity']),
    ],
)
def test_chunks_that_do_not_continue_are_rejected(changes, now, reason, words):
    planner = _planner()
    _ok(planner.submit(LookRequest(0.1, 0.0, 1.0), 4.0))  # queued until 5.0
    base = _score_chunk(planner, 5.0)
    if changes.get('positions_rad') == 'shift':
        changes['positions_rad'] = base.positions_rad + np.eye(13)[ELBOW] * 0.01
    if changes.get('velocities_rad_s') == 'kick':
        changes['velocities_rad_s'] = base.velocities_rad_s + np.eye(13)[ELBOW] * 0.5
    if reason is RejectReason.OVERLAP:
        changes['start_s'] = 4.5
    state = planner.state
    result = planner.accept_chunk(_score_chunk(planner, 5.0, **changes), now)
    assert isinstance(result, Rejection) and result.reason is reason, result
    assert all(word in str(result) for word in words), str(result)
    assert planner.state is state


def test_a_replace_chunk_drops_queued_motion_from_its_start():
    planner = _planner()
    _ok(planner.submit(LookRequest(0.5, 0.0, 1.0), 4.0))  # at rest at 5.0
    _ok(planner.submit(GestureRequest('shake'), 4.0))  # 5.0 .. 8.0
    chunk = _score_chunk(planner, 5.0, replace=True)
    assert not isinstance(planner.accept_chunk(chunk, 4.5), Rejection)
    assert planner.state.time_s == pytest.approx(5.4)
    assert planner.sample(6.0)[0][0][YAW] == 0.5  # the shake is gone


def test_prune_keeps_the_present_and_the_end_state():
    planner = _planner()
    _ok(planner.submit(MoveRequest({'right_elbow': 1.0}, 1.0), 1.0))
    _ok(planner.submit(MoveRequest({'right_elbow': 0.5}, 1.0), 1.0))
    expected = planner.sample([2.5, 5.0])
    planner.prune(2.2)
    np.testing.assert_array_equal(planner.sample([2.5, 5.0])[0], expected[0])
    planner.prune(10.0)
    np.testing.assert_array_equal(planner.sample(12.0)[0][0], planner.state.positions_rad)
    assert planner.state.positions_rad[ELBOW] == 0.5


def test_continuity_tolerance_is_configurable():
    planner = _planner(tolerance=ContinuityTolerance(position_rad=0.05))
    base = _score_chunk(planner, 5.0)
    shifted = _score_chunk(
        planner, 5.0, positions_rad=base.positions_rad + np.eye(13)[ELBOW] * 0.01
    )
    assert not isinstance(planner.accept_chunk(shifted, 4.0), Rejection)
