"""Translate ROS messages and parameters to and from the motion core's plain types.

Core times are seconds since an epoch chosen by the node (its clock at start-up), so they stay
small and keep full float precision; ``TimeBase`` converts them to and from absolute stamps.
Conversions of requests never raise: a malformed message becomes a ``Rejection``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Duration, Time
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from phil_control.core.motion import (
    Chunk,
    ChunkingConfig,
    CommandedState,
    ContinuityTolerance,
    GestureRequest,
    LookRequest,
    MotionDefaults,
    MoveRequest,
    PoseRequest,
    Rejection,
    RejectReason,
    parse_profile,
)
from phil_msgs.msg import MotorStates, TrajectoryChunk

_NS_PER_S = 1_000_000_000
#: Clocks a stamp can be on: the robot's CLOCK_MONOTONIC (one clock for every process, the bus
#: loop's) or the node's ROS clock.
STAMP_CLOCKS = ('monotonic', 'ros')
#: Most goals the trajectory_generator keeps queued or moving at once (parameter bound).
MAX_ACTIVE_GOALS_LIMIT = 12


class TimeBase:
    """Absolute robot-clock nanoseconds <-> core seconds since ``epoch_ns``.

    Args:
        epoch_ns: The clock reading that is core time 0, ns.
    """

    def __init__(self, epoch_ns: int) -> None:
        self.epoch_ns = int(epoch_ns)

    def to_seconds(self, nanoseconds: int) -> float:
        """Core seconds of an absolute time in ns."""
        return (int(nanoseconds) - self.epoch_ns) / _NS_PER_S

    def to_nanoseconds(self, seconds: float) -> int:
        """Absolute ns of a core time in s (rounded to the nanosecond)."""
        return self.epoch_ns + round(seconds * _NS_PER_S)

    def stamp(self, seconds: float) -> Time:
        """``builtin_interfaces/Time`` of a core time."""
        sec, nanosec = divmod(self.to_nanoseconds(seconds), _NS_PER_S)
        return Time(sec=sec, nanosec=nanosec)

    def from_stamp(self, stamp: Time) -> float:
        """Core seconds of a ``builtin_interfaces/Time``."""
        return self.to_seconds(stamp.sec * _NS_PER_S + stamp.nanosec)


def duration_msg(seconds: float) -> Duration:
    """``builtin_interfaces/Duration`` of a non-negative time span in s."""
    sec, nanosec = divmod(round(seconds * _NS_PER_S), _NS_PER_S)
    return Duration(sec=sec, nanosec=nanosec)


def duration_seconds(duration: Duration) -> float:
    """Seconds of a ``builtin_interfaces/Duration``."""
    return duration.sec + duration.nanosec / _NS_PER_S


def chunk_to_msg(chunk: Chunk, timebase: TimeBase) -> TrajectoryChunk:
    """A core chunk as ``phil_msgs/TrajectoryChunk`` (header.stamp = absolute start)."""
    msg = TrajectoryChunk()
    msg.trajectory.header.stamp = timebase.stamp(chunk.start_s)
    msg.trajectory.joint_names = list(chunk.joint_names)
    points = []
    for index, time in enumerate(chunk.times_from_start_s):
        point = JointTrajectoryPoint()
        point.positions = chunk.positions_rad[index].tolist()
        if chunk.velocities_rad_s is not None:
            point.velocities = chunk.velocities_rad_s[index].tolist()
        point.time_from_start = duration_msg(float(time))
        points.append(point)
    msg.trajectory.points = points
    msg.control_modes = list(chunk.control_modes)
    msg.replace = chunk.replace
    msg.sequence = chunk.sequence
    return msg


def msg_to_chunk(msg: TrajectoryChunk, timebase: TimeBase) -> Chunk | Rejection:
    """A ``TrajectoryChunk`` as a core chunk; ragged point arrays are a MALFORMED rejection."""
    names = tuple(msg.trajectory.joint_names)
    points = msg.trajectory.points
    if not points:
        return Rejection(RejectReason.MALFORMED, 'chunk has no points')
    with_velocities = [len(point.velocities) > 0 for point in points]
    for index, point in enumerate(points):
        if len(point.positions) != len(names):
            return Rejection(
                RejectReason.MALFORMED,
                f'point {index} has {len(point.positions)} positions for {len(names)} joints',
            )
        if with_velocities[index] and len(point.velocities) != len(names):
            return Rejection(
                RejectReason.MALFORMED,
                f'point {index} has {len(point.velocities)} velocities for {len(names)} joints',
            )
    if any(with_velocities) and not all(with_velocities):
        return Rejection(RejectReason.MALFORMED, 'some points have velocities and some not')
    velocities = (
        np.array([point.velocities for point in points], dtype=float)
        if all(with_velocities)
        else None
    )
    return Chunk(
        joint_names=names,
        start_s=timebase.from_stamp(msg.trajectory.header.stamp),
        times_from_start_s=np.array([duration_seconds(p.time_from_start) for p in points]),
        positions_rad=np.array([point.positions for point in points], dtype=float).reshape(
            len(points), len(names)
        ),
        velocities_rad_s=velocities,
        control_modes=tuple(int(mode) for mode in msg.control_modes),
        replace=bool(msg.replace),
        sequence=int(msg.sequence),
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


def measured_positions(
    msg: MotorStates, names: Sequence[str], base_rad: Sequence[float]
) -> np.ndarray:
    """``base_rad`` with the finite positions of the connected motors in ``msg`` written over it
    (by joint name)."""
    positions = np.array(base_rad, dtype=float)
    index = {name: i for i, name in enumerate(names)}
    for motor in msg.motors:
        if motor.connected and motor.joint in index and math.isfinite(motor.position_rad):
            positions[index[motor.joint]] = motor.position_rad
    return positions


@dataclass(frozen=True)
class GeneratorConfig:
    """Validated node parameters (names, defaults and units: ``PARAMETERS``)."""

    chunking: ChunkingConfig
    defaults: MotionDefaults
    continuity: ContinuityTolerance
    publish_lead_s: float
    start_lead_s: float
    publish_period_s: float
    feedback_period_s: float
    halt_deceleration_rad_s2: float
    max_active_goals: int
    initial_positions_rad: tuple[float, ...]
    stamp_clock: str

    @classmethod
    def from_parameters(cls, values: dict) -> GeneratorConfig:
        """Build from parameter values. Raises ValueError naming the first bad parameter."""
        for name, value in values.items():
            numeric = name not in ('initial_positions_rad', 'max_active_goals', 'stamp_clock')
            if numeric and not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'parameter {name} must be positive and finite, got {value}')
        if values['stamp_clock'] not in STAMP_CLOCKS:
            raise ValueError(
                f'parameter stamp_clock must be one of {", ".join(STAMP_CLOCKS)}, '
                f'got {values["stamp_clock"]!r}'
            )
        initial = tuple(float(v) for v in values['initial_positions_rad'] or ())
        if not all(math.isfinite(v) for v in initial):
            raise ValueError(f'parameter initial_positions_rad must be finite, got {initial}')
        if values['start_lead_s'] > values['publish_lead_s']:
            raise ValueError(
                f'parameter start_lead_s ({values["start_lead_s"]}) must not exceed '
                f'publish_lead_s ({values["publish_lead_s"]})'
            )
        goals = int(values['max_active_goals'])
        if not 1 <= goals <= MAX_ACTIVE_GOALS_LIMIT:
            raise ValueError(
                f'parameter max_active_goals must be in [1, {MAX_ACTIVE_GOALS_LIMIT}], got {goals}'
            )
        return cls(
            chunking=ChunkingConfig(values['chunk_duration_s'], values['point_spacing_s']),
            defaults=MotionDefaults(
                move_duration_s=values['move_duration_s'],
                look_duration_s=values['look_duration_s'],
                pose_duration_s=values['pose_duration_s'],
                max_duration_s=values['max_duration_s'],
            ),
            continuity=ContinuityTolerance(
                position_rad=values['continuity_tolerance_rad'],
                velocity_rad_s=values['continuity_tolerance_rad_s'],
            ),
            publish_lead_s=values['publish_lead_s'],
            start_lead_s=values['start_lead_s'],
            publish_period_s=values['publish_period_s'],
            feedback_period_s=values['feedback_period_s'],
            halt_deceleration_rad_s2=values['halt_deceleration_rad_s2'],
            max_active_goals=goals,
            initial_positions_rad=initial,
            stamp_clock=values['stamp_clock'],
        )


#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'chunk_duration_s': (0.5, 'length of each published chunk, s'),
    'point_spacing_s': (0.02, 'largest time between chunk points (cubic Hermite knots), s'),
    'publish_lead_s': (0.1, 'a chunk is published this long before its start stamp, s'),
    'start_lead_s': (
        0.005,
        "a motion from rest starts this long after it is planned: the first chunk's trip to "
        'the bus loop (one arriving later is blended in from the held target), s',
    ),
    'publish_period_s': (0.01, 'period of the publishing / feedback / completion timer, s'),
    'feedback_period_s': (0.1, 'action feedback period, s'),
    'move_duration_s': (3.0, 'MOVE duration when the goal gives 0, s'),
    'look_duration_s': (1.0, 'LOOK duration when the goal gives 0, s'),
    'pose_duration_s': (3.0, 'POSE duration when the goal gives 0, s'),
    'max_duration_s': (60.0, 'longest duration a goal may ask for, s'),
    'halt_deceleration_rad_s2': (50.0, 'deceleration bound of halts and cancels, rad/s^2'),
    'continuity_tolerance_rad': (1e-3, '~/chunks: largest position step at a chunk start, rad'),
    'continuity_tolerance_rad_s': (0.05, '~/chunks: largest velocity step at a start, rad/s'),
    'max_active_goals': (8, 'goals queued or moving at once; more are aborted'),
    'stamp_clock': (
        'ros',
        'clock of every chunk and commanded_state stamp: ros (the node clock, as every ROS '
        'stamp; the hardware node maps it onto its monotonic clock) or monotonic '
        '(CLOCK_MONOTONIC)',
    ),
    'initial_positions_rad': (
        Parameter.Type.DOUBLE_ARRAY,
        'initial commanded positions in URDF joint order, rad; unset = init pose, then the '
        'measured positions on hardware/motor_states',
    ),
}
