"""Typed commands of the brain's text protocol (TCP port 1951) and their wire form.

A command line is `OPCODE|arg|...`. On the wire angles are degrees; in these dataclasses they are
radians (names end in `_rad`), durations are seconds. `format_command` writes the wire form of a
command; `phil_control.core.protocol.parser.parse_line` reads it back.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import ClassVar, Union

from phil_control.core.score.windows import MAX_SPEED, MIN_SPEED

#: `PROTOCOL|<version>`: 1 = upstream (silent on commands), 2 = acknowledged (OK/ERR per line).
SILENT_PROTOCOL_VERSION = 1
ACK_PROTOCOL_VERSION = 2
SUPPORTED_PROTOCOL_VERSIONS = (SILENT_PROTOCOL_VERSION, ACK_PROTOCOL_VERSION)

#: Gesture names upstream knows (`wave` = `hi`, `hurray` = `happy`).
GESTURE_NAMES = ('nod', 'shake', 'wave', 'hi', 'hurray', 'happy')

#: The short alias of QUIT.
QUIT_ALIAS = 'Q'
#: HIT velocities (upstream's 1..7) and the one a plain `HIT|<instrument>` strikes with.
HIT_VELOCITIES = range(1, 8)
DEFAULT_HIT_VELOCITY = 5
#: HIT hands; '' = upstream's hand rule.
HIT_HANDS = ('', 'right', 'left')


class Opcode(enum.Enum):
    """First field of a command line (upper case on the wire; parsing ignores case)."""

    START = 'START'
    READY = 'READY'
    QUIT = 'QUIT'
    LOOK = 'LOOK'
    GESTURE = 'GESTURE'
    MOVE = 'MOVE'
    POSE = 'POSE'
    HIT = 'HIT'
    PLAY = 'PLAY'
    PLAY_CTRL = 'PLAY_CTRL'
    PAUSE = 'PAUSE'
    RESUME = 'RESUME'
    GET_STATUS = 'GET_STATUS'
    ESTOP = 'ESTOP'
    RESET = 'RESET'
    PROTOCOL = 'PROTOCOL'


@dataclass(frozen=True)
class Start:
    """Torque on and move to the start pose (STANDBY -> INIT)."""

    opcode: ClassVar[Opcode] = Opcode.START


@dataclass(frozen=True)
class Ready:
    """The locking pins are out: allow motions (INIT -> IDLE)."""

    opcode: ClassVar[Opcode] = Opcode.READY


@dataclass(frozen=True)
class Quit:
    """Go to the shutdown pose and shut down (`QUIT` or `Q`)."""

    opcode: ClassVar[Opcode] = Opcode.QUIT


@dataclass(frozen=True)
class Look:
    """Turn the head: pan = head yaw, tilt = head pitch (absolute joint angles, rad)."""

    pan_rad: float
    tilt_rad: float
    opcode: ClassVar[Opcode] = Opcode.LOOK


@dataclass(frozen=True)
class Gesture:
    """Perform a named gesture (one of `GESTURE_NAMES`)."""

    name: str
    opcode: ClassVar[Opcode] = Opcode.GESTURE


@dataclass(frozen=True)
class Move:
    """Move joints to absolute angles in one synchronized motion.

    Attributes:
        targets: (joint name, angle rad) pairs, each joint at most once, in wire order.
        duration_s: Motion time; None = the default (3.0 s upstream).
        profile: Velocity profile name (`phil_control.core.profiles.Profile`); '' = the
            default. Not on the wire: a ROS goal sets it.
    """

    targets: tuple[tuple[str, float], ...]
    duration_s: float | None = None
    profile: str = ''
    opcode: ClassVar[Opcode] = Opcode.MOVE


@dataclass(frozen=True)
class Pose:
    """Move to a named pose of the robot model."""

    name: str
    opcode: ClassVar[Opcode] = Opcode.POSE


@dataclass(frozen=True)
class Hit:
    """Strike one instrument once (an exact HIT name such as `closed hihat`).

    Attributes:
        instrument: The HIT name.
        velocity: Strike velocity 1..7 (upstream's default 5).
        hand: 'right', 'left', or '' for upstream's hand rule. Velocity and hand are not on
            the wire: a ROS goal sets them.
    """

    instrument: str
    velocity: int = DEFAULT_HIT_VELOCITY
    hand: str = ''
    opcode: ClassVar[Opcode] = Opcode.HIT


@dataclass(frozen=True)
class Play:
    """Play the score of a play-list id.

    Attributes:
        play_id: The play-list id.
        speed: Initial speed factor (the playback speed range). Not on the wire, nor the
            rest: a ROS goal sets them.
        start_bar: 0 = from the beginning, else the first bar played.
        improv: Play the score's genre folder back to back until stopped.
    """

    play_id: str
    speed: float = 1.0
    start_bar: int = 0
    improv: bool = False
    opcode: ClassVar[Opcode] = Opcode.PLAY


@dataclass(frozen=True)
class PlayCtrlStop:
    """`PLAY_CTRL|stop`: end the play and drop its resume point."""

    opcode: ClassVar[Opcode] = Opcode.PLAY_CTRL


@dataclass(frozen=True)
class PlayCtrlSpeed:
    """`PLAY_CTRL|speed|x`: set the playback speed factor.

    Attributes:
        speed: The factor applied, clamped to the playback speed range
            (`phil_control.core.score.windows.MIN_SPEED`, `MAX_SPEED`).
        requested: The factor on the wire when it differed from `speed`, else None.
    """

    speed: float
    requested: float | None = None
    opcode: ClassVar[Opcode] = Opcode.PLAY_CTRL

    @classmethod
    def asked(cls, requested: float) -> PlayCtrlSpeed:
        """The command for a requested factor, clamped to the playback speed range (a factor
        that is not a finite number stays as it is, for `validate_command` to refuse)."""
        speed = (
            min(max(requested, MIN_SPEED), MAX_SPEED) if math.isfinite(requested) else requested
        )
        return cls(speed, requested if speed != requested else None)

    @property
    def was_clamped(self) -> bool:
        """True when the requested factor was outside the allowed range."""
        return self.requested is not None and self.requested != self.speed


@dataclass(frozen=True)
class Pause:
    """Pause the play, keeping a resume point."""

    opcode: ClassVar[Opcode] = Opcode.PAUSE


@dataclass(frozen=True)
class Resume:
    """Continue a paused play from its resume point (silently, as upstream)."""

    opcode: ClassVar[Opcode] = Opcode.RESUME


@dataclass(frozen=True)
class GetStatus:
    """Ask for the `STATUS|...` line (answered at once, in any state)."""

    opcode: ClassVar[Opcode] = Opcode.GET_STATUS


@dataclass(frozen=True)
class Estop:
    """Emergency stop: halt all motion and latch ESTOP until RESET."""

    opcode: ClassVar[Opcode] = Opcode.ESTOP


@dataclass(frozen=True)
class Reset:
    """Leave FAULT or ESTOP once the hardware reports the cause gone."""

    opcode: ClassVar[Opcode] = Opcode.RESET


@dataclass(frozen=True)
class Protocol:
    """Switch this connection's protocol version (`PROTOCOL|2` = acknowledged mode)."""

    version: int
    opcode: ClassVar[Opcode] = Opcode.PROTOCOL


Command = Union[
    Start,
    Ready,
    Quit,
    Look,
    Gesture,
    Move,
    Pose,
    Hit,
    Play,
    PlayCtrlStop,
    PlayCtrlSpeed,
    Pause,
    Resume,
    GetStatus,
    Estop,
    Reset,
    Protocol,
]

#: Commands that move the robot; upstream accepts them only in IDLE.
MOTION_COMMANDS = (Look, Gesture, Move, Pose, Hit, Play, Resume)


def format_number(value: float) -> str:
    """Write a number the short way: up to 6 decimals, no trailing zeros (`45`, `-30.5`)."""
    text = f'{value:.6f}'.rstrip('0').rstrip('.')
    return '0' if text in ('', '-0', '-') else text


def format_command(command: Command) -> str:
    """Write the wire form of a command, without the line terminator.

    Angles are written in degrees, numbers with `format_number`; `parse_line` of the result gives
    the command back (angles to within 1e-6 degree).

    Raises:
        TypeError: `command` is not one of the command types.
    """
    opcode = getattr(command, 'opcode', None)
    if not isinstance(opcode, Opcode):
        raise TypeError(f'not a protocol command: {command!r}')
    fields: list[str] = [opcode.value]
    if isinstance(command, Look):
        fields += [
            format_number(math.degrees(command.pan_rad)),
            format_number(math.degrees(command.tilt_rad)),
        ]
    elif isinstance(command, Move):
        for joint, angle_rad in command.targets:
            fields += [joint, format_number(math.degrees(angle_rad))]
        if command.duration_s is not None:
            fields.append(format_number(command.duration_s))
    elif isinstance(command, Gesture | Pose):
        fields.append(command.name)
    elif isinstance(command, Hit):
        fields.append(command.instrument)
    elif isinstance(command, Play):
        fields.append(command.play_id)
    elif isinstance(command, PlayCtrlStop):
        fields.append('stop')
    elif isinstance(command, PlayCtrlSpeed):
        fields += ['speed', format_number(command.speed)]
    elif isinstance(command, Protocol):
        fields.append(str(command.version))
    return '|'.join(fields)
