"""Checks of a typed command against the vocabulary (names, angles and joint limits, durations,
speeds, protocol versions), and the `ArgumentError` the parser and the checks raise.

An error's reason names the argument by its position on the wire and quotes at most a bounded,
printable part of what was received.
"""

from __future__ import annotations

import math

from phil_control.core.profiles import Profile
from phil_control.core.protocol.commands import (
    HIT_HANDS,
    HIT_VELOCITIES,
    SUPPORTED_PROTOCOL_VERSIONS,
    Command,
    Gesture,
    Hit,
    Look,
    Move,
    Play,
    PlayCtrlSpeed,
    Pose,
    Protocol,
)
from phil_control.core.protocol.vocabulary import ProtocolVocabulary
from phil_control.core.score.limits import quote
from phil_control.core.score.playlist import is_path_like
from phil_control.core.score.windows import MAX_SPEED, MIN_SPEED

PROFILE_NAMES = tuple(profile.value for profile in Profile)
#: Most characters of a received field a reason repeats.
ECHO_LIMIT = 40


class ArgumentError(Exception):
    """A refused argument: its 1-based position (None: the whole line) and why."""

    def __init__(self, argument: int | None, reason: str) -> None:
        super().__init__(reason)
        self.argument = argument
        self.reason = reason


def echo(text: str) -> str:
    """A field as it may appear in a reason: printable, quoted, bounded."""
    clean = ''.join(c if c.isprintable() else '?' for c in text)
    if len(clean) > ECHO_LIMIT:
        clean = clean[:ECHO_LIMIT] + '...'
    return repr(clean)


def _show(value: float) -> str:
    """A number as it may appear in a reason: at most 6 significant digits."""
    return f'{value:.6g}'


def argument_error(index: int, label: str, problem: str) -> ArgumentError:
    """The error of argument `index`, its reason naming the argument's position and label."""
    return ArgumentError(index, f'argument {index} ({label}) {problem}')


def _check_angle(
    angle_rad: float, joint: str | None, index: int, label: str, vocabulary: ProtocolVocabulary
) -> None:
    degrees = math.degrees(angle_rad)
    if not math.isfinite(angle_rad) or abs(degrees) > vocabulary.max_abs_angle_deg:
        raise argument_error(
            index,
            label,
            f'{_show(degrees)} deg is outside +/-{_show(vocabulary.max_abs_angle_deg)} deg',
        )
    limits = vocabulary.joint_limits_rad.get(joint) if joint is not None else None
    if limits is not None and not limits[0] <= angle_rad <= limits[1]:
        lower, upper = (_show(math.degrees(limit)) for limit in limits)
        raise argument_error(
            index,
            label,
            f'{_show(degrees)} deg is outside the limits of {joint!r} [{lower}, {upper}] deg',
        )


def _check_name(name: str, valid: tuple[str, ...] | frozenset[str], index: int, kind: str) -> None:
    if not name:
        raise argument_error(index, kind, 'is empty')
    if name not in valid:
        choices = ', '.join(sorted(valid) if isinstance(valid, frozenset) else valid)
        raise argument_error(index, kind, f'unknown {kind} {echo(name)}; valid: {choices}')


def check_command(command: Command, vocabulary: ProtocolVocabulary) -> None:
    """Raise `ArgumentError` for the first argument of `command` the vocabulary refuses."""
    if isinstance(command, Look):
        _check_look(command, vocabulary)
    elif isinstance(command, Move):
        _check_move(command, vocabulary)
    elif isinstance(command, Gesture):
        _check_name(command.name, vocabulary.gesture_names, 1, 'gesture')
    elif isinstance(command, Pose):
        _check_name(command.name, vocabulary.pose_names, 1, 'pose')
    elif isinstance(command, Hit):
        _check_hit(command, vocabulary)
    elif isinstance(command, Play):
        _check_play(command, vocabulary)
    elif isinstance(command, PlayCtrlSpeed):
        _check_speed(command)
    elif isinstance(command, Protocol):
        _check_protocol(command)


def _check_look(command: Look, vocabulary: ProtocolVocabulary) -> None:
    pan_joint, tilt_joint = vocabulary.look_joints or (None, None)
    _check_angle(command.pan_rad, pan_joint, 1, 'pan', vocabulary)
    _check_angle(command.tilt_rad, tilt_joint, 2, 'tilt', vocabulary)


def _check_move(command: Move, vocabulary: ProtocolVocabulary) -> None:
    if not command.targets:
        raise ArgumentError(None, 'MOVE needs at least one joint, angle_deg pair')
    seen: set[str] = set()
    for pair, (joint, angle_rad) in enumerate(command.targets):
        _check_name(joint, vocabulary.joint_names, 2 * pair + 1, 'joint')
        if joint in seen:
            raise argument_error(2 * pair + 1, 'joint', f'{joint!r} is given more than once')
        seen.add(joint)
        _check_angle(angle_rad, joint, 2 * pair + 2, f'angle of {joint!r}', vocabulary)
    if command.profile and command.profile not in PROFILE_NAMES:
        raise ArgumentError(
            None,
            f'unknown profile {echo(command.profile)}; valid: {", ".join(PROFILE_NAMES)}',
        )
    duration = command.duration_s
    if duration is not None and not (
        math.isfinite(duration) and 0.0 < duration <= vocabulary.max_duration_s
    ):
        raise argument_error(
            2 * len(command.targets) + 1,
            'duration_s',
            f'{_show(duration)} s is outside (0, {_show(vocabulary.max_duration_s)}] s',
        )


def _check_hit(command: Hit, vocabulary: ProtocolVocabulary) -> None:
    _check_name(command.instrument, vocabulary.instrument_names, 1, 'instrument')
    if command.velocity not in HIT_VELOCITIES or command.hand not in HIT_HANDS:
        raise ArgumentError(
            None,
            f'velocity must be 1..7 (got {command.velocity}) and hand right, left or '
            f'empty (got {command.hand!r})',
        )


def _check_play(command: Play, vocabulary: ProtocolVocabulary) -> None:
    if vocabulary.play_ids is not None:
        _check_name(command.play_id, vocabulary.play_ids, 1, 'play id')
    elif not command.play_id:
        raise argument_error(1, 'play id', 'is empty')
    elif is_path_like(command.play_id):  # nothing is ever opened for a network command
        raise argument_error(
            1,
            'play id',
            f'{quote(command.play_id)} is a path; PLAY takes a play-list id (e.g. rock)',
        )


def _check_speed(command: PlayCtrlSpeed) -> None:
    if not (math.isfinite(command.speed) and MIN_SPEED <= command.speed <= MAX_SPEED):
        raise argument_error(
            2,
            'factor',
            f'{_show(command.speed)} is outside [{MIN_SPEED}, {MAX_SPEED}]',
        )


def _check_protocol(command: Protocol) -> None:
    if command.version not in SUPPORTED_PROTOCOL_VERSIONS:
        supported = ', '.join(map(str, SUPPORTED_PROTOCOL_VERSIONS))
        raise argument_error(
            1, 'version', f'{command.version} is not supported; supported: {supported}'
        )
