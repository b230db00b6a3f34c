"""The trajectory_generator's goals as the motion core's requests, and its commanded state as
``sensor_msgs/JointState``. Conversions of goals never raise: a malformed goal becomes a
``Rejection``."""

from __future__ import annotations

from collections.abc import Sequence

from sensor_msgs.msg import JointState

from phil_control.conversions import TimeBase
from phil_control.core.motion import (
    CommandedState,
    GestureRequest,
    LookRequest,
    MoveRequest,
    PoseRequest,
    Rejection,
    RejectReason,
    parse_profile,
)


def _optional_duration(duration_s: float) -> float | None:
    """Goal durations: 0 means the default (None); anything else is checked by the core."""
    return None if duration_s == 0.0 else float(duration_s)


def move_request(goal) -> MoveRequest | Rejection:
    """``Move.Goal`` -> ``MoveRequest``: one target per name, no name twice, known profile."""
    names, positions = list(goal.joint_names), list(goal.positions_rad)
    if len(names) != len(positions):
        return Rejection(
            RejectReason.MALFORMED,
            f'{len(names)} joint_names but {len(positions)} positions_rad',
        )
    for name in names:
        if names.count(name) > 1:
            return Rejection(RejectReason.MALFORMED, f'joint {name!r} is named twice', name)
    try:
        profile = parse_profile(goal.profile)
    except ValueError as error:
        return Rejection(RejectReason.UNKNOWN_PROFILE, str(error))
    return MoveRequest(
        dict(zip(names, (float(p) for p in positions), strict=True)),
        _optional_duration(goal.duration_s),
        profile,
    )


def look_request(goal) -> LookRequest:
    """``Look.Goal`` -> ``LookRequest``."""
    return LookRequest(
        float(goal.pan_rad), float(goal.tilt_rad), _optional_duration(goal.duration_s)
    )


def pose_request(goal) -> PoseRequest:
    """``Pose.Goal`` -> ``PoseRequest``."""
    return PoseRequest(goal.pose, _optional_duration(goal.duration_s))


def gesture_request(goal) -> GestureRequest:
    """``Gesture.Goal`` -> ``GestureRequest``."""
    return GestureRequest(goal.gesture)


def joint_state_msg(names: Sequence[str], state: CommandedState, timebase: TimeBase) -> JointState:
    """The commanded state as ``sensor_msgs/JointState``, stamped with the time it is reached."""
    msg = JointState()
    msg.header.stamp = timebase.stamp(state.time_s)
    msg.name = list(names)
    msg.position = state.positions_rad.tolist()
    msg.velocity = state.velocities_rad_s.tolist()
    return msg
