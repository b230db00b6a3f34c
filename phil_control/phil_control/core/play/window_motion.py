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

The arm joints (waist plan, IK and its repair, contact reference, elbow ceiling) come from
`window_arms`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from phil_control.core.kinematics import WaistFailure, WaistKeyframe, solve_arms_batch
from phil_control.core.play.base_generator import (
    ArmContext,
    ArmSegment,
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
from phil_control.core.play.head_generator import HeadContext, HeadPlan, plan_head
from phil_control.core.play.pedal_generator import BASS_READY_RAD, HIHAT_OPEN_RAD, PedalPlan
from phil_control.core.play.robot import PlayRobot, UnknownDrumError
from phil_control.core.play.state_generator import (
    WRIST_STAY_DEG,
    StrikeContext,
    StrikePlan,
    plan_strikes,
    split_sub_steps,
    strike_velocity,
)
from phil_control.core.play.waist_path import WaistPath
from phil_control.core.play.window_arms import (
    PRESS_RAD,
    WaistState,
    lift_elbows,
    plan_window_waist,
    solve_arms_along_waist,
)
from phil_control.core.score import Hand, ScoreEvent, Window

MAX_WALL_STEP_S = 0.005
REBOUND_STEP_S = 0.0005
DIFFERENCE_STEP_S = 1e-5
KICK_VELOCITY = 5
STAY_RAD = math.radians(WRIST_STAY_DEG)
PITCH_RESET_RAD = math.radians(20.0)


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
    plans, following = _plan_window(robot, events, state)
    hits = _hits(target)
    if end_s <= start_s:
        empty = np.zeros((0, len(robot.joint_names)))
        return WindowMotion(start_s, end_s, np.zeros(0), empty, empty, hits, target.bar), following
    waist = WaistPath.from_segment(
        plan_window_waist(robot, events, state.right_arm, state.left_arm, state.waist, chooser)
    )
    struck = any(struck_drum(events[0], hand) for hand in ('right', 'left'))
    times = sample_times(start_s, end_s, speed, rebound=struck)
    # Every sample time and two just before it, for the backward differences.
    probe = np.concatenate([times, times - DIFFERENCE_STEP_S, times - 2 * DIFFERENCE_STEP_S])
    joints, waist = _window_joints(
        robot, events, plans, probe, waist, chooser, pedal_lead_s * speed
    )
    positions, velocities = _backward_differences(joints, times.size)
    check_soft_limits(robot, positions, times, target.bar)
    end_waist = WaistState(
        end_s,
        waist.end_angle_rad,
        waist.end_velocity_rad_s,
        WaistKeyframe(start_s, state.waist.angle_rad),
    )
    motion = WindowMotion(start_s, end_s, times, positions, velocities, hits, target.bar)
    return motion, replace(following, waist=end_waist)


@dataclass(frozen=True, eq=False)
class _WindowPlans:
    """The plans a window's joints are evaluated from (the waist and the pedals aside)."""

    right_arm: ArmSegment
    left_arm: ArmSegment
    right_strikes: StrikePlan
    left_strikes: StrikePlan
    head: HeadPlan


def _plan_window(
    robot: PlayRobot, events: tuple[ScoreEvent, ...], state: GeneratorState
) -> tuple[_WindowPlans, GeneratorState]:
    """The arm, strike and head plans of events[0] -> events[1], and the state at events[1]
    (its waist still the one at events[0]).

    Raises:
        MotionError: An event names an unknown drum.
    """
    try:
        right_arm, right_context = plan_arm_segment(robot, events, 'right', state.right_arm)
        left_arm, left_context = plan_arm_segment(robot, events, 'left', state.left_arm)
        head_plan, head = plan_head(robot, events, state.head)
    except UnknownDrumError as error:
        target = events[1]
        raise MotionError(
            MotionErrorKind.UNKNOWN_DRUM, str(error), target.bar, target.time_s
        ) from None
    sub_steps = split_sub_steps(events)
    right_strikes, right_strike = plan_strikes(sub_steps, 'right', state.right_strike)
    left_strikes, left_strike = plan_strikes(sub_steps, 'left', state.left_strike)
    plans = _WindowPlans(right_arm, left_arm, right_strikes, left_strikes, head_plan)
    following = GeneratorState(
        right_context, left_context, right_strike, left_strike, state.waist, head
    )
    return plans, following


def _window_joints(
    robot: PlayRobot,
    events: tuple[ScoreEvent, ...],
    plans: _WindowPlans,
    probe: np.ndarray,
    waist: WaistPath,
    chooser: WaistChooser,
    pedal_lead_score_s: float,
) -> tuple[np.ndarray, WaistPath]:
    """Every joint at the probe times (the pedals ``pedal_lead_score_s`` of score time
    ahead), and the waist path the IK was solved along (repaired where it failed)."""
    right_tips, right_wrists = plans.right_arm.evaluate(probe)
    left_tips, left_wrists = plans.left_arm.evaluate(probe)
    batch, waist = solve_arms_along_waist(
        robot,
        chooser,
        waist,
        probe,
        (right_tips, right_wrists),
        (left_tips, left_wrists),
        events[1].bar,
    )
    waist_angles = waist.evaluate(probe)
    joints = np.zeros((probe.size, len(robot.joint_names)))
    joints[:, arm_columns(robot)] = batch.positions_rad
    right_elbow, right_wrist = plans.right_strikes.evaluate(probe)
    left_elbow, left_wrist = plans.left_strikes.evaluate(probe)
    lift_elbows(robot, joints, right_elbow, left_elbow)
    joints[:, robot.index('right_wrist')] = right_wrists + right_wrist
    joints[:, robot.index('left_wrist')] = left_wrists + left_wrist
    start, target = events[0], events[1]
    pedal_plan = PedalPlan.between(
        start.time_s,
        target.time_s,
        (start.kick, target.kick),
        (start.hihat_closed, target.hihat_closed),
    )
    joints[:, robot.index('right_pedal')], joints[:, robot.index('left_pedal')] = (
        pedal_plan.evaluate(probe + pedal_lead_score_s)
    )
    head_yaw, head_pitch = plans.head.evaluate(probe)
    joints[:, robot.index('head_yaw')] = head_yaw - waist_angles
    joints[:, robot.index('head_pitch')] = head_pitch
    return joints, waist


def _backward_differences(joints: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions at the sample times and their left derivatives (second-order backward
    differences) from the probe rows: the samples, then each one and two steps earlier."""
    positions = joints[:count]
    velocities = (3.0 * positions - 4.0 * joints[count : 2 * count] + joints[2 * count :]) / (
        2.0 * DIFFERENCE_STEP_S
    )
    return positions, velocities


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
