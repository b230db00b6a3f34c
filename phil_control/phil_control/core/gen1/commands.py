"""The Gen-1 brain's text commands (FACTS 9.2) as this controller's typed commands.

Each Gen-1 command becomes commands of the 1951 protocol (checked by the same
`validate_command`, so a Gen-1 move is refused where a MOVE would be) or a setting of the
bridge; the behavior planner then decides them as any other, in its state machine:

=====================  ==========================================================================
Gen-1                  here
=====================  ==========================================================================
``r``                  START in STANDBY (torque on, home), else POSE|ready
``h``                  POSE|home
``s``                  PLAY_CTRL|stop (the song ends, no resume point)
``p:<song>``           PLAY|<song> at the tempo scale (the play list's aliases name Gen-1 songs)
``move:<joint>,<deg>`` MOVE|<URDF joint>|<deg>|2.0 (`GEN1_JOINTS`; Gen-1's 2 s move time)
``gesture:<name>``     GESTURE|<name>
``look:<pan>,<tilt>``  LOOK|-pan|tilt-90 (Gen-1: tilt 90 straight ahead, 110 down; pan positive
                       turns right, ours left: its wave looks (20, 85), ours yaw -20, pitch -5)
``pause``/``resume``   PAUSE / RESUME (then PLAY_CTRL|speed|x for a tempo scale other than 1)
``tempo_scale:<x>``    the speed of the next ``p:``; while playing also PLAY_CTRL|speed|x
``velocity_delta:<n>`` the score player's ``velocity_delta`` (from the next song on)
=====================  ==========================================================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from phil_control.core.play.timeline import MAX_VELOCITY_DELTA
from phil_control.core.protocol import (
    ProtocolVocabulary,
    validate_command,
)
from phil_control.core.protocol import commands as cmd

#: Gen-1 joint name -> URDF joint (FACTS 1: the same joints, angles and zero positions).
GEN1_JOINTS = {
    'waist': 'waist',
    'R_arm1': 'right_shoulder_1',
    'L_arm1': 'left_shoulder_1',
    'R_arm2': 'right_shoulder_2',
    'R_arm3': 'right_elbow',
    'L_arm2': 'left_shoulder_2',
    'L_arm3': 'left_elbow',
    'R_wrist': 'right_wrist',
    'L_wrist': 'left_wrist',
    'R_foot': 'right_pedal',
    'L_foot': 'left_pedal',
}
#: Gen-1's move time, s.
MOVE_DURATION_S = 2.0
#: Gen-1's look ranges, degrees (its convention), and its straight-ahead tilt.
PAN_RANGE_DEG = (-90.0, 90.0)
TILT_RANGE_DEG = (0.0, 120.0)
STRAIGHT_TILT_DEG = 90.0
COMMAND_FORMS = (
    'r, h, s, p:<song>, move:<joint>,<deg>, gesture:<name>, look:<pan>,<tilt>, pause, '
    'resume, tempo_scale:<x>, velocity_delta:<n>'
)
_NUMBER = re.compile(r'[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?', re.ASCII)
_INTEGER = re.compile(r'[+-]?\d+', re.ASCII)


@dataclass(frozen=True)
class Translation:
    """What one Gen-1 command asks for.

    Attributes:
        commands: For the behavior planner, in order.
        velocity_delta: For the score player, when the command set it.
        error: Why the command is refused ('' when it is not); nothing else is set then.
        note: What was changed on the way (a clamped value), '' when nothing.
    """

    commands: tuple[cmd.Command, ...] = ()
    velocity_delta: int | None = None
    error: str = ''
    note: str = ''


class Gen1Commands:
    """Translate Gen-1 commands; holds the tempo scale of the next ``p:``.

    Args:
        vocabulary: What the 1951 parser accepts (joint limits, gestures, poses).
    """

    def __init__(self, vocabulary: ProtocolVocabulary) -> None:
        self._vocabulary = vocabulary
        self.tempo_scale = 1.0

    def translate(self, text: str, state: str) -> Translation:
        """The translation of ``text`` (one command) in robot ``state`` (RobotStatus STATE_*)."""
        name, colon, argument = text.strip().partition(':')
        name = name.strip()
        if not colon:
            simple = {
                'r': cmd.Start() if state == 'STANDBY' else cmd.Pose('ready'),
                'h': cmd.Pose('home'),
                's': cmd.PlayCtrlStop(),
                'pause': cmd.Pause(),
            }.get(name)
            if simple is not None:
                return self._checked(simple)
            if name == 'resume':  # RESUME plays at 1.0: the tempo scale holds as in Gen-1
                speed = cmd.PlayCtrlSpeed.asked(self.tempo_scale)
                return self._checked(cmd.Resume(), *((speed,) if speed.speed != 1.0 else ()))
        build = {
            'p': self._play,
            'move': self._move,
            'gesture': lambda text: self._checked(cmd.Gesture(text)),
            'look': self._look,
            'tempo_scale': lambda text: self._tempo_scale(text, state),
            'velocity_delta': self._velocity_delta,
        }.get(name if colon else '')
        if name == 'k' and not colon:
            return Translation(
                error="'k' opened Gen-1's gate at the controller's console: here the operator "
                'sends READY once the locking pins are out (phil ready, or READY on port 1951)'
            )
        if build is None:
            return Translation(
                error=f'unknown Gen-1 command {_quote(text)}; valid: {COMMAND_FORMS}'
            )
        return build(argument.strip())

    def _checked(self, *commands: cmd.Command, note: str = '') -> Translation:
        for command in commands:
            problem = validate_command(command, self._vocabulary)
            if problem is not None:
                return Translation(error=problem.reason)
        return Translation(commands, note=note)

    def _play(self, song: str) -> Translation:
        if not song:
            return Translation(error='p: needs a song: p:<song>')
        return self._checked(cmd.Play(song, speed=self._next_speed()))

    def _next_speed(self) -> float:
        return cmd.PlayCtrlSpeed.asked(self.tempo_scale).speed

    def _move(self, argument: str) -> Translation:
        joint, _, degrees = (part.strip() for part in argument.partition(','))
        if joint not in GEN1_JOINTS:
            return Translation(
                error=f'move: unknown Gen-1 joint {_quote(joint)}; valid: {", ".join(GEN1_JOINTS)}'
            )
        angle, error = _number(degrees, f'move:{joint} angle')
        if error:
            return Translation(error=error)
        target = ((GEN1_JOINTS[joint], math.radians(angle)),)
        return self._checked(cmd.Move(target, MOVE_DURATION_S))

    def _look(self, argument: str) -> Translation:
        pan_text, _, tilt_text = (part.strip() for part in argument.partition(','))
        pan, error = _number(pan_text, 'look pan')
        tilt, tilt_error = _number(tilt_text, 'look tilt')
        error = error or tilt_error
        for label, value, (low, high) in (
            ('pan', pan, PAN_RANGE_DEG),
            ('tilt', tilt, TILT_RANGE_DEG),
        ):
            if not error and not low <= value <= high:
                error = f"look {label} {value:g} deg is outside Gen-1's {low:g}..{high:g} deg"
        if error:
            return Translation(error=error)
        return self._checked(cmd.Look(math.radians(-pan), math.radians(tilt - STRAIGHT_TILT_DEG)))

    def _tempo_scale(self, argument: str, state: str) -> Translation:
        scale, error = _number(argument, 'tempo_scale')
        if not error and scale <= 0.0:
            error = f'tempo_scale must be positive, got {argument}'
        if error:
            return Translation(error=error)
        self.tempo_scale = scale
        command = cmd.PlayCtrlSpeed.asked(scale)
        note = f'tempo scale {scale:g} clamped to {command.speed:g}' if command.was_clamped else ''
        if state != 'PLAYING':
            return Translation(note=note or f'tempo scale {scale:g} from the next song on')
        return self._checked(command, note=note)

    def _velocity_delta(self, argument: str) -> Translation:
        if not _INTEGER.fullmatch(argument) or len(argument) > 6:
            return Translation(error=f'velocity_delta {_quote(argument)} is not an integer')
        delta = int(argument)
        kept = max(-MAX_VELOCITY_DELTA, min(MAX_VELOCITY_DELTA, delta))
        note = f'velocity_delta {delta} clamped to {kept}' if kept != delta else ''
        return Translation(velocity_delta=kept, note=note)


def _number(text: str, label: str) -> tuple[float, str]:
    if not _NUMBER.fullmatch(text) or not math.isfinite(float(text)):
        return 0.0, f'{label} {_quote(text)} is not a decimal number'
    return float(text), ''


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + '...')
