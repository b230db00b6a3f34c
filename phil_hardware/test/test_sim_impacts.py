"""Impact detection on synthetic joint trajectories built with the arm IK.

The stick tip is moved along an analytic path through a strike point (known crossing instant,
deliberately off the 1 kHz sample grid), converted to joint space with phil_control's closed-form
IK, and the detector has to find the right instrument and time from the joints alone (URDF FK).
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest

from phil_control.core.kinematics import (
    ARM_JOINT_NAMES,
    ArmGeometry,
    JointLimits,
    solve_arms_batch,
)
from phil_description.core import default_robot_model
from phil_hardware.sim.impacts import (
    ImpactConfig,
    ImpactDetector,
    Limb,
    detect_impacts,
    velocity_grade,
)

SAMPLE_S = 0.001
TIME_TOLERANCE_S = 0.0005
LIFT_M = 0.10
DIP_M = 0.01
STROKE_S = 0.4
START_S = 0.0137  # trajectory start off the sample grid


@pytest.fixture(scope='module')
def model():
    return default_robot_model()


def _arm_trajectory(model, hand, strike_m, wrist_rad, t, tip_z_offset):
    """Joint samples moving one stick tip vertically through ``strike_m`` + offsets."""
    geometry = ArmGeometry(**asdict(model.arm_lengths))
    limits = JointLimits({j.name: (j.soft_lower_rad, j.soft_upper_rad) for j in model.joints})
    ready = model.poses['ready']
    right_tip, left_tip = model.stick_tip_positions(ready)
    tips = np.asarray(strike_m) + np.outer(tip_z_offset, [0.0, 0.0, 1.0])
    index = {name: model.joint(name).index for name in ARM_JOINT_NAMES}
    right_wrist = wrist_rad if hand == 'right' else ready[index['right_wrist']]
    left_wrist = wrist_rad if hand == 'left' else ready[index['left_wrist']]
    result = solve_arms_batch(
        geometry,
        limits,
        tips if hand == 'right' else right_tip,
        tips if hand == 'left' else left_tip,
        ready[index['waist']],
        right_wrist,
        left_wrist,
    )
    assert result.ok.all(), 'test trajectory must be reachable'
    q = np.tile(ready, (len(t), 1))
    for column, name in enumerate(ARM_JOINT_NAMES):
        q[:, index[name]] = result.positions_rad[:, column]
    return q


def _stroke(duration_s=STROKE_S, lift_m=LIFT_M, dip_m=DIP_M):
    """Samples and tip height offsets of one down-and-up stroke; returns (t, dz, t_cross)."""
    t = START_S + np.arange(0.0, duration_s, SAMPLE_S)
    phase = 2.0 * math.pi * (t - START_S) / duration_s
    dz = -dip_m + (lift_m + dip_m) * (1.0 + np.cos(phase)) / 2.0
    if dip_m <= 0:
        return t, dz, math.nan  # never reaches the pad
    crossing_phase = math.acos(2.0 * dip_m / (lift_m + dip_m) - 1.0)
    return t, dz, START_S + crossing_phase / (2.0 * math.pi) * duration_s


CASES = [
    ('snare', 'right'),
    ('snare', 'left'),
    ('floor', 'right'),
    ('top', 'left'),
    ('ride', 'right'),
    ('right crash', 'right'),
    ('left crash', 'left'),
]


@pytest.mark.parametrize(('instrument', 'hand'), CASES)
def test_stroke_through_strike_point_gives_instrument_and_time(model, instrument, hand):
    strike = model.kit.by_name(instrument).strikes[hand]
    t, dz, t_cross = _stroke()
    q = _arm_trajectory(model, hand, strike.position_m, strike.wrist_angle_rad, t, dz)

    impacts = detect_impacts(model, t, q)

    assert len(impacts) == 1, impacts
    impact = impacts[0]
    assert impact.instrument == instrument
    assert impact.instrument_id == model.kit.by_name(instrument).id
    assert impact.limb is (Limb.RIGHT_HAND if hand == 'right' else Limb.LEFT_HAND)
    assert abs(impact.time_s - t_cross) < TIME_TOLERANCE_S
    assert t_cross % SAMPLE_S > 1e-5  # the instant really lies between two samples
    np.testing.assert_allclose(impact.position_m, strike.position_m, atol=2e-3)
    assert 1 <= velocity_grade(impact, ImpactConfig()) <= 7


def test_stick_staying_above_the_pad_gives_nothing(model):
    strike = model.kit.by_name('snare').strikes['right']
    above = ImpactConfig().hand_tolerance_m + 0.005
    t, dz, _ = _stroke(dip_m=-above)  # lowest point beyond the tolerance above the pad
    q = _arm_trajectory(model, 'right', strike.position_m, strike.wrist_angle_rad, t, dz)
    assert detect_impacts(model, t, q) == []


def test_stick_turning_just_above_the_pad_hits_at_its_lowest_point(model):
    strike = model.kit.by_name('snare').strikes['right']
    t, dz, _ = _stroke(dip_m=-0.005)  # a lagging arm: lowest point 5 mm above the pad
    q = _arm_trajectory(model, 'right', strike.position_m, strike.wrist_angle_rad, t, dz)
    impacts = detect_impacts(model, t, q)
    assert [impact.instrument for impact in impacts] == ['snare']
    lowest_s = t[int(np.argmin(dz))]
    assert impacts[0].time_s == pytest.approx(lowest_s, abs=SAMPLE_S)


def test_stroke_outside_every_pad_gives_nothing(model):
    strike = model.kit.by_name('snare').strikes['right']
    t, dz, _ = _stroke()
    off_kit = strike.position_m + np.array([0.05, -0.15, 0.0])  # between the pads
    q = _arm_trajectory(model, 'right', off_kit, strike.wrist_angle_rad, t, dz)
    assert detect_impacts(model, t, q) == []


def test_small_bounce_is_one_impact_and_second_stroke_another(model):
    strike = model.kit.by_name('floor').strikes['right']
    t1, dz1, t_first = _stroke()
    half = len(t1) // 2
    # Down to the bottom, a rebound to 5 mm above the pad (below the 1 cm re-arm height) and
    # down through it again, back up, then a second full stroke.
    bounce = np.arange(1, 61) * SAMPLE_S
    dz_bounce = -DIP_M + (DIP_M + 0.005) * np.sin(math.pi * bounce / bounce[-1])
    t2, dz2, t_second = _stroke()
    pieces_t = [t1[:half], t1[half - 1] + bounce]
    pieces_t.append(pieces_t[-1][-1] + SAMPLE_S + t1[half:] - t1[half])
    shift = pieces_t[-1][-1] + SAMPLE_S - t2[0]
    pieces_t.append(t2 + shift)
    t = np.concatenate(pieces_t)
    dz = np.concatenate((dz1[:half], dz_bounce, dz1[half:], dz2))
    assert np.sum((dz[:-1] > 0) & (dz[1:] <= 0)) == 3  # three downward crossings of the pad
    q = _arm_trajectory(model, 'right', strike.position_m, strike.wrist_angle_rad, t, dz)

    impacts = detect_impacts(model, t, q)

    assert [impact.instrument for impact in impacts] == ['floor', 'floor']
    assert abs(impacts[0].time_s - t_first) < TIME_TOLERANCE_S
    assert abs(impacts[1].time_s - (t_second + shift)) < TIME_TOLERANCE_S


def test_streaming_in_chunks_equals_offline(model):
    strike = model.kit.by_name('snare').strikes['left']
    t1, dz1, _ = _stroke()
    t = np.concatenate((t1, t1 + STROKE_S, t1 + 2 * STROKE_S))
    dz = np.tile(dz1, 3)
    q = _arm_trajectory(model, 'left', strike.position_m, strike.wrist_angle_rad, t, dz)
    offline = detect_impacts(model, t, q)

    detector = ImpactDetector(model)
    streamed = []
    bounds = [0, 1, 7, 150, 151, 400, 777, 1000, len(t)]
    for low, high in zip(bounds[:-1], bounds[1:], strict=True):
        streamed += detector.feed(t[low:high], q[low:high])

    assert len(offline) == 3
    assert streamed == offline


def _fed_in_two(model, t, q, split: int) -> list:
    detector = ImpactDetector(model)
    return detector.feed(t[:split], q[:split]) + detector.feed(t[split:], q[split:])


@pytest.mark.parametrize('after_lowest', [-2, -1, 0, 1, 2, 3])
def test_a_turn_just_short_of_the_pad_or_the_press_angle_is_found_wherever_a_batch_ends(
    model, after_lowest
):
    """A turning point needs the sample after it: one that is the last sample of a batch must
    be looked at with the next batch (the device loop hands over 20 ms batches)."""
    strike = model.kit.by_name('snare').strikes['right']
    t, dz, _ = _stroke(dip_m=-0.005)  # lowest point 5 mm above the pad
    q = _arm_trajectory(model, 'right', strike.position_m, strike.wrist_angle_rad, t, dz)
    split = int(np.argmin(dz)) + 1 + after_lowest  # 0: the lowest sample ends the first batch
    assert _fed_in_two(model, t, q, split) == detect_impacts(model, t, q)
    assert len(detect_impacts(model, t, q)) == 1

    t, q, _ = _pedal_strokes(model, -19.5, 1)  # turns 0.5 deg short of the press angle
    split = int(np.argmin(q[:, model.joint('right_pedal').index])) + 1 + after_lowest
    assert _fed_in_two(model, t, q, split) == detect_impacts(model, t, q)
    assert [impact.instrument for impact in detect_impacts(model, t, q)] == ['bass']


@pytest.mark.parametrize(
    ('pedal_deg', 'expected'), [(-3.0, 'open hihat'), (-13.0, 'closed hihat')]
)
def test_hihat_pedal_selects_open_or_closed(model, pedal_deg, expected):
    strike = model.kit.by_name('closed hihat').strikes['left']
    t, dz, _ = _stroke(lift_m=0.1)
    q = _arm_trajectory(model, 'left', strike.position_m, strike.wrist_angle_rad, t, dz)
    q[:, model.joint('left_pedal').index] = math.radians(pedal_deg)
    assert [impact.instrument for impact in detect_impacts(model, t, q)] == [expected]


def _pedal_strokes(model, press_deg, strokes, joint='right_pedal'):
    """Upstream bass strokes: half-cosine down to the press angle, half-cosine back up."""
    interval = 0.5
    t = np.arange(0.0, strokes * interval, SAMPLE_S) + 0.0004
    q = np.tile(model.poses['ready'], (len(t), 1))
    local = (t % interval) / interval
    down = local < 0.5
    angle = np.where(
        down,
        (1 - np.cos(math.pi * local / 0.5)) / 2,
        (1 + np.cos(math.pi * (local - 0.5) / 0.5)) / 2,
    )
    q[:, model.joint(joint).index] = math.radians(press_deg) * angle
    hits = 0.0004 + interval * (np.arange(strokes) + 0.5)
    return t, q, hits


def test_bass_pedal_stroke_end_gives_one_hit_per_stroke(model):
    t, q, hits = _pedal_strokes(model, -20.0, 3)
    impacts = detect_impacts(model, t, q)
    assert [(i.instrument, i.limb) for i in impacts] == [('bass', Limb.RIGHT_FOOT)] * 3
    np.testing.assert_allclose([i.time_s for i in impacts], hits, atol=TIME_TOLERANCE_S)


def test_bass_pedal_short_of_its_stroke_end_gives_nothing(model):
    t, q, _ = _pedal_strokes(model, -15.0, 2)
    assert detect_impacts(model, t, q) == []


def test_hihat_close_event_is_optional(model):
    t, q, hits = _pedal_strokes(model, -13.0, 2, joint='left_pedal')
    assert detect_impacts(model, t, q) == []
    impacts = detect_impacts(model, t, q, ImpactConfig(hihat_close_event=True))
    assert [(i.instrument, i.limb) for i in impacts] == [('closed hihat', Limb.LEFT_FOOT)] * 2
    np.testing.assert_allclose([i.time_s for i in impacts], hits, atol=TIME_TOLERANCE_S)


def test_bad_input_is_refused_with_a_clear_error(model):
    detector = ImpactDetector(model)
    with pytest.raises(ValueError, match='shape'):
        detector.feed([0.0, 0.001], np.zeros((2, 3)))
    q = np.tile(model.poses['ready'], (2, 1))
    with pytest.raises(ValueError, match='decrease'):
        detector.feed([0.002, 0.001], q)
    q[1, 0] = math.nan
    with pytest.raises(ValueError, match='finite'):
        detector.feed([0.003, 0.004], q)
