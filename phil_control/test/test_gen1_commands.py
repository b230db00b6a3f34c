"""Gen-1 commands as the 1951 protocol's: every form of FACTS 9.2, the joint map, the look
convention, the tempo scale and velocity_delta, and clear refusals that send nothing."""

from __future__ import annotations

import math

import pytest

from phil_control.core.gen1.commands import GEN1_JOINTS, MOVE_DURATION_S, Gen1Commands
from phil_control.core.protocol import ProtocolVocabulary
from phil_control.core.protocol import commands as cmd
from phil_description.core import default_robot_model


@pytest.fixture(scope='module')
def model():
    return default_robot_model()


@pytest.fixture
def gen1(model):
    return Gen1Commands(
        ProtocolVocabulary.from_robot_model(model, look_joints=('head_yaw', 'head_pitch'))
    )


def test_every_gen1_joint_is_a_urdf_joint_with_the_brains_limits(model):
    assert set(GEN1_JOINTS.values()) <= set(model.joint_names)
    assert len(set(GEN1_JOINTS.values())) == 11
    # The brain's validator limits (FACTS 9.2) lie within the URDF's (wrists: Gen-1's wider
    # -108 is refused here, as a MOVE beyond the limits is).
    lower = dict(zip(model.joint_names, model.lower_rad, strict=True))
    upper = dict(zip(model.joint_names, model.upper_rad, strict=True))
    for name, low, high in (('waist', -90, 90), ('R_arm1', 0, 150), ('L_arm1', 30, 180)):
        joint = GEN1_JOINTS[name]
        assert math.degrees(lower[joint]) == pytest.approx(low)
        assert math.degrees(upper[joint]) == pytest.approx(high)


@pytest.mark.parametrize(
    ('text', 'state', 'expected'),
    [
        ('r', 'STANDBY', (cmd.Start(),)),
        ('r', 'IDLE', (cmd.Pose('ready'),)),
        ('h', 'IDLE', (cmd.Pose('home'),)),
        ('s', 'PLAYING', (cmd.PlayCtrlStop(),)),
        ('pause', 'PLAYING', (cmd.Pause(),)),
        ('resume', 'IDLE', (cmd.Resume(),)),
        ('p:TIM', 'IDLE', (cmd.Play('TIM'),)),
        ('gesture:nod', 'IDLE', (cmd.Gesture('nod'),)),
        (' gesture:wave ', 'IDLE', (cmd.Gesture('wave'),)),
    ],
)
def test_simple_commands(gen1, text, state, expected):
    translation = gen1.translate(text, state)
    assert (translation.commands, translation.error) == (expected, '')


def test_move_names_the_urdf_joint_in_radians_over_gen1s_move_time(gen1):
    (move,) = gen1.translate('move:R_arm3, 60', 'IDLE').commands
    assert move == cmd.Move((('right_elbow', pytest.approx(math.radians(60))),), MOVE_DURATION_S)
    (move,) = gen1.translate('move:L_foot,-20.5', 'IDLE').commands
    assert move.targets[0][0] == 'left_pedal'


def test_look_turns_gen1s_convention_into_joint_angles(gen1):
    # Gen-1's wave looks at (20, 85) where ours sets head_yaw -20, head_pitch -5; its nod
    # goes to tilt 110 where ours pitches +20 (down).
    (look,) = gen1.translate('look:20,85', 'IDLE').commands
    assert (math.degrees(look.pan_rad), math.degrees(look.tilt_rad)) == pytest.approx((-20, -5))
    (look,) = gen1.translate('look:0,110', 'IDLE').commands
    assert math.degrees(look.tilt_rad) == pytest.approx(20)


def test_the_tempo_scale_sets_the_next_song_and_the_playing_one(gen1):
    idle = gen1.translate('tempo_scale:1.2', 'IDLE')
    assert idle.commands == () and 'from the next song on' in idle.note
    assert gen1.translate('p:BI', 'IDLE').commands == (cmd.Play('BI', speed=1.2),)
    playing = gen1.translate('tempo_scale:3', 'PLAYING')
    assert playing.commands == (cmd.PlayCtrlSpeed(2.0, 3.0),)
    assert 'clamped to 2' in playing.note
    # RESUME plays at 1.0: the scale is asked again after it.
    assert gen1.translate('resume', 'IDLE').commands == (cmd.Resume(), cmd.PlayCtrlSpeed(2.0, 3.0))


def test_velocity_delta_is_an_integer_kept_within_the_intensity_range(gen1):
    assert gen1.translate('velocity_delta:2', 'PLAYING').velocity_delta == 2
    clamped = gen1.translate('velocity_delta:-10', 'IDLE')
    assert clamped.velocity_delta == -6 and 'clamped to -6' in clamped.note


@pytest.mark.parametrize(
    ('text', 'error'),
    [
        ('k', 'READY once the locking pins are out'),
        ('jump', "unknown Gen-1 command 'jump'; valid: r, h, s, p:<song>"),
        ('p:', 'p: needs a song'),
        ('move:R_arm9,10', "unknown Gen-1 joint 'R_arm9'; valid: waist, R_arm1"),
        ('move:R_arm3,nan', "move:R_arm3 angle 'nan' is not a decimal number"),
        ('move:R_arm3,200', "200 deg is outside the limits of 'right_elbow' [0, 140.1] deg"),
        ('gesture:dance', "unknown gesture 'dance'; valid: nod"),
        ('look:0', "look tilt '' is not a decimal number"),
        ('look:95,90', "look pan 95 deg is outside Gen-1's -90..90 deg"),
        ('look:0,121', "look tilt 121 deg is outside Gen-1's 0..120 deg"),
        ('tempo_scale:0', 'tempo_scale must be positive'),
        ('tempo_scale:inf', "tempo_scale 'inf' is not a decimal number"),
        ('velocity_delta:1.5', "velocity_delta '1.5' is not an integer"),
        ('p:../../etc/passwd', "'../../etc/passwd' is a path; PLAY takes a play-list id"),
    ],
)
def test_bad_commands_are_refused_with_what_is_wrong_and_nothing_is_sent(gen1, text, error):
    translation = gen1.translate(text, 'IDLE')
    assert error in translation.error
    assert translation.commands == () and translation.velocity_delta is None
    assert gen1.tempo_scale == 1.0
