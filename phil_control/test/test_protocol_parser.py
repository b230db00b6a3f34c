"""Tests of the protocol line parser: every opcode and argument form, and every error."""

from __future__ import annotations

import math

import pytest

from phil_control.core.protocol import (
    Estop,
    Gesture,
    GetStatus,
    Hit,
    Look,
    Move,
    Opcode,
    ParseError,
    Pause,
    Play,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Pose,
    Protocol,
    ProtocolVocabulary,
    Quit,
    Ready,
    Reset,
    Resume,
    Start,
    format_command,
    parse_line,
    validate_command,
)
from phil_description.core import default_robot_model

MODEL = default_robot_model()
VOCABULARY = ProtocolVocabulary.from_robot_model(MODEL, look_joints=('head_yaw', 'head_pitch'))


def parse(line):
    return parse_line(line, VOCABULARY)


def error(line):
    result = parse(line)
    assert isinstance(result, ParseError), f'{line!r} parsed as {result!r}'
    return result


@pytest.mark.parametrize(
    ('line', 'expected'),
    [
        ('START', Start()),
        ('READY', Ready()),
        ('QUIT', Quit()),
        ('Q', Quit()),
        ('q', Quit()),
        ('PAUSE', Pause()),
        ('RESUME', Resume()),
        ('GET_STATUS', GetStatus()),
        ('ESTOP', Estop()),
        ('RESET', Reset()),
        ('start', Start()),
        ('Ready', Ready()),
        ('get_status', GetStatus()),
        ('  START \r\n', Start()),
        ('\tREADY\t', Ready()),
        ('START|ignored', Start()),
    ],
)
def test_commands_without_arguments(line, expected):
    assert parse(line) == expected


def test_look_takes_degrees_and_gives_radians():
    assert parse('LOOK|-30|10') == Look(math.radians(-30), math.radians(10))
    assert parse('look | 0.0000 | 12.5000 ') == Look(0.0, math.radians(12.5))


@pytest.mark.parametrize('name', ['nod', 'shake', 'wave', 'hi', 'hurray', 'happy'])
def test_every_upstream_gesture(name):
    assert parse(f'GESTURE|{name}') == Gesture(name)


@pytest.mark.parametrize('name', list(MODEL.poses))
def test_every_model_pose(name):
    assert parse(f'POSE|{name}') == Pose(name)


@pytest.mark.parametrize(
    'name',
    [
        'bass',
        'snare',
        'floor',
        'mid',
        'top',
        'closed hihat',
        'ride',
        'right crash',
        'left crash',
        'open hihat',
    ],
)
def test_every_upstream_hit_instrument_with_its_spaces(name):
    assert parse(f'HIT|{name}') == Hit(name)
    assert parse(f'HIT| {name} ') == Hit(name)


def test_play_ids_are_free_text_unless_the_vocabulary_lists_them():
    assert parse('PLAY|BF') == Play('BF')
    listed = ProtocolVocabulary.from_robot_model(MODEL, play_ids={'BF', 'TI'})
    assert parse_line('PLAY|TI', listed) == Play('TI')
    rejected = parse_line('PLAY|XX', listed)
    assert isinstance(rejected, ParseError)
    assert rejected.argument == 1 and 'BF, TI' in rejected.reason


@pytest.mark.parametrize(
    'path',
    [
        '/etc/passwd',
        '../../../../etc/hostname',
        '/proc/self/environ',
        'scores/rock/rock_beat.txt',
        'rock\\..\\x',
        '..',
    ],
)
def test_a_path_is_never_a_play_id(path):
    rejected = parse(f'PLAY|{path}')
    assert isinstance(rejected, ParseError) and rejected.argument == 1
    assert 'is a path; PLAY takes a play-list id' in rejected.reason


def test_move_single_joint_default_duration():
    assert parse('MOVE|right_wrist|45') == Move((('right_wrist', math.radians(45)),), None)


def test_move_single_joint_with_duration():
    assert parse('MOVE|waist|-30|2.0') == Move((('waist', math.radians(-30)),), 2.0)


def test_move_several_joints_as_the_reference_client_writes_them():
    line = 'MOVE|waist|10.0000|right_elbow|45.5000|head_pitch|-5.0000|3.0000'
    assert parse(line) == Move(
        (
            ('waist', math.radians(10)),
            ('right_elbow', math.radians(45.5)),
            ('head_pitch', math.radians(-5)),
        ),
        3.0,
    )


def test_move_even_count_has_no_duration():
    result = parse('MOVE|waist|10|right_elbow|45')
    assert isinstance(result, Move) and result.duration_s is None and len(result.targets) == 2


@pytest.mark.parametrize(
    ('line', 'expected'),
    [
        ('PLAY_CTRL|stop', PlayCtrlStop()),
        ('PLAY_CTRL|speed|1.20', PlayCtrlSpeed(1.2)),
        ('PLAY_CTRL|speed|0.5', PlayCtrlSpeed(0.5)),
        ('play_ctrl | speed | 2.00', PlayCtrlSpeed(2.0)),
        ('PLAY_CTRL|speed|3', PlayCtrlSpeed(2.0, requested=3.0)),
        ('PLAY_CTRL|speed|0.1', PlayCtrlSpeed(0.5, requested=0.1)),
        ('PLAY_CTRL|speed|1e308', PlayCtrlSpeed(2.0, requested=1e308)),
    ],
)
def test_play_ctrl_forms_and_upstream_clamping(line, expected):
    result = parse(line)
    assert result == expected
    assert (
        result.was_clamped == (expected.requested is not None)
        if isinstance(result, PlayCtrlSpeed)
        else True
    )


def test_protocol_versions():
    assert parse('PROTOCOL|2') == Protocol(2)
    assert parse('protocol|1') == Protocol(1)
    assert error('PROTOCOL|3').argument == 1
    assert 'not an integer' in error('PROTOCOL|two').reason
    assert error('PROTOCOL').argument == 1


@pytest.mark.parametrize(
    ('line', 'count'),
    [
        ('LOOK', 0),
        ('LOOK|10', 1),
        ('GESTURE', 0),
        ('MOVE|waist', 1),
        ('MOVE', 0),
        ('POSE', 0),
        ('HIT', 0),
        ('PLAY', 0),
        ('PLAY_CTRL', 0),
    ],
)
def test_minimum_argument_counts(line, count):
    result = error(line)
    assert result.opcode == line.split('|')[0]
    assert f'got {count}' in result.reason
    assert result.argument == count + 1


@pytest.mark.parametrize(
    ('line', 'argument', 'words'),
    [
        ('LOOK|nan|0', 1, 'pan'),
        ('LOOK|0|NaN', 2, 'tilt'),
        ('LOOK|inf|0', 1, 'pan'),
        ('LOOK|0|-Infinity', 2, 'tilt'),
        ('LOOK|1e308|0', 1, 'outside'),
        ('LOOK|0|1e400', 2, 'not a finite'),
        ('LOOK|0x10|0', 1, 'not a decimal'),
        ('LOOK|1_0|0', 1, 'not a decimal'),
        ('LOOK||0', 1, 'pan'),
        ('LOOK|100|0', 1, 'head_yaw'),
        ('MOVE|waist|nan', 2, "angle of 'waist'"),
        ('MOVE|waist|1e308|1.0', 2, 'outside'),
        ('MOVE|waist|10|inf', 3, 'duration_s'),
        ('MOVE|waist|10|0', 3, '(0, 60]'),
        ('MOVE|waist|10|-1', 3, 'duration_s'),
        ('MOVE|waist|10|61', 3, '(0, 60]'),
        ('MOVE|waist|10|right_elbow|abc', 4, "angle of 'right_elbow'"),
        ('MOVE|waist|10|waist|20', 3, 'more than once'),
        ('MOVE|waist|95', 2, '[-90, 90]'),
        ('PLAY_CTRL|speed|nan', 2, 'factor'),
        ('PLAY_CTRL|speed', 2, 'missing'),
        ('PLAY_CTRL|Stop', 1, 'valid: stop, speed'),
    ],
)
def test_bad_numbers_name_their_argument(line, argument, words):
    result = error(line)
    assert result.argument == argument
    assert words in result.reason
    assert f'argument {argument}' in result.reason


def test_unknown_joint_lists_the_model_joints():
    result = error('MOVE|elbow|10')
    assert result.opcode == 'MOVE' and result.argument == 1
    assert "unknown joint 'elbow'" in result.reason
    assert all(name in result.reason for name in MODEL.joint_names)


@pytest.mark.parametrize(
    ('line', 'kind'),
    [
        ('POSE|sleep', 'pose'),
        ('GESTURE|dance', 'gesture'),
        ('HIT|Snare', 'instrument'),
        ('HIT|closed  hihat', 'instrument'),
        ('HIT|crash', 'instrument'),
        ('POSE|', 'pose'),
        ('PLAY|', 'play id'),
    ],
)
def test_unknown_names_list_the_valid_ones(line, kind):
    result = error(line)
    assert result.argument == 1 and f'({kind})' in result.reason


def test_unknown_instrument_reason_lists_all_ten():
    reason = error('HIT|cowbell').reason
    assert all(name in reason for name in MODEL.kit.names)


def test_unknown_and_empty_opcodes():
    assert error('JUMP|1').opcode == 'JUMP'
    assert 'unknown opcode' in error('JUMP|1').reason
    assert error('').opcode == '' and error('   \r\n').reason == 'empty line'
    assert error('|START').opcode == ''


def test_control_characters_and_bad_utf8_are_errors():
    assert 'control character U+0000' in error('HIT|sn\x00are').reason
    assert 'UTF-8' in error(b'HIT|\xff\xfe').reason
    assert parse(b'HIT|snare') == Hit('snare')
    assert error('X' * 5000).opcode.startswith('XXX') and len(error('X' * 5000).opcode) <= 40


def test_opcodes_are_ascii_only():
    assert error('\u017ftart').opcode == 'TART'  # long s upper-cases to S
    assert 'unknown opcode' in error('qu\u0131t').reason  # dotless i upper-cases to I


def test_quit_alias_only_as_the_whole_opcode():
    assert error('QQ').opcode == 'QQ'
    assert parse('q|anything') == Quit()


def test_format_command_writes_the_wire_form():
    assert format_command(Move((('waist', math.radians(10)),), 2.0)) == 'MOVE|waist|10|2'
    assert format_command(Look(math.radians(-30), 0.0)) == 'LOOK|-30|0'
    assert format_command(PlayCtrlSpeed(1.25)) == 'PLAY_CTRL|speed|1.25'
    assert format_command(Hit('closed hihat')) == 'HIT|closed hihat'
    assert format_command(Quit()) == 'QUIT'
    with pytest.raises(TypeError):
        format_command('START')


def test_validate_command_checks_typed_commands_from_elsewhere():
    assert validate_command(Look(0.0, 0.1), VOCABULARY) is None
    bad = validate_command(Move((('waist', math.nan),), None), VOCABULARY)
    assert bad is not None and bad.argument == 2 and bad.opcode == Opcode.MOVE.value
    assert validate_command(Move((), 1.0), VOCABULARY) is not None
    assert validate_command(PlayCtrlSpeed(5.0), VOCABULARY).argument == 2
    assert validate_command(Pose('nowhere'), VOCABULARY).argument == 1


def test_vocabulary_rejects_inconsistent_configuration():
    with pytest.raises(ValueError, match='joint_names is empty'):
        ProtocolVocabulary(joint_names=(), pose_names=('home',))
    with pytest.raises(ValueError, match='unknown joint'):
        ProtocolVocabulary(
            joint_names=('a',), pose_names=('home',), joint_limits_rad={'b': (0.0, 1.0)}
        )
    with pytest.raises(ValueError, match='look_joints'):
        ProtocolVocabulary(joint_names=('a',), pose_names=('home',), look_joints=('a', 'b'))
    with pytest.raises(ValueError, match='max_duration_s'):
        ProtocolVocabulary(joint_names=('a',), pose_names=('home',), max_duration_s=math.inf)
