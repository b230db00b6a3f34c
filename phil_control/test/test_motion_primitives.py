"""MOVE / LOOK / POSE / GESTURE steps against upstream's command semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.motion import (
    GestureRequest,
    JointTable,
    LookRequest,
    MotionDefaults,
    MoveRequest,
    PoseRequest,
    Rejection,
    RejectReason,
    build_trajectory,
    resolve_gesture,
    waypoints,
)
from phil_control.core.profiles import Profile, sample_segment
from phil_description.core import default_robot_model

MODEL = default_robot_model()
TABLE = JointTable.from_model(MODEL)
DEFAULTS = MotionDefaults()
NAMES = MODEL.joint_names

# Upstream's gestures, written out by hand: (duration s, {joint: absolute deg}) per step.
WAVE_SWING = [(0.4, {'right_wrist': 25.0}), (0.4, {'right_wrist': -25.0})]
FACTS_GESTURES = {
    'nod': [(1.0, {'head_pitch': 20.0}), (1.0, {'head_pitch': -20.0}), (1.0, {'head_pitch': 0.0})],
    'shake': [(1.0, {'head_yaw': 30.0}), (1.0, {'head_yaw': -30.0}), (1.0, {'head_yaw': 0.0})],
    'wave': [
        (
            3.0,
            {
                'right_shoulder_1': 45.0,
                'right_shoulder_2': 45.0,
                'right_elbow': 90.0,
                'right_wrist': 0.0,
                'head_yaw': -20.0,
                'head_pitch': -5.0,
            },
        ),
        *WAVE_SWING * 3,
        (0.4, {'right_wrist': 0.0}),
    ],
    'hurray': [
        (
            3.0,
            {
                'right_shoulder_1': 60.0,
                'left_shoulder_1': 120.0,
                'right_shoulder_2': 65.0,
                'left_shoulder_2': 65.0,
                'right_elbow': 95.0,
                'left_elbow': 95.0,
                'right_wrist': 0.0,
                'left_wrist': 0.0,
                'head_pitch': -15.0,
            },
        )
    ],
}


def _plan(request, base=None, start_s=10.0):
    steps = waypoints(request, TABLE, MODEL.poses, DEFAULTS)
    assert not isinstance(steps, Rejection), steps
    base = MODEL.poses['ready'] if base is None else base
    return steps, build_trajectory(NAMES, base, start_s, steps)


@pytest.mark.parametrize(
    ('name', 'alias'), [('nod', 'nod'), ('shake', 'shake'), ('wave', 'hi'), ('hurray', 'happy')]
)
def test_gesture_tables_match_facts(name, alias):
    """Step times, absolute targets, untouched joints, profile and rest at every step end."""
    base = MODEL.poses['ready'].copy()
    base[MODEL.joint('head_pitch').index] = math.radians(10.0)  # a non-zero start for the head
    for spelling in (name, alias, alias.upper()):
        steps, trajectory = _plan(GestureRequest(spelling), base)
        table = FACTS_GESTURES[name]
        assert [step.duration_s for step in steps] == [duration for duration, _ in table]
        assert all(step.profile is Profile.COSINE for step in steps)
        assert trajectory.duration_s == pytest.approx(sum(d for d, _ in table), abs=1e-12)
        expected = base.copy()
        time = trajectory.start_s
        for duration, targets in table:
            time += duration
            for joint, degrees in targets.items():
                expected[MODEL.joint(joint).index] = math.radians(degrees)
            positions, velocities = trajectory.sample(time)
            np.testing.assert_allclose(positions[0], expected, atol=1e-12)
            np.testing.assert_allclose(velocities[0], 0.0, atol=1e-9)
        moved = {MODEL.joint(j).index for _, targets in table for j in targets}
        dense, _ = trajectory.sample(np.linspace(trajectory.start_s, trajectory.end_s, 400))
        still = [i for i in range(len(NAMES)) if i not in moved]
        np.testing.assert_allclose(dense[:, still], np.tile(base[still], (400, 1)), atol=1e-12)


def test_gesture_angles_are_absolute_not_offsets():
    """'Relative to last_q_target': the base is the last target, the values are set."""
    base = MODEL.poses['ready'].copy()
    pitch = MODEL.joint('head_pitch').index
    base[pitch] = math.radians(10.0)
    _, trajectory = _plan(GestureRequest('nod'), base)
    first_peak = trajectory.sample(trajectory.start_s + 1.0)[0][0, pitch]
    assert math.degrees(first_peak) == pytest.approx(20.0)  # not 30


def test_unknown_gesture_lists_the_valid_names():
    result = resolve_gesture('dance')
    assert isinstance(result, Rejection) and result.reason is RejectReason.UNKNOWN_GESTURE
    assert all(name in result.detail for name in ('nod', 'shake', 'wave', 'hi', 'hurray', 'happy'))


def test_move_defaults_to_three_seconds_cosine_and_keeps_other_joints():
    elbow = MODEL.joint('right_elbow').index
    steps, trajectory = _plan(MoveRequest({'right_elbow': 1.0, 'left_elbow': 1.2}))
    assert len(steps) == 1 and steps[0].duration_s == 3.0 and steps[0].profile is Profile.COSINE
    end = trajectory.end_state()[0]
    assert end[elbow] == 1.0 and end[MODEL.joint('left_elbow').index] == 1.2
    others = [i for i in range(13) if NAMES[i] not in ('right_elbow', 'left_elbow')]
    np.testing.assert_array_equal(end[others], MODEL.poses['ready'][others])
    steps, _ = _plan(MoveRequest({'right_elbow': 1.0}, 0.5, Profile.QUINTIC))
    assert (steps[0].duration_s, steps[0].profile) == (0.5, Profile.QUINTIC)


def test_look_is_one_second_cosine_on_the_head():
    steps, trajectory = _plan(LookRequest(0.3, -0.2))
    assert steps[0].duration_s == 1.0 and steps[0].profile is Profile.COSINE
    end = trajectory.end_state()[0]
    assert end[MODEL.joint('head_yaw').index] == 0.3
    assert end[MODEL.joint('head_pitch').index] == -0.2


@pytest.mark.parametrize('pose', ['init', 'home', 'ready', 'shutdown'])
def test_pose_is_three_seconds_trapezoidal_to_the_named_pose(pose):
    steps, trajectory = _plan(PoseRequest(pose), base=MODEL.poses['init'])
    assert steps[0].duration_s == 3.0 and steps[0].profile is Profile.TRAPEZOIDAL
    np.testing.assert_array_equal(trajectory.end_state()[0], MODEL.poses[pose])


def test_segments_reproduce_upstreams_5_ms_samples():
    """Sampled at upstream's set-point times the trajectory is upstream's sample sequence."""
    start = MODEL.poses['ready']
    _, trajectory = _plan(PoseRequest('home'), base=start, start_s=2.0)
    times, positions, velocities = sample_segment(
        start, MODEL.poses['home'], 3.0, Profile.TRAPEZOIDAL
    )
    assert times.size == 600
    sampled, sampled_velocities = trajectory.sample(2.0 + times)
    np.testing.assert_allclose(sampled, positions, atol=1e-12)
    np.testing.assert_allclose(sampled_velocities, velocities, atol=1e-9)
    np.testing.assert_array_equal(sampled[-1], MODEL.poses['home'])


@pytest.mark.parametrize(
    ('request_', 'reason', 'words'),
    [
        (MoveRequest({}), RejectReason.MALFORMED, ['no joints']),
        (MoveRequest({'elbow': 1.0}), RejectReason.UNKNOWN_JOINT, ["'elbow'", 'right_elbow']),
        (MoveRequest({'right_elbow': math.nan}), RejectReason.NOT_FINITE, ['right_elbow', 'nan']),
        (
            MoveRequest({'right_elbow': 2.6}),
            RejectReason.OUTSIDE_LIMITS,
            ['right_elbow', '140.10'],
        ),
        (MoveRequest({'right_elbow': 1.0}, 0.0), RejectReason.BAD_DURATION, ['duration_s', '0.0']),
        (MoveRequest({'right_elbow': 1.0}, -1.0), RejectReason.BAD_DURATION, ['-1.0']),
        (MoveRequest({'right_elbow': 1.0}, math.inf), RejectReason.BAD_DURATION, ['inf']),
        (MoveRequest({'right_elbow': 1.0}, 61.0), RejectReason.BAD_DURATION, ['(0, 60]']),
        (LookRequest(math.inf, 0.0), RejectReason.NOT_FINITE, ['head_yaw']),
        (LookRequest(0.0, -1.9), RejectReason.OUTSIDE_LIMITS, ['head_pitch', '-100.00']),
        (LookRequest(0.0, 0.0, math.nan), RejectReason.BAD_DURATION, ['nan']),
        (PoseRequest('sit'), RejectReason.UNKNOWN_POSE, ["'sit'", 'home', 'ready']),
        (GestureRequest('bow'), RejectReason.UNKNOWN_GESTURE, ["'bow'"]),
    ],
)
def test_bad_requests_are_rejected_with_a_reason(request_, reason, words):
    result = waypoints(request_, TABLE, MODEL.poses, DEFAULTS)
    assert isinstance(result, Rejection)
    assert result.reason is reason, result
    assert all(word in str(result) for word in words), str(result)
