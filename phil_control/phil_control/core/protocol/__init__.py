"""The brain's text protocol (TCP port 1951): typed commands, parser, status line, framing.

Typical use::

    vocabulary = ProtocolVocabulary.from_robot_model(default_robot_model())
    result = parse_line('MOVE|waist|10.0000|2.0000', vocabulary)
    if isinstance(result, ParseError):
        print(result.reason)           # names the argument and the valid choices
"""

from __future__ import annotations

from phil_control.core.protocol.commands import (
    ACK_PROTOCOL_VERSION,
    GESTURE_NAMES,
    MOTION_COMMANDS,
    SILENT_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
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
    format_command,
    format_number,
)
from phil_control.core.protocol.framing import (
    DEFAULT_MAX_LINE_BYTES,
    FramedLine,
    LineFramer,
    LineTooLong,
)
from phil_control.core.protocol.parser import ParseError, parse_line, validate_command
from phil_control.core.protocol.status import StatusReport, format_status, parse_status
from phil_control.core.protocol.vocabulary import LOOK_JOINTS, ProtocolVocabulary

__all__ = [
    'ACK_PROTOCOL_VERSION',
    'DEFAULT_MAX_LINE_BYTES',
    'GESTURE_NAMES',
    'MOTION_COMMANDS',
    'SILENT_PROTOCOL_VERSION',
    'SUPPORTED_PROTOCOL_VERSIONS',
    'Command',
    'Estop',
    'FramedLine',
    'Gesture',
    'GetStatus',
    'Hit',
    'LineFramer',
    'LineTooLong',
    'Look',
    'Move',
    'Opcode',
    'ParseError',
    'Pause',
    'Play',
    'PlayCtrlSpeed',
    'PlayCtrlStop',
    'Pose',
    'Protocol',
    'LOOK_JOINTS',
    'ProtocolVocabulary',
    'Quit',
    'Ready',
    'Reset',
    'Resume',
    'Start',
    'StatusReport',
    'format_command',
    'format_number',
    'format_status',
    'parse_line',
    'parse_status',
    'validate_command',
]
