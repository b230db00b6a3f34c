"""Property tests of the protocol parser and framer: arbitrary input never raises, valid
commands round-trip, packet boundaries do not matter."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from phil_control.core.protocol import (
    GESTURE_NAMES,
    Command,
    Estop,
    Gesture,
    GetStatus,
    Hit,
    LineFramer,
    LineTooLong,
    Look,
    Move,
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
OPCODES = [
    'START',
    'READY',
    'QUIT',
    'Q',
    'LOOK',
    'GESTURE',
    'MOVE',
    'POSE',
    'HIT',
    'PLAY',
    'PLAY_CTRL',
    'PAUSE',
    'RESUME',
    'GET_STATUS',
    'ESTOP',
    'RESET',
    'PROTOCOL',
]
FIELD_TEXT = st.one_of(
    st.sampled_from(
        [
            '',
            ' ',
            'nan',
            'inf',
            '-1e308',
            '1e-400',
            '0',
            '45.0000',
            'stop',
            'speed',
            'waist',
            'snare',
            'closed hihat',
            'home',
            'nod',
            '2',
            '\x00',
            '\r',
        ]
    ),
    st.from_regex(r'[-+]?[0-9]{0,4}(\.[0-9]{0,5})?([eE][-+]?[0-9]{1,3})?', fullmatch=True),
    st.text(max_size=12),
)


def check_outcome(result):
    """A parse result is a command or an error with a reason; never an internal failure."""
    if isinstance(result, ParseError):
        assert result.reason and not result.reason.startswith('internal')
        assert result.argument is None or result.argument >= 1
    else:
        assert validate_command(result, VOCABULARY) is None


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(line):
    check_outcome(parse_line(line, VOCABULARY))


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data):
    check_outcome(parse_line(data, VOCABULARY))


@given(
    st.sampled_from(OPCODES),
    st.lists(FIELD_TEXT, max_size=8),
    st.sampled_from(['', ' ', '\r\n', '\t']),
)
def test_opcode_with_arbitrary_fields_never_raises(opcode, fields, padding):
    line = padding + '|'.join([opcode, *fields]) + padding
    check_outcome(parse_line(line, VOCABULARY))


def limits_deg(joint):
    spec = MODEL.joint(joint)
    return math.degrees(spec.lower_rad), math.degrees(spec.upper_rad)


@st.composite
def joint_target(draw, joint=None):
    joint = joint or draw(st.sampled_from(MODEL.joint_names))
    lower, upper = limits_deg(joint)
    degrees = draw(st.floats(lower + 1e-3, upper - 1e-3))
    return joint, math.radians(degrees)


@st.composite
def moves(draw):
    joints = draw(
        st.lists(st.sampled_from(MODEL.joint_names), min_size=1, max_size=13, unique=True)
    )
    targets = tuple(draw(joint_target(joint)) for joint in joints)
    duration = draw(st.none() | st.floats(0.01, 60.0))
    return Move(targets, duration)


@st.composite
def looks(draw):
    _, pan = draw(joint_target('head_yaw'))
    _, tilt = draw(joint_target('head_pitch'))
    return Look(pan, tilt)


VALID_COMMANDS = st.one_of(
    st.sampled_from(
        [
            Start(),
            Ready(),
            Quit(),
            Pause(),
            Resume(),
            GetStatus(),
            Estop(),
            Reset(),
            PlayCtrlStop(),
            Protocol(1),
            Protocol(2),
        ]
    ),
    looks(),
    moves(),
    st.sampled_from(GESTURE_NAMES).map(Gesture),
    st.sampled_from(list(MODEL.poses)).map(Pose),
    st.sampled_from(MODEL.kit.names).map(Hit),
    st.from_regex(r'[A-Za-z0-9_]{1,8}', fullmatch=True).map(Play),
    st.floats(0.5, 2.0).map(PlayCtrlSpeed),
)


def same_command(first: Command, second: Command) -> bool:
    if type(first) is not type(second):
        return False
    if isinstance(first, Move):
        return (
            len(first.targets) == len(second.targets)
            and all(
                a[0] == b[0] and math.isclose(a[1], b[1], abs_tol=1e-7)
                for a, b in zip(first.targets, second.targets, strict=True)
            )
            and (first.duration_s is None) == (second.duration_s is None)
            and math.isclose(first.duration_s or 0.0, second.duration_s or 0.0, abs_tol=1e-6)
        )
    if isinstance(first, Look):
        return math.isclose(first.pan_rad, second.pan_rad, abs_tol=1e-7) and math.isclose(
            first.tilt_rad, second.tilt_rad, abs_tol=1e-7
        )
    if isinstance(first, PlayCtrlSpeed):
        return math.isclose(first.speed, second.speed, abs_tol=1e-6)
    return first == second


@given(VALID_COMMANDS)
def test_valid_commands_round_trip_through_the_wire_form(command):
    assert validate_command(command, VOCABULARY) is None
    parsed = parse_line(format_command(command), VOCABULARY)
    assert not isinstance(parsed, ParseError), parsed
    assert same_command(command, parsed)


@given(VALID_COMMANDS, st.sampled_from(['lower', 'upper', 'title']))
def test_opcode_case_does_not_matter(command, case):
    opcode, _, rest = format_command(command).partition('|')
    line = getattr(opcode, case)() + ('|' + rest if rest else '')
    assert same_command(command, parse_line(line, VOCABULARY))


@settings(max_examples=50)
@given(st.lists(st.binary(max_size=700), max_size=20), st.integers(16, 256))
def test_framer_never_holds_more_than_its_bound(chunks, limit):
    framer = LineFramer(limit)
    for chunk in chunks:
        for event in framer.feed(chunk):
            assert isinstance(event, LineTooLong) or len(event.data) <= limit
        assert framer.pending_bytes <= limit


@given(st.lists(st.from_regex(r'[A-Z|0-9 .]{0,30}', fullmatch=True), max_size=10), st.data())
def test_framer_output_does_not_depend_on_packet_boundaries(lines, data):
    stream = b''.join(line.encode() + b'\r\n' for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    framer = LineFramer(64)
    received = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        received += [event.data.decode() for event in framer.feed(stream[start:end])]
    assert received == lines
