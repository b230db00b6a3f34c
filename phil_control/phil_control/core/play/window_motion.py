"""Per-window play-motion synthesis: one window's first interval as a 13-joint trajectory.

For every sample time the base generator gives both tip positions and base wrist angles, the
waist follows a cubic Hermite segment towards the look-ahead optimum, the closed-form IK gives
joints 0-8, the state generator's elbow and wrist offsets are added, and the pedal and head
generators fill joints 9-12 (head_yaw = world yaw - waist).

Trajectory representation (the timing contract): sample times are score times in seconds from
the play start (t = 0 is the silent event before the first row). The interval (t0, t1] is cut
into n = ceil((t1 - t0) / (0.005 s * speed)) equal steps, so the wall-time step is at most 5 ms
and the event time t1 is exactly the last sample. Each sample carries positions and
velocities; velocities are exact derivatives of the generated motion (second-order backward
differences over 1e-5 s, i.e. left derivatives), so cubic Hermite interpolation between samples
reproduces the motion closely and passes exactly through every strike instant. At a hit the
strike reverses (the stick rebounds): the hit sample carries the incoming velocity and the next
window adds a sample 0.5 ms (wall) after the hit, so the velocity reversal stays inside that
step.

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
from dataclasses import dataclass, replace

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
from phil_control.core.play.base_generator import (
    ArmContext,
    arm_targets_at_events,
    plan_arm_segment,
    struck_drum,
)
from phil_control.core.play.common import (
    CommandedHit,
    MotionError,
    MotionErrorKind,
    WaistChooser,
    arm_columns,
    check_soft_limits,
    raise_ik_failure,
)
from phil_control.core.play.head_generator import HeadContext, plan_head
from phil_control.core.play.pedal_generator import BASS_READY_RAD, HIHAT_OPEN_RAD, PedalPlan
from phil_control.core.play.robot import PlayRobot, UnknownDrumError
from phil_control.core.play.state_generator import (
    WRIST_PRESS_DEG,
    WRIST_STAY_DEG,
    StrikeContext,
    plan_strikes,
    split_sub_steps,
    strike_velocity,
)
from phil_control.core.play.waist_path import WaistPath, repair_angle
from phil_control.core.score import Hand, ScoreEvent, Window

MAX_WALL_STEP_S = 0.005
REBOUND_STEP_S = 0.0005
DIFFERENCE_STEP_S = 1e-5
KICK_VELOCITY = 5
WAIST_LOOKAHEAD_EVENTS = 3
MAX_WAIST_REPAIRS = 4
PRESS_RAD = math.radians(WRIST_PRESS_DEG)
STAY_RAD = math.radians(WRIST_STAY_DEG)
PITCH_RESET_RAD = math.radians(20.0)


#: The elbow lift stays this far below the elbow's soft upper limit (tracking overshoot room).
ELBOW_TRACKING_MARGIN_DEG = 2.5
#: Over this last stretch below that ceiling the lift bends smoothly towards it.
ELBOW_LIFT_KNEE_DEG = 5.0


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


@dataclass(frozen=True)
class GeneratorState:
    """Everything the generators carry from one window to the next (immutable)."""

    right_arm: ArmContext
    left_arm: ArmContext
    right_strike: StrikeContext
    left_strike: StrikeContext
    waist: WaistState
    head: HeadContext


@dataclass(frozen=True, eq=False)
class WindowMotion:
    """Generated motion of one window's interval (t0, t1].

    Attributes:
        start_s: t0, score time, s (no sample there; the previous motion ends there).
        end_s: t1, score time, s (the last sample).
        times_s: (N,) sample times, score time, s.
        positions_rad: (N, 13) joint positions, rad.
        velocities_rad_s: (N, 13) joint velocities, rad per second of score time.
        hits: Hits commanded at t1.
        bar: Bar of the event at t1.
    """

    start_s: float
    end_s: float
    times_s: np.ndarray
    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray
    hits: tuple[CommandedHit, ...]
    bar: int


def reset_pose(
    robot: PlayRobot, init_right: int, init_left: int, chooser: WaistChooser | None = None
) -> tuple[np.ndarray, GeneratorState]:
    """The DRUM START target pose and the generator state that starts from it.

    Sticks over the init drums (IK with the optimal waist), elbow offsets 0, wrists at the drum
    wrist + 20 deg, bass pedal 0, hi-hat pedal -3 deg (open), head towards the right drum,
    pitch 20 deg.

    Raises:
        MotionError: Unknown drum, no feasible waist or a joint outside its soft limits.
    """
    chooser = chooser or WaistChooser(robot)
    try:
        right, left = robot.target('right', init_right), robot.target('left', init_left)
        head = HeadContext.looking_at(robot, init_right)
    except UnknownDrumError as error:
        raise MotionError(MotionErrorKind.UNKNOWN_DRUM, str(error)) from None
    right_tip, left_tip = np.array(right.position_m), np.array(left.position_m)
    choice = chooser(right_tip, left_tip, right.wrist_rad + PRESS_RAD, left.wrist_rad + PRESS_RAD)
    if isinstance(choice, WaistFailure):
        raise MotionError(MotionErrorKind.NO_WAIST, choice.detail)
    batch = solve_arms_batch(
        robot.geometry,
        robot.limits,
        right_tip,
        left_tip,
        choice.optimal_rad,
        right.wrist_rad + PRESS_RAD,
        left.wrist_rad + PRESS_RAD,
    )
    raise_ik_failure(batch, np.zeros(1), None)
    positions = np.zeros(len(robot.joint_names))
    positions[arm_columns(robot)] = batch.positions_rad[0]
    positions[robot.index('right_wrist')] = right.wrist_rad + STAY_RAD
    positions[robot.index('left_wrist')] = left.wrist_rad + STAY_RAD
    positions[robot.index('right_pedal')] = BASS_READY_RAD
    positions[robot.index('left_pedal')] = HIHAT_OPEN_RAD
    positions[robot.index('head_yaw')] = head.world_yaw_rad - choice.optimal_rad
    positions[robot.index('head_pitch')] = PITCH_RESET_RAD
    check_soft_limits(robot, positions[np.newaxis], np.zeros(1), None)
    state = GeneratorState(
        right_arm=ArmContext(init_right),
        left_arm=ArmContext(init_left),
        right_strike=StrikeContext(),
        left_strike=StrikeContext(),
        waist=WaistState(0.0, choice.optimal_rad),
        head=head,
    )
    return positions, state


def generate_window(
    robot: PlayRobot,
    window: Window,
    state: GeneratorState,
    speed: float = 1.0,
    chooser: WaistChooser | None = None,
    pedal_lead_s: float = 0.0,
) -> tuple[WindowMotion, GeneratorState]:
    """Generate the first interval of a window.

    Args:
        robot: Robot data.
        window: The window (events[0] -> events[1] is generated, the rest is look-ahead).
        state: Generator state at events[0].
        speed: Playback speed; only sets the sample count (wall step <= 5 ms).
        chooser: Waist chooser (shared across windows for its cache).
        pedal_lead_s: The pedals' motion runs this far (wall time) ahead of the arms', for
            pedal drives that follow their commands later than the arm drives do, s. Past
            the interval's end a pedal holds its end angle, and the next interval starts that
            much into its own pedal motion.

    Returns:
        The motion and the generator state at events[1].

    Raises:
        MotionError: IK failure, no waist angle, unknown drum or a soft-limit violation; the
            message names the bar and time.
    """
    chooser = chooser or WaistChooser(robot)
    events = window.events
    target = events[1]
    start_s, end_s = events[0].time_s, target.time_s
    try:
        right_segment, right_arm = plan_arm_segment(robot, events, 'right', state.right_arm)
        left_segment, left_arm = plan_arm_segment(robot, events, 'left', state.left_arm)
        head_plan, head = plan_head(robot, events, state.head)
    except UnknownDrumError as error:
        raise MotionError(MotionErrorKind.UNKNOWN_DRUM, str(error), target.bar, end_s) from None
    sub_steps = split_sub_steps(events)
    right_plan, right_strike = plan_strikes(sub_steps, 'right', state.right_strike)
    left_plan, left_strike = plan_strikes(sub_steps, 'left', state.left_strike)
    hits = _hits(target)
    following = GeneratorState(right_arm, left_arm, right_strike, left_strike, state.waist, head)
    if end_s <= start_s:
        empty = np.zeros((0, len(robot.joint_names)))
        return WindowMotion(start_s, end_s, np.zeros(0), empty, empty, hits, target.bar), following
    waist = WaistPath.from_segment(_plan_waist(robot, events, state, chooser))

    struck = any(struck_drum(events[0], hand) for hand in ('right', 'left'))
    times = sample_times(start_s, end_s, speed, rebound=struck)
    count = times.size
    probe = np.concatenate([times, times - DIFFERENCE_STEP_S, times - 2 * DIFFERENCE_STEP_S])
    right_tips, right_wrists = right_segment.evaluate(probe)
    left_tips, left_wrists = left_segment.evaluate(probe)
    batch, waist = _solve_arms(
        robot,
        chooser,
        waist,
        probe,
        (right_tips, right_wrists),
        (left_tips, left_wrists),
        target.bar,
    )
    waist_angles = waist.evaluate(probe)
    joints = np.zeros((probe.size, len(robot.joint_names)))
    joints[:, arm_columns(robot)] = batch.positions_rad
    right_elbow, right_wrist = right_plan.evaluate(probe)
    left_elbow, left_wrist = left_plan.evaluate(probe)
    ceiling_margin = math.radians(ELBOW_TRACKING_MARGIN_DEG)
    knee = math.radians(ELBOW_LIFT_KNEE_DEG)
    for name, lift in (('right_elbow', right_elbow), ('left_elbow', left_elbow)):
        column = robot.index(name)
        # The lift is >= 0 and zero at every hit.
        joints[:, column] = lift_below_ceiling(
            joints[:, column], lift, robot.soft_upper_rad[column] - ceiling_margin, knee
        )
    joints[:, robot.index('right_wrist')] = right_wrists + right_wrist
    joints[:, robot.index('left_wrist')] = left_wrists + left_wrist
    pedal_plan = PedalPlan.between(
        start_s,
        end_s,
        (events[0].kick, target.kick),
        (events[0].hihat_closed, target.hihat_closed),
    )
    joints[:, robot.index('right_pedal')], joints[:, robot.index('left_pedal')] = (
        pedal_plan.evaluate(probe + pedal_lead_s * speed)
    )
    head_yaw, head_pitch = head_plan.evaluate(probe)
    joints[:, robot.index('head_yaw')] = head_yaw - waist_angles
    joints[:, robot.index('head_pitch')] = head_pitch

    positions = joints[:count]
    velocities = (3.0 * positions - 4.0 * joints[count : 2 * count] + joints[2 * count :]) / (
        2.0 * DIFFERENCE_STEP_S
    )
    check_soft_limits(robot, positions, times, target.bar)
    following = replace(
        following,
        waist=WaistState(
            end_s,
            waist.end_angle_rad,
            waist.end_velocity_rad_s,
            WaistKeyframe(start_s, state.waist.angle_rad),
        ),
    )
    motion = WindowMotion(start_s, end_s, times, positions, velocities, hits, target.bar)
    return motion, following


def sample_times(
    start_s: float, end_s: float, speed: float = 1.0, rebound: bool = False
) -> np.ndarray:
    """Sample times of (start, end]: equal steps of at most 5 ms wall time, end included exactly.

    Args:
        start_s: Interval start, score time, s.
        end_s: Interval end, score time, s (> start_s).
        speed: Playback speed (score seconds per wall second).
        rebound: A stick struck at `start_s`; add a sample 0.5 ms (wall) after it so the
            velocity reversal of the rebound is confined to that short step.
    """
    span = end_s - start_s
    count = max(1, math.ceil(span / (MAX_WALL_STEP_S * speed) - 1e-9))
    times = start_s + span * np.arange(1, count + 1) / count
    times[-1] = end_s
    extra = REBOUND_STEP_S * speed
    if rebound and times[0] - start_s > 2.0 * extra:
        times = np.concatenate([[start_s + extra], times])
    return times


def _solve_arms(
    robot: PlayRobot,
    chooser: WaistChooser,
    waist: WaistPath,
    probe: np.ndarray,
    right: tuple[np.ndarray, np.ndarray],
    left: tuple[np.ndarray, np.ndarray],
    bar: int,
) -> tuple[IkBatchResult, WaistPath]:
    """IK of all probe times; on failure insert waist keyframes (see `waist_path`) and retry."""
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


def _plan_waist(
    robot: PlayRobot,
    events: tuple[ScoreEvent, ...],
    state: GeneratorState,
    chooser: WaistChooser,
) -> WaistSegment:
    start_s = events[0].time_s
    right = arm_targets_at_events(robot, events, 'right', state.right_arm, WAIST_LOOKAHEAD_EVENTS)
    left = arm_targets_at_events(robot, events, 'left', state.left_arm, WAIST_LOOKAHEAD_EVENTS)
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
    waist = state.waist
    segment = plan_waist_segment(WaistKeyframe(start_s, waist.angle_rad), upcoming, waist.previous)
    return WaistSegment(
        segment.start, segment.end, waist.velocity_rad_s, segment.end_velocity_rad_s
    )


def _hits(event: ScoreEvent) -> tuple[CommandedHit, ...]:
    hits = []
    for hand, limb in (('right', Hand.RIGHT), ('left', Hand.LEFT)):
        drum = struck_drum(event, hand)
        if drum:
            hits.append(
                CommandedHit(
                    drum, limb, strike_velocity(event, hand), event.time_s, event.bar, event.index
                )
            )
    if event.kick:
        hits.append(
            CommandedHit(0, Hand.KICK, KICK_VELOCITY, event.time_s, event.bar, event.index)
        )
    return tuple(hits)
