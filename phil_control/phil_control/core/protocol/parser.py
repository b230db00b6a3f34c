"""Parse one protocol line into a typed command, or a typed error saying what is wrong and where.

Grammar (upstream Gen-2, port 1951): `OPCODE|arg|...`; the opcode is case-insensitive (`Q` is
QUIT), arguments are case-sensitive and each field is trimmed of spaces, tabs, CR and LF. Minimum
argument counts are upstream's (LOOK 2, GESTURE 1, MOVE 2, POSE 1, HIT 1, PLAY 1, PLAY_CTRL 1,
PROTOCOL 1; none for the others); further arguments are ignored as upstream ignores them, except
for MOVE, which reads every field: `MOVE|joint|deg[|joint|deg...][|duration_s]` (an odd count
makes the last field the duration).

Stricter than upstream (which acts on whatever `std::stod` makes of a field): numbers must be
plain decimals (`-12.5`, `1e-3`; no `nan`, `inf`, hex or digit separators) and finite, angles
within +/- `max_abs_angle_deg` and the joint limits when the vocabulary has them, durations in
(0, max_duration_s], a joint at most once per MOVE, names from the vocabulary (`command_checks`
holds these checks of a typed command), no control characters. `parse_line` never raises: every
problem comes back as a `ParseError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from phil_control.core.protocol.command_checks import (
    ECHO_LIMIT,
    ArgumentError,
    argument_error,
    check_command,
    echo,
)
from phil_control.core.protocol.commands import (
    QUIT_ALIAS,
    Command,
    Estop,
    Gesture,
    GetStatus,
    Hit,
    Look,
    Move,
    Opcode,
    Pause,
    Play,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Pose,
    Protocol,
    Quit,
    Ready,
    Reset,
    Resume,
    Start,
)
from phil_control.core.protocol.vocabulary import ProtocolVocabulary

#: Characters trimmed from the line and from every field, as upstream.
FIELD_WHITESPACE = ' \t\r\n'

MIN_ARGUMENTS = {
    Opcode.LOOK: 2,
    Opcode.GESTURE: 1,
    Opcode.MOVE: 2,
    Opcode.POSE: 1,
    Opcode.HIT: 1,
    Opcode.PLAY: 1,
    Opcode.PLAY_CTRL: 1,
    Opcode.PROTOCOL: 1,
}
_ARGUMENT_NAMES = {
    Opcode.LOOK: 'pan_deg, tilt_deg',
    Opcode.GESTURE: 'name',
    Opcode.MOVE: 'joint, angle_deg',
    Opcode.POSE: 'pose',
    Opcode.HIT: 'instrument',
    Opcode.PLAY: 'play_id',
    Opcode.PLAY_CTRL: 'stop | speed, factor',
    Opcode.PROTOCOL: 'version',
}
_NO_ARGUMENT_COMMANDS = {
    Opcode.START: Start(),
    Opcode.READY: Ready(),
    Opcode.QUIT: Quit(),
    Opcode.PAUSE: Pause(),
    Opcode.RESUME: Resume(),
    Opcode.GET_STATUS: GetStatus(),
    Opcode.ESTOP: Estop(),
    Opcode.RESET: Reset(),
}
_NUMBER = re.compile(r'[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?', re.ASCII)
_INTEGER = re.compile(r'[+-]?\d+', re.ASCII)


@dataclass(frozen=True)
class ParseError:
    """A line that is not a valid command.

    Attributes:
        opcode: The upper-cased opcode field as received ('' for an empty or undecodable line;
            shortened and stripped of unprintable characters when it is not a known opcode).
        reason: What is wrong, naming the argument and the valid choices where there are some.
        argument: 1-based index of the offending argument (after the opcode), or None when the
            problem is the line or the opcode.
    """

    opcode: str
    reason: str
    argument: int | None = None


def _echo_opcode(token: str) -> str:
    clean = ''.join(c for c in token if c.isascii() and c.isprintable() and c != '|')
    return clean.upper()[:ECHO_LIMIT]


def _number(token: str, index: int, label: str) -> float:
    if not _NUMBER.fullmatch(token):
        raise argument_error(index, label, f'{echo(token)} is not a decimal number')
    value = float(token)
    if not math.isfinite(value):
        raise argument_error(index, label, f'{echo(token)} is not a finite number')
    return value


def validate_command(command: Command, vocabulary: ProtocolVocabulary) -> ParseError | None:
    """Check a typed command (from the wire or built elsewhere) against the vocabulary.

    Returns:
        None when the command is valid, else a `ParseError` whose `argument` is the position
        the offending value has on the wire.
    """
    try:
        check_command(command, vocabulary)
    except ArgumentError as error:
        return ParseError(command.opcode.value, error.reason, error.argument)
    return None


def _build(opcode: Opcode, args: list[str]) -> Command:
    command = _NO_ARGUMENT_COMMANDS.get(opcode)
    if command is not None:
        return command
    if opcode is Opcode.LOOK:
        return Look(
            math.radians(_number(args[0], 1, 'pan')), math.radians(_number(args[1], 2, 'tilt'))
        )
    if opcode is Opcode.MOVE:
        targets = []
        for first in range(0, len(args) - 1, 2):
            joint = args[first]
            label = f'angle of {joint!r}'
            targets.append((joint, math.radians(_number(args[first + 1], first + 2, label))))
        duration = _number(args[-1], len(args), 'duration_s') if len(args) % 2 else None
        return Move(tuple(targets), duration)
    if opcode is Opcode.GESTURE:
        return Gesture(args[0])
    if opcode is Opcode.POSE:
        return Pose(args[0])
    if opcode is Opcode.HIT:
        return Hit(args[0])
    if opcode is Opcode.PLAY:
        return Play(args[0])
    if opcode is Opcode.PLAY_CTRL:
        return _build_play_ctrl(args)
    if not _INTEGER.fullmatch(args[0]) or len(args[0]) > 9:
        raise argument_error(1, 'version', f'{echo(args[0])} is not an integer')
    return Protocol(int(args[0]))


def _build_play_ctrl(args: list[str]) -> Command:
    if args[0] == 'stop':
        return PlayCtrlStop()
    if args[0] == 'speed':
        if len(args) < 2:
            raise ArgumentError(2, 'argument 2 (factor) is missing: PLAY_CTRL|speed|<factor>')
        return PlayCtrlSpeed.asked(_number(args[1], 2, 'factor'))
    raise argument_error(1, 'control', f'unknown control {echo(args[0])}; valid: stop, speed')


def _decode(line: str | bytes) -> str:
    if isinstance(line, str):
        return line
    try:
        return line.decode('utf-8')
    except UnicodeDecodeError as error:
        raise ArgumentError(
            None, f'line is not UTF-8 text (bad byte at offset {error.start})'
        ) from None


def _parse(line: str | bytes, vocabulary: ProtocolVocabulary) -> Command | ParseError:
    text = _decode(line).strip(FIELD_WHITESPACE)
    if not text:
        return ParseError('', 'empty line')
    fields = [field.strip(FIELD_WHITESPACE) for field in text.split('|')]
    for column, char in enumerate(text):
        if not char.isprintable() and char != '\t':
            return ParseError(
                _echo_opcode(fields[0]),
                f'control character U+{ord(char):04X} at column {column + 1}',
            )
    # ASCII only: str.upper() would also turn e.g. 'ſtart' into 'START'.
    token = fields[0].upper() if fields[0].isascii() else ''
    if token == QUIT_ALIAS:
        token = Opcode.QUIT.value
    try:
        opcode = Opcode(token)
    except ValueError:
        valid = ', '.join(op.value for op in Opcode)
        return ParseError(
            _echo_opcode(fields[0]), f'unknown opcode {echo(fields[0])}; valid: {valid}, Q'
        )
    args = fields[1:]
    needed = MIN_ARGUMENTS.get(opcode, 0)
    if len(args) < needed:
        return ParseError(
            opcode.value,
            f'{opcode.value} needs at least {needed} argument(s) '
            f'({_ARGUMENT_NAMES[opcode]}), got {len(args)}',
            len(args) + 1,
        )
    try:
        command = _build(opcode, args)
        check_command(command, vocabulary)
    except ArgumentError as error:
        return ParseError(opcode.value, error.reason, error.argument)
    return command


def parse_line(line: str | bytes, vocabulary: ProtocolVocabulary) -> Command | ParseError:
    """Parse one command line (with or without its line terminator).

    Args:
        line: The line as text, or as bytes (decoded as UTF-8; invalid UTF-8 is an error).
        vocabulary: Valid names and ranges, usually `ProtocolVocabulary.from_robot_model(...)`.

    Returns:
        The typed command, or a `ParseError`. Never raises.
    """
    try:
        return _parse(line, vocabulary)
    except ArgumentError as error:
        return ParseError('', error.reason, error.argument)
    except Exception as error:  # bad input must never raise out of the parser
        return ParseError('', f'internal parser error: {type(error).__name__}')
