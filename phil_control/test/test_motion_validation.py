"""Validation of incoming chunks, durations, profiles and IK failures; the core is ROS-free."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest

from phil_control.core.kinematics import IkFailure, IkFailureReason
from phil_control.core.motion import (
    Chunk,
    JointTable,
    MotionDefaults,
    Rejection,
    RejectReason,
    check_chunk,
    parse_profile,
    rejection_from_ik,
)
from phil_control.core.motion.validation import check_duration
from phil_control.core.profiles import Profile
from phil_description.core import default_robot_model

MODEL = default_robot_model()
TABLE = JointTable.from_model(MODEL)
NAMES = ('right_wrist', 'head_yaw')


def _chunk(**changes) -> Chunk:
    chunk = Chunk(
        NAMES,
        2.0,
        np.array([0.0, 0.02, 0.04]),
        np.array([[0.0, 0.0], [0.01, 0.02], [0.03, 0.05]]),
        np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]]),
    )
    return dataclasses.replace(chunk, **changes)


def test_a_good_chunk_passes():
    assert check_chunk(TABLE, _chunk()) is None
    assert check_chunk(TABLE, _chunk(control_modes=(1, 0))) is None


@pytest.mark.parametrize(
    ('changes', 'reason', 'words'),
    [
        ({'joint_names': ()}, RejectReason.MALFORMED, ['no joints']),
        ({'joint_names': ('right_wrist', 'neck')}, RejectReason.UNKNOWN_JOINT, ["'neck'"]),
        ({'joint_names': ('head_yaw', 'head_yaw')}, RejectReason.MALFORMED, ['twice']),
        ({'times_from_start_s': np.array([0.0])}, RejectReason.MALFORMED, ['2 points']),
        ({'positions_rad': np.zeros((3, 3))}, RejectReason.MALFORMED, ['shape']),
        ({'velocities_rad_s': None}, RejectReason.MALFORMED, ['velocities are required']),
        ({'control_modes': (0,)}, RejectReason.MALFORMED, ['control_modes']),
        ({'control_modes': (0, 7)}, RejectReason.MALFORMED, ['control_modes']),
        ({'start_s': math.nan}, RejectReason.NOT_FINITE, ['start']),
        ({'times_from_start_s': np.array([0.01, 0.02, 0.04])}, RejectReason.MALFORMED, ['at 0']),
        (
            {'times_from_start_s': np.array([0.0, 0.02, 0.02])},
            RejectReason.MALFORMED,
            ['increase'],
        ),
        ('nan position', RejectReason.NOT_FINITE, ['head_yaw', 'position', 'point 1']),
        ('inf velocity', RejectReason.NOT_FINITE, ['right_wrist', 'velocity']),
        ('past limit', RejectReason.OUTSIDE_LIMITS, ['head_yaw', 'point 2', '90.00']),
        ('fast point', RejectReason.TOO_FAST, ['right_wrist', 'velocity', '31.000', '30.000']),
        ('fast mean', RejectReason.TOO_FAST, ['head_yaw', 'mean speed', '8.000']),
    ],
)
def test_bad_chunks_are_rejected_with_a_reason(changes, reason, words):
    chunk = _chunk()
    if changes == 'nan position':
        chunk.positions_rad[1, 1] = math.nan
    elif changes == 'inf velocity':
        chunk.velocities_rad_s[2, 0] = math.inf
    elif changes == 'past limit':
        chunk.positions_rad[2, 1] = 1.6
    elif changes == 'fast point':
        chunk.velocities_rad_s[1, 0] = 31.0
    elif changes == 'fast mean':
        chunk.positions_rad[2, 1] = 0.2  # 0.18 rad in 20 ms
    else:
        chunk = _chunk(**changes)
    result = check_chunk(TABLE, chunk)
    assert isinstance(result, Rejection) and result.reason is reason, result
    assert all(word in str(result) for word in words), str(result)


@pytest.mark.parametrize('value', [0.0, -0.1, math.nan, math.inf, 61.0, True, '1'])
def test_bad_durations(value):
    result = check_duration(value, 60.0)
    assert isinstance(result, Rejection) and result.reason is RejectReason.BAD_DURATION
    assert check_duration(60.0, 60.0) is None


def test_profiles_parse_by_name():
    assert parse_profile('') is None
    assert parse_profile(' Trapezoidal ') is Profile.TRAPEZOIDAL
    with pytest.raises(ValueError, match='cosine, cubic, quintic, trapezoidal'):
        parse_profile('linear')


def test_defaults_are_upstreams_and_validated():
    defaults = MotionDefaults()
    assert (defaults.move_duration_s, defaults.look_duration_s, defaults.pose_duration_s) == (
        3.0,
        1.0,
        3.0,
    )
    assert defaults.pose_profile is Profile.TRAPEZOIDAL and defaults.move_profile is Profile.COSINE
    with pytest.raises(ValueError, match='look_duration_s'):
        MotionDefaults(look_duration_s=0.0)
    with pytest.raises(ValueError, match='exceeds'):
        MotionDefaults(move_duration_s=100.0)


def test_ik_failures_become_typed_rejections():
    failure = IkFailure(IkFailureReason.UNREACHABLE, 'right_elbow', 'right arm cannot reach')
    result = rejection_from_ik(failure)
    assert (result.reason, result.joint) == (RejectReason.IK_FAILURE, 'right_elbow')
    assert 'unreachable' in str(result) and 'cannot reach' in str(result)
    limit = rejection_from_ik(IkFailure(IkFailureReason.JOINT_LIMIT, 'left_wrist', 'x'))
    assert limit.reason is RejectReason.OUTSIDE_LIMITS


BLOCK_ROS = """
import sys
for name in ('rclpy', 'std_msgs', 'sensor_msgs', 'trajectory_msgs', 'phil_msgs'):
    sys.modules[name] = None
import phil_control.core.motion as motion
from phil_control.core.kinematics import model_adapter
from phil_description.core import default_robot_model
planner = motion.MotionPlanner(default_robot_model())
assert isinstance(planner.submit(motion.GestureRequest('nod'), 0.0), motion.PlannedMotion)
print('ok')
"""


def test_motion_core_imports_without_ros():
    result = subprocess.run(
        [sys.executable, '-c', BLOCK_ROS], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith('ok')
