"""Effect requests the state machine hands to whoever drives the robot.

The machine never acts itself: `StateMachine.decide` and its event inputs return these requests
in the order they must be carried out. Angles are radians, times seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from phil_control.core.profiles import Profile
from phil_control.core.protocol.commands import DEFAULT_HIT_VELOCITY


@dataclass(frozen=True)
class ActivateHardware:
    """Enable the drives (torque on) holding the current pose."""


@dataclass(frozen=True)
class MoveToPose:
    """Move every joint to a named pose of the robot model."""

    pose: str
    duration_s: float
    profile: Profile


@dataclass(frozen=True)
class LookAt:
    """Move the head (pan = yaw, tilt = pitch) to absolute angles."""

    pan_rad: float
    tilt_rad: float
    duration_s: float
    profile: Profile


@dataclass(frozen=True)
class PerformGesture:
    """Run a named gesture relative to the last commanded target."""

    name: str


@dataclass(frozen=True)
class MoveJoints:
    """Move the given joints to absolute angles; the others keep their commanded target."""

    targets: tuple[tuple[str, float], ...]
    duration_s: float
    profile: Profile


@dataclass(frozen=True)
class StrikeInstrument:
    """Strike one instrument once (a HIT) with a velocity 1..7 and a hand ('' = the rule)."""

    instrument: str
    velocity: int = DEFAULT_HIT_VELOCITY
    hand: str = ''


@dataclass(frozen=True)
class StartPlay:
    """Play a play-list entry from ``start_bar`` (0 = its start, with its audio) at ``speed``;
    ``improv``: its genre folder back to back until stopped."""

    play_id: str
    speed: float = 1.0
    start_bar: int = 0
    improv: bool = False


@dataclass(frozen=True)
class ResumePlay:
    """Play a play-list entry from a bar, without audio, at ``speed``."""

    play_id: str
    bar: int
    speed: float = 1.0


@dataclass(frozen=True)
class PausePlay:
    """Abort the play after saving a resume point; the player reports it with `play_paused`."""


@dataclass(frozen=True)
class StopPlay:
    """Abort the play without a resume point; the player reports `play_finished`."""


@dataclass(frozen=True)
class SetPlaySpeed:
    """Change the playback speed factor (already clamped)."""

    speed: float


@dataclass(frozen=True)
class HaltMotion:
    """Bring all joints to rest and drop queued motion."""


@dataclass(frozen=True)
class EstopHardware:
    """Emergency-stop the hardware."""


@dataclass(frozen=True)
class ResetHardware:
    """Ask the hardware to clear its latched fault or emergency stop."""


@dataclass(frozen=True)
class Shutdown:
    """Shut the controller down (torque off, processes end)."""


Action = Union[
    ActivateHardware,
    MoveToPose,
    LookAt,
    PerformGesture,
    MoveJoints,
    StrikeInstrument,
    StartPlay,
    ResumePlay,
    PausePlay,
    StopPlay,
    SetPlaySpeed,
    HaltMotion,
    EstopHardware,
    ResetHardware,
    Shutdown,
]
