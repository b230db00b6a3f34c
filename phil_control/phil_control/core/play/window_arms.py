"""The arms of one window: the waist planned from the look-ahead, the IK along it (repaired where
it fails) and the elbow lift kept below its ceiling.

Contact reference (deviation from upstream, which solved the IK with the base wrist and then
pressed 5 deg further, so the stick met the pad when the offset crossed 0, several ms before the
event): the IK is solved with wrist = base + press (-5 deg), so at the event the commanded wrist
offset is exactly the press angle and the URDF stick tip is exactly on the strike point. The
wrist joint angles equal upstream's; only the arm IK sees the 5 deg.

The waist start velocity of a window is the previous window's end velocity (upstream recomputed
it per window, which leaves small velocity jumps at window boundaries). Where the IK fails
between events the waist gets extra keyframes (`waist_path`), and the elbow lift bends smoothly
towards a ceiling `ELBOW_TRACKING_MARGIN_DEG` below the elbow's soft limit instead of passing it
(`lift_below_ceiling`): the arm overshoots a commanded peak by a degree or so, and the hard limit
(where the hardware latches a fault on the measured angle) is only 0.1 deg past the soft one.
Upstream aborted or commanded past the limit there; a hard cut would put a corner in the motion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phil_control.core.kinematics import (
    IkBatchResult,
    UpcomingWaist,
    WaistFailure,
    WaistKeyframe,
    WaistSegment,
    plan_waist_segment,
    solve_arms_batch,
)
from phil_control.core.play.base_generator import ArmContext, arm_targets_at_events
from phil_control.core.play.common import (
    MotionError,
    MotionErrorKind,
    WaistChooser,
    raise_ik_failure,
)
from phil_control.core.play.robot import PlayRobot
from phil_control.core.play.state_generator import WRIST_PRESS_DEG
from phil_control.core.play.waist_path import WaistPath, repair_angle
from phil_control.core.score import ScoreEvent

#: The wrist angle the IK is solved with, relative to the base wrist (the contact reference).
PRESS_RAD = math.radians(WRIST_PRESS_DEG)
WAIST_LOOKAHEAD_EVENTS = 3
MAX_WAIST_REPAIRS = 4
#: The elbow lift stays this far below the elbow's soft upper limit (tracking overshoot room).
ELBOW_TRACKING_MARGIN_DEG = 2.5
#: Over this last stretch below that ceiling the lift bends smoothly towards it.
ELBOW_LIFT_KNEE_DEG = 5.0


@dataclass(frozen=True)
class WaistState:
    """Waist at a window boundary.

    Attributes:
        time_s: Score time, s.
        angle_rad: Waist angle, rad.
        velocity_rad_s: Waist velocity, rad per score second.
        previous: Waist keyframe of the boundary before (None at the start).
    """

    time_s: float
    angle_rad: float
    velocity_rad_s: float = 0.0
    previous: WaistKeyframe | None = None


def plan_window_waist(
    robot: PlayRobot,
    events: tuple[ScoreEvent, ...],
    right_arm: ArmContext,
    left_arm: ArmContext,
    waist: WaistState,
    chooser: WaistChooser,
) -> WaistSegment:
    """The waist from events[0] to events[1], aimed at the optimal angles of the look-ahead.

    Raises:
        MotionError: No feasible waist angle at an upcoming event.
    """
    start_s = events[0].time_s
    right = arm_targets_at_events(robot, events, 'right', right_arm, WAIST_LOOKAHEAD_EVENTS)
    left = arm_targets_at_events(robot, events, 'left', left_arm, WAIST_LOOKAHEAD_EVENTS)
    upcoming: list[UpcomingWaist] = []
    for index, ((right_tip, right_wrist), (left_tip, left_wrist)) in enumerate(
        zip(right, left, strict=False)
    ):
        time_s = events[index + 1].time_s
        if time_s <= (upcoming[-1].time_s if upcoming else start_s):
            continue
        choice = chooser(right_tip, left_tip, right_wrist + PRESS_RAD, left_wrist + PRESS_RAD)
        if isinstance(choice, WaistFailure):
            raise MotionError(MotionErrorKind.NO_WAIST, choice.detail, events[1].bar, time_s)
        upcoming.append(UpcomingWaist(time_s, choice))
    segment = plan_waist_segment(WaistKeyframe(start_s, waist.angle_rad), upcoming, waist.previous)
    return WaistSegment(
        segment.start, segment.end, waist.velocity_rad_s, segment.end_velocity_rad_s
    )


def solve_arms_along_waist(
    robot: PlayRobot,
    chooser: WaistChooser,
    waist: WaistPath,
    probe: np.ndarray,
    right: tuple[np.ndarray, np.ndarray],
    left: tuple[np.ndarray, np.ndarray],
    bar: int,
) -> tuple[IkBatchResult, WaistPath]:
    """IK of all probe times; on failure insert waist keyframes (see `waist_path`) and retry.

    Args:
        right: Right stick tips (M, 3) and base wrist angles (M,) at the probe times.
        left: The same for the left stick.

    Returns:
        The solved batch and the waist path it was solved along.

    Raises:
        MotionError: The IK still fails after the repairs.
    """
    (right_tips, right_wrists), (left_tips, left_wrists) = right, left
    for _ in range(MAX_WAIST_REPAIRS + 1):
        angles = waist.evaluate(probe)
        batch = solve_arms_batch(
            robot.geometry,
            robot.limits,
            right_tips,
            left_tips,
            angles,
            right_wrists + PRESS_RAD,
            left_wrists + PRESS_RAD,
        )
        if batch.ok.all():
            return batch, waist
        row = int(np.argmin(batch.ok))
        choice = chooser(
            right_tips[row],
            left_tips[row],
            right_wrists[row] + PRESS_RAD,
            left_wrists[row] + PRESS_RAD,
        )
        if isinstance(choice, WaistFailure):
            break
        repaired = waist.with_keyframe(float(probe[row]), repair_angle(angles[row], choice))
        if repaired is waist:
            break
        waist = repaired
    raise_ik_failure(batch, probe, bar)
    raise AssertionError('unreachable')  # raise_ik_failure raises for a failed batch


def lift_elbows(
    robot: PlayRobot, joints: np.ndarray, right_lift_rad: np.ndarray, left_lift_rad: np.ndarray
) -> None:
    """Add the elbow lifts to the IK elbows in ``joints`` (in place), each kept below its
    ceiling (see `lift_below_ceiling`)."""
    ceiling_margin = math.radians(ELBOW_TRACKING_MARGIN_DEG)
    knee = math.radians(ELBOW_LIFT_KNEE_DEG)
    for name, lift in (('right_elbow', right_lift_rad), ('left_elbow', left_lift_rad)):
        column = robot.index(name)
        # The lift is >= 0 and zero at every hit.
        joints[:, column] = lift_below_ceiling(
            joints[:, column], lift, robot.soft_upper_rad[column] - ceiling_margin, knee
        )


def lift_below_ceiling(
    base_rad: np.ndarray, lift_rad: np.ndarray, ceiling_rad: float, knee_rad: float
) -> np.ndarray:
    """``base + lift``, the lift bent smoothly so that the sum stays below ``ceiling_rad``.

    Unchanged up to ``ceiling - knee`` (or up to ``base`` where the base is higher, so a
    zero lift, as at every hit, leaves the pose exact); above it the excess approaches the
    ceiling exponentially with slope 1 at the knee (no corner). Where the base is at or above
    the ceiling there is no lift.
    """
    start = np.maximum(base_rad, ceiling_rad - knee_rad)
    room = ceiling_rad - start
    total = base_rad + lift_rad
    excess = total - start
    safe_room = np.where(room > 0.0, room, 1.0)
    bent = start + room * -np.expm1(-np.maximum(excess, 0.0) / safe_room)
    limited = np.where(excess > 0.0, bent, total)
    return np.where(room > 0.0, limited, np.minimum(total, base_rad))
