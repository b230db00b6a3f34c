"""Motion primitives, trajectories, chunks and the planner behind the trajectory_generator node.

ROS-free: requests in, validated trajectories and plain-data chunks out. Times are seconds on the
robot clock, positions rad, velocities rad/s.
"""

from phil_control.core.motion.chunking import (
    ChunkingConfig,
    chunk_to_trajectory,
    chunk_trajectory,
)
from phil_control.core.motion.halt import HaltPlan, StopSegment, plan_halt
from phil_control.core.motion.planner import (
    CommandedState,
    ContinuityTolerance,
    MotionPlanner,
    PlannedMotion,
)
from phil_control.core.motion.primitives import (
    GESTURE_ALIASES,
    GESTURES,
    GestureStep,
    Waypoint,
    build_trajectory,
    resolve_gesture,
    waypoints,
)
from phil_control.core.motion.requests import (
    GestureRequest,
    LookRequest,
    MotionDefaults,
    MotionRequest,
    MoveRequest,
    PoseRequest,
    parse_profile,
)
from phil_control.core.motion.trajectory import HoldSegment, TimedSegment, Trajectory
from phil_control.core.motion.validation import (
    JointTable,
    Rejection,
    RejectReason,
    check_chunk,
    rejection_from_ik,
)
from phil_description.core.trajectory import Chunk

__all__ = [
    'GESTURES',
    'GESTURE_ALIASES',
    'Chunk',
    'ChunkingConfig',
    'CommandedState',
    'ContinuityTolerance',
    'GestureRequest',
    'GestureStep',
    'HaltPlan',
    'HoldSegment',
    'JointTable',
    'LookRequest',
    'MotionDefaults',
    'MotionPlanner',
    'MotionRequest',
    'MoveRequest',
    'PlannedMotion',
    'PoseRequest',
    'RejectReason',
    'StopSegment',
    'Rejection',
    'TimedSegment',
    'Trajectory',
    'Waypoint',
    'build_trajectory',
    'check_chunk',
    'chunk_to_trajectory',
    'chunk_trajectory',
    'parse_profile',
    'plan_halt',
    'rejection_from_ik',
    'resolve_gesture',
    'waypoints',
]
