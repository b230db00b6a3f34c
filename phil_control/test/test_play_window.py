"""Per-window generation: reset pose, sampling, strike exactness, hits, typed errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_control.core.play.common import (
    MotionError,
    MotionErrorKind,
    window_control_modes,
)
from phil_control.core.play.robot import PlayRobot, StrikeTarget
from phil_control.core.play.timeline import Timeline, hit_source
from phil_control.core.play.timing import sample_hermite
from phil_control.core.play.window_arms import lift_below_ceiling
from phil_control.core.play.window_motion import (
    generate_window,
    reset_pose,
    sample_times,
)
from phil_control.core.score import Hand, ScoreEvent, Window
from phil_description.core import default_robot_model
from phil_description.core.trajectory import ControlMode

DEG = math.pi / 180.0


@pytest.fixture(scope='module')
def model():
    return default_robot_model()


@pytest.fixture(scope='module')
def robot(model):
    return PlayRobot.from_model(model)


def _hit_window(instrument='snare', hand=None, velocity=5):
    timeline = Timeline(hit_source(instrument, velocity, hand))
    timeline.ensure_release(0.6)
    return timeline.windows[0]


def test_reset_pose_faces_the_init_drums(robot, model):
    positions, state = reset_pose(robot, 5, 1)
    right, left = model.stick_tip_positions(positions)
    index = robot.index
    assert positions[index('right_wrist')] == pytest.approx(
        robot.target('right', 5).wrist_rad + 20 * DEG
    )
    assert positions[index('left_wrist')] == pytest.approx(
        robot.target('left', 1).wrist_rad + 20 * DEG
    )
    assert positions[index('right_pedal')] == 0.0
    assert positions[index('left_pedal')] == pytest.approx(-3 * DEG)
    assert positions[index('head_pitch')] == pytest.approx(20 * DEG)
    world_yaw = positions[index('head_yaw')] + positions[index('waist')]
    assert world_yaw == pytest.approx(robot.look_angle_rad(5) - math.pi / 2)
    # sticks 25 deg (stay + press) above the strike points: above, and close in x-y
    for tip, target in ((right, robot.target('right', 5)), (left, robot.target('left', 1))):
        assert tip[2] > target.position_m[2] + 0.05
        assert np.linalg.norm(tip[:2] - target.position_m[:2]) < 0.12
    assert state.waist.angle_rad == positions[index('waist')]


@pytest.mark.parametrize('speed', [0.5, 1.0, 1.3, 2.0])
def test_sample_times_end_exactly_on_the_event(speed):
    times = sample_times(0.37, 0.52, speed)
    assert times[-1] == 0.52 and times[0] > 0.37
    steps = np.diff(np.concatenate([[0.37], times]))
    assert steps.max() <= 0.005 * speed + 1e-12
    assert np.allclose(steps, steps[0])


def test_hit_window_reproduces_the_wrist_stroke_in_joint_space(robot):
    _, state = reset_pose(robot, 1, 1)
    motion, _ = generate_window(robot, _hit_window(), state)
    wrist = motion.positions_rad[:, robot.index('left_wrist')]
    base = robot.target('left', 1).wrist_rad
    for time_s, offset_deg in ((0.5, 20.0), (0.7, 20.0), (0.85, 50.0), (1.0, -5.0)):
        row = int(np.argmin(np.abs(motion.times_s - time_s)))
        assert motion.times_s[row] == pytest.approx(time_s, abs=1e-9)
        assert wrist[row] == pytest.approx(base + offset_deg * DEG, abs=1e-9)
    assert motion.times_s[-1] == 1.0
    assert [
        (hit.instrument_id, hit.hand, hit.velocity, hit.score_time_s) for hit in motion.hits
    ] == [(1, Hand.LEFT, 5, 1.0)]


@pytest.mark.parametrize(
    ('instrument', 'hand'),
    [('snare', None), ('ride', None), ('open hihat', 'right'), ('floor', 'left')],
)
def test_stick_tip_is_on_the_strike_point_at_the_hit(robot, model, instrument, hand):
    _, state = reset_pose(robot, 1, 1)
    motion, _ = generate_window(robot, _hit_window(instrument, hand), state)
    hit = motion.hits[0]
    tips = model.stick_tip_positions(motion.positions_rad[-1])
    tip = tips[0] if hit.hand is Hand.RIGHT else tips[1]
    target = robot.target(hit.hand.value, hit.instrument_id)
    assert np.linalg.norm(tip - target.position_m) < 1e-9
    # just before the hit the stick is above the pad and moving down fast
    before = model.stick_tip_positions(motion.positions_rad[-2])[
        0 if hit.hand is Hand.RIGHT else 1
    ]
    assert before[2] > target.position_m[2]


def test_velocities_are_derivatives_hermite_matches_a_finer_grid(robot):
    _, state = reset_pose(robot, 5, 1)
    window = _hit_window('ride', None, 7)
    coarse, _ = generate_window(robot, window, state, speed=1.0)
    fine, _ = generate_window(robot, window, state, speed=0.5)  # 2.5 ms steps, same motion
    knots = np.concatenate([[0.0], coarse.times_s])
    start = np.concatenate([reset_pose(robot, 5, 1)[0][np.newaxis], coarse.positions_rad])
    velocities = np.concatenate([np.zeros((1, 13)), coarse.velocities_rad_s])
    rebuilt = sample_hermite(knots, start, velocities, fine.times_s)
    assert np.abs(rebuilt - fine.positions_rad).max() < 1e-6  # rad
    difference = np.diff(fine.positions_rad, axis=0) / np.diff(fine.times_s)[:, None]
    middle = 0.5 * (fine.velocities_rad_s[1:] + fine.velocities_rad_s[:-1])
    assert np.abs(difference - middle).max() < 0.01  # rad/s


def test_window_hits_list_every_limb(robot):
    events = (
        ScoreEvent(-1, 1, 0.0, 0.0, 100.0),
        ScoreEvent(
            0,
            3,
            0.6,
            0.6,
            100.0,
            right_drum=5,
            left_drum=1,
            right_velocity=4,
            left_velocity=0,
            kick=True,
            hihat_closed=False,
        ),
    )
    _, state = reset_pose(robot, 5, 1)
    motion, _ = generate_window(robot, Window(events, is_tail=True), state)
    assert [(h.instrument_id, h.hand, h.velocity, h.bar) for h in motion.hits] == [
        (9, Hand.RIGHT, 4, 3),
        (1, Hand.LEFT, 1, 3),
        (0, Hand.KICK, 5, 3),
    ]


def test_unreachable_target_is_a_typed_error_with_the_bar(robot):
    targets = dict(robot.targets)
    targets[('left', 4)] = StrikeTarget((0.0, 1.5, 0.2), 0.1)
    far = dataclasses.replace(robot, targets=targets)
    _, state = reset_pose(far, 1, 1)
    with pytest.raises(MotionError) as caught:
        generate_window(far, _hit_window('top'), state)
    assert caught.value.kind in (MotionErrorKind.NO_WAIST, MotionErrorKind.IK)
    assert caught.value.bar == 0 and 'bar 0' in str(caught.value)
    with pytest.raises(MotionError, match='reset pose') as caught:
        reset_pose(far, 1, 4)
    assert caught.value.bar is None


def test_soft_limit_violation_is_a_typed_error(robot):
    upper = robot.soft_upper_rad.copy()
    upper[robot.index('head_pitch')] = 10 * DEG
    tight = dataclasses.replace(robot, soft_upper_rad=upper)
    with pytest.raises(MotionError, match='head_pitch') as caught:
        reset_pose(tight, 1, 1)
    assert caught.value.kind is MotionErrorKind.JOINT_LIMIT


def test_wrists_play_in_torque_mode(robot):
    modes = window_control_modes(robot)
    assert modes[robot.index('right_wrist')] is ControlMode.TORQUE
    assert modes[robot.index('left_wrist')] is ControlMode.TORQUE
    assert sum(mode is ControlMode.POSITION for mode in modes) == 11


# ----------------------------------------------------------------------------- elbow lift ceiling
CEILING = math.radians(137.5)
KNEE = math.radians(5.0)


@given(base_deg=st.floats(0.0, 140.0), lift_deg=st.floats(0.0, 60.0))
def test_the_lift_never_passes_the_ceiling_and_a_zero_lift_keeps_the_pose(base_deg, lift_deg):
    base = np.array([math.radians(base_deg)])
    lift = np.array([math.radians(lift_deg)])
    result = lift_below_ceiling(base, lift, CEILING, KNEE)[0]
    assert result >= base[0] - 1e-15  # a lift never lowers the elbow
    assert result <= max(CEILING, base[0]) + 1e-15
    if base[0] + lift[0] <= CEILING - KNEE:  # far below: untouched
        assert result == base[0] + lift[0]
    assert lift_below_ceiling(base, np.zeros(1), CEILING, KNEE)[0] == base[0]


def test_the_lift_bends_without_a_corner_and_keeps_rising():
    base = np.full(4001, math.radians(100.0))
    lift = np.linspace(0.0, math.radians(60.0), base.size)
    result = lift_below_ceiling(base, lift, CEILING, KNEE)
    slope = np.diff(result) / np.diff(lift)
    assert np.all(slope > 0.0) and np.all(slope <= 1.0 + 1e-9)  # monotone, never steeper
    assert np.max(np.abs(np.diff(slope))) < 0.01  # no corner (a cut jumps by 1)
    assert result.max() < CEILING
