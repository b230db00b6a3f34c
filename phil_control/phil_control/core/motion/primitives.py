"""MOVE, LOOK, POSE and GESTURE as sequences of rest-to-rest steps, as upstream's.

Every primitive starts from a copy of the last commanded joint vector and changes only the joints
it names (upstream's ``last_q_target``); each step is one rest-to-rest profile segment.

Gesture angles are absolute joint angles. Gestures "relative to last_q_target, only the
listed joints change" could be read as offsets; upstream's
``behavior_planner.cpp`` (``handle_gesture``) shows the meaning: the copy of ``last_q_target`` is
the base and the listed joints are *set* (``q[HEAD_PITCH] = deg_to_rad(20.0)``), so a nod from a
head pitched 10 deg goes to +20 deg, -20 deg, 0 deg, not to 30, -10, 10. Every gesture step uses
upstream's default COSINE profile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from phil_control.core.motion.requests import (
    GestureRequest,
    LookRequest,
    MotionDefaults,
    MotionRequest,
    MoveRequest,
    PoseRequest,
)
from phil_control.core.motion.trajectory import Trajectory
from phil_control.core.motion.validation import (
    JointTable,
    Rejection,
    RejectReason,
    check_duration,
    check_targets,
)
from phil_control.core.profiles import Profile, profile_segment


@dataclass(frozen=True)
class GestureStep:
    """One step of a gesture table.

    Attributes:
        targets_deg: Joint name -> absolute joint angle, deg.
        duration_s: Step duration, s.
    """

    targets_deg: Mapping[str, float]
    duration_s: float


def _step(duration_s: float, **targets_deg: float) -> GestureStep:
    return GestureStep(MappingProxyType(targets_deg), duration_s)


_WAVE_RAISE = _step(
    3.0,
    right_shoulder_1=45.0,
    right_shoulder_2=45.0,
    right_elbow=90.0,
    right_wrist=0.0,
    head_yaw=-20.0,
    head_pitch=-5.0,
)
_WAVE_SWING = (_step(0.4, right_wrist=25.0), _step(0.4, right_wrist=-25.0))

#: Upstream's gestures; angles absolute, see the module docstring.
GESTURES: Mapping[str, tuple[GestureStep, ...]] = MappingProxyType(
    {
        'nod': (
            _step(1.0, head_pitch=20.0),
            _step(1.0, head_pitch=-20.0),
            _step(1.0, head_pitch=0.0),
        ),
        'shake': (
            _step(1.0, head_yaw=30.0),
            _step(1.0, head_yaw=-30.0),
            _step(1.0, head_yaw=0.0),
        ),
        # Raise the right arm, swing the wrist three times, centre it; the arm stays up.
        'wave': (_WAVE_RAISE, *(_WAVE_SWING * 3), _step(0.4, right_wrist=0.0)),
        # Both arms up; stays.
        'hurray': (
            _step(
                3.0,
                right_shoulder_1=60.0,
                left_shoulder_1=120.0,
                right_shoulder_2=65.0,
                left_shoulder_2=65.0,
                right_elbow=95.0,
                left_elbow=95.0,
                right_wrist=0.0,
                left_wrist=0.0,
                head_pitch=-15.0,
            ),
        ),
    }
)
#: Other names upstream accepts for the same gestures.
GESTURE_ALIASES: Mapping[str, str] = MappingProxyType({'hi': 'wave', 'happy': 'hurray'})


@dataclass(frozen=True)
class Waypoint:
    """One rest-to-rest step of a primitive.

    Attributes:
        targets: (joint index, absolute target rad) for the joints this step sets.
        duration_s: Step duration, s.
        profile: Time profile.
        label: What the step is, for messages (``'MOVE'``, ``'wave step 2'``).
    """

    targets: tuple[tuple[int, float], ...]
    duration_s: float
    profile: Profile
    label: str


def resolve_gesture(name: str) -> str | Rejection:
    """Canonical gesture name for ``name`` (case-insensitive, aliases resolved)."""
    key = name.strip().lower()
    key = GESTURE_ALIASES.get(key, key)
    if key in GESTURES:
        return key
    valid = sorted([*GESTURES, *GESTURE_ALIASES])
    return Rejection(
        RejectReason.UNKNOWN_GESTURE, f'unknown gesture {name!r}; valid: {", ".join(valid)}'
    )


def waypoints(
    request: MotionRequest,
    table: JointTable,
    poses: Mapping[str, np.ndarray],
    defaults: MotionDefaults,
) -> list[Waypoint] | Rejection:
    """Validate a request and turn it into steps.

    Checks: known joints/pose/gesture, finite numbers, duration in (0, max], profile type, and
    every target inside the hard limits. Speeds are checked on the planned segments.

    Args:
        request: The request.
        table: Joint names and limits.
        poses: Pose name -> (J,) joint vector, rad.
        defaults: Default durations and profiles.

    Returns:
        The steps, or the first problem found.
    """
    if isinstance(request, MoveRequest):
        steps = _move(request, table, defaults)
    elif isinstance(request, LookRequest):
        steps = _look(request, table, defaults)
    elif isinstance(request, PoseRequest):
        steps = _pose(request, table, poses, defaults)
    elif isinstance(request, GestureRequest):
        steps = _gesture(request, table)
    else:
        return Rejection(RejectReason.MALFORMED, f'not a motion request: {request!r}')
    if isinstance(steps, Rejection):
        return steps
    for step in steps:
        problem = check_targets(table, step.targets)
        if problem is not None:
            return problem
    return steps


def build_trajectory(
    joint_names: Sequence[str], base_rad: np.ndarray, start_s: float, steps: Sequence[Waypoint]
) -> Trajectory:
    """Place the steps one after the other from ``start_s``, starting at ``base_rad``."""
    segments = []
    current = np.asarray(base_rad, dtype=float).copy()
    for step in steps:
        target = current.copy()
        for index, value in step.targets:
            target[index] = value
        segments.append(profile_segment(current, target, step.duration_s, step.profile))
        current = target
    return Trajectory.from_segments(joint_names, start_s, segments)


def _duration(value: float | None, default: float, defaults: MotionDefaults) -> float | Rejection:
    if value is None:
        return default
    problem = check_duration(value, defaults.max_duration_s)
    return problem if problem is not None else float(value)


def _move(
    request: MoveRequest, table: JointTable, defaults: MotionDefaults
) -> list[Waypoint] | Rejection:
    if not request.targets_rad:
        return Rejection(RejectReason.MALFORMED, 'MOVE names no joints')
    targets = []
    for name, value in request.targets_rad.items():
        index = table.index(name)
        if isinstance(index, Rejection):
            return index
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
            return Rejection(
                RejectReason.MALFORMED, f'{name} target {value!r} is not a number', name
            )
        targets.append((index, float(value)))
    duration = _duration(request.duration_s, defaults.move_duration_s, defaults)
    if isinstance(duration, Rejection):
        return duration
    profile = defaults.move_profile if request.profile is None else request.profile
    if not isinstance(profile, Profile):
        return Rejection(RejectReason.UNKNOWN_PROFILE, f'profile {profile!r} is not a Profile')
    return [Waypoint(tuple(targets), duration, profile, 'MOVE')]


def _look(
    request: LookRequest, table: JointTable, defaults: MotionDefaults
) -> list[Waypoint] | Rejection:
    duration = _duration(request.duration_s, defaults.look_duration_s, defaults)
    if isinstance(duration, Rejection):
        return duration
    targets = (
        (table.names.index('head_yaw'), float(request.pan_rad)),
        (table.names.index('head_pitch'), float(request.tilt_rad)),
    )
    return [Waypoint(targets, duration, defaults.look_profile, 'LOOK')]


def _pose(
    request: PoseRequest,
    table: JointTable,
    poses: Mapping[str, np.ndarray],
    defaults: MotionDefaults,
) -> list[Waypoint] | Rejection:
    if request.pose not in poses:
        return Rejection(
            RejectReason.UNKNOWN_POSE,
            f'unknown pose {request.pose!r}; valid poses: {", ".join(sorted(poses))}',
        )
    duration = _duration(request.duration_s, defaults.pose_duration_s, defaults)
    if isinstance(duration, Rejection):
        return duration
    targets = tuple((index, float(value)) for index, value in enumerate(poses[request.pose]))
    return [Waypoint(targets, duration, defaults.pose_profile, f'POSE {request.pose}')]


def _gesture(request: GestureRequest, table: JointTable) -> list[Waypoint] | Rejection:
    name = resolve_gesture(request.gesture)
    if isinstance(name, Rejection):
        return name
    steps = []
    for number, step in enumerate(GESTURES[name], start=1):
        targets = tuple(
            (table.names.index(joint), math.radians(degrees))
            for joint, degrees in step.targets_deg.items()
        )
        steps.append(Waypoint(targets, step.duration_s, Profile.COSINE, f'{name} step {number}'))
    return steps
