"""Play-motion synthesis (no ROS): from score windows to time-stamped 13-joint trajectories.

Modules:
    robot: `PlayRobot`, the robot data the generators use (from the robot model).
    shapes: `Transition` and the curve pieces the generators are built of.
    base_generator: Stick-tip paths between drums, time law, base wrist angle.
    state_generator: Elbow lift and wrist strike offsets by intensity.
    pedal_generator: Bass drum and hi-hat pedals.
    head_generator: Head yaw towards the right-hand drum and the beat nod.
    common: Control modes, commanded hits, `MotionError`, the cached waist choice.
    waist_path: Piecewise waist motion in a window and its repair where the IK fails.
    window_arms: The waist plan, the IK with waist repair and the elbow ceiling of a window.
    window_motion: One window -> sampled 13-joint motion and its hits.
    transfer: DRUM START / DRUM END moves and the score-time <-> wall-time clock.
    timeline: Sources by play id, improv chaining, pause truncation, `next_score_in_folder`.
    chunk: Wall-clock chunks, scheduled hits, progress, `PlayAborted`.
    playback: One play in progress (generation, cuts, DRUM END, improv chaining).
    status: `PlayStatus`, what a play session answers (hits, progress, score <-> wall time).
    session: `PlaySession`, what the score player node drives.
    timing: Hit-timing statistics and trajectory-sampling helpers.
"""

from __future__ import annotations

from phil_control.core.play.chunk import (
    ChunkKind,
    MotionChunk,
    PlayAborted,
    PlayProgress,
    ScheduledHit,
    SessionBusyError,
)
from phil_control.core.play.common import (
    CommandedHit,
    MotionError,
    MotionErrorKind,
    WaistChooser,
)
from phil_control.core.play.robot import PlayRobot, StrikeTarget, UnknownDrumError
from phil_control.core.play.session import (
    PlaySession,
    check_motion_lead_s,
    check_pedal_lead_s,
)
from phil_control.core.play.timeline import (
    PlaySource,
    ResumePoint,
    Timeline,
    folder_source,
    next_score_in_folder,
    resolve_source,
)
from phil_control.core.play.timing import (
    TimingStats,
    downward_crossing,
    match_hits,
    sample_hermite,
    timing_stats,
)
from phil_control.core.play.transfer import ScoreClock, TransferMove
from phil_control.core.play.window_motion import (
    GeneratorState,
    WindowMotion,
    generate_window,
    reset_pose,
    sample_times,
)

__all__ = [
    'ChunkKind',
    'CommandedHit',
    'GeneratorState',
    'MotionChunk',
    'MotionError',
    'MotionErrorKind',
    'PlayAborted',
    'PlayProgress',
    'PlayRobot',
    'PlaySession',
    'PlaySource',
    'ResumePoint',
    'ScheduledHit',
    'ScoreClock',
    'SessionBusyError',
    'StrikeTarget',
    'Timeline',
    'TimingStats',
    'TransferMove',
    'UnknownDrumError',
    'WaistChooser',
    'WindowMotion',
    'check_motion_lead_s',
    'check_pedal_lead_s',
    'downward_crossing',
    'folder_source',
    'generate_window',
    'match_hits',
    'next_score_in_folder',
    'reset_pose',
    'resolve_source',
    'sample_hermite',
    'sample_times',
    'timing_stats',
]
