"""Robot states, refused commands, decisions and the behavior configuration."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from phil_control.core.behavior.actions import Action
from phil_control.core.play.timeline import ResumePoint
from phil_control.core.profiles import Profile


class RobotState(enum.Enum):
    """What the robot is doing; the value is the name GET_STATUS reports.

    STANDBY, INIT, IDLE, PLAYING and SHUTTINGDOWN are upstream's; FAULT and ESTOP are latched
    from the hardware (or the ESTOP command) and left with RESET.
    """

    STANDBY = 'STANDBY'
    INIT = 'INIT'
    IDLE = 'IDLE'
    PLAYING = 'PLAYING'
    SHUTTINGDOWN = 'SHUTTINGDOWN'
    FAULT = 'FAULT'
    ESTOP = 'ESTOP'


#: States latched by a hardware problem or an emergency stop.
LATCHED_STATES = frozenset({RobotState.FAULT, RobotState.ESTOP})


@dataclass(frozen=True)
class RefusedCommand:
    """A command the state machine refused (kept as its last rejection).

    Attributes:
        time_s: Clock time of the refusal.
        opcode: The command's opcode name.
        state: The state it was refused in.
        reason: Why.
    """

    time_s: float
    opcode: str
    state: RobotState
    reason: str


@dataclass(frozen=True)
class BehaviorConfig:
    """Pose names and motion times of the command semantics (defaults = upstream Gen-2).

    Attributes:
        start_pose: Pose START moves to (torque on, pins still in).
        shutdown_pose: Pose QUIT moves to; `POSE|<shutdown_pose>` also ends in SHUTTINGDOWN.
        start_duration_s: START motion time (profile `start_profile`).
        quit_duration_s: QUIT motion time (profile `quit_profile`).
        pose_duration_s: POSE motion time (profile `pose_profile`).
        look_duration_s: LOOK motion time (profile `move_profile`).
        move_duration_s: MOVE motion time when the command gives none (profile `move_profile`).
        pose_names: The model's pose names; when given, the two roles above must be among them.

    Raises:
        ValueError: A duration is not positive and finite, or a role pose is not in `pose_names`.
    """

    start_pose: str = 'home'
    shutdown_pose: str = 'shutdown'
    start_duration_s: float = 3.0
    quit_duration_s: float = 3.0
    pose_duration_s: float = 3.0
    look_duration_s: float = 1.0
    move_duration_s: float = 3.0
    start_profile: Profile = Profile.COSINE
    quit_profile: Profile = Profile.COSINE
    pose_profile: Profile = Profile.TRAPEZOIDAL
    move_profile: Profile = Profile.COSINE
    pose_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for label in (
            'start_duration_s',
            'quit_duration_s',
            'pose_duration_s',
            'look_duration_s',
            'move_duration_s',
        ):
            value = getattr(self, label)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'{label} must be positive and finite, got {value}')
        if self.pose_names is not None:
            object.__setattr__(self, 'pose_names', tuple(self.pose_names))
            for label in ('start_pose', 'shutdown_pose'):
                if getattr(self, label) not in self.pose_names:
                    raise ValueError(
                        f'{label} {getattr(self, label)!r} is not one of the '
                        f'poses {", ".join(self.pose_names)}'
                    )


@dataclass(frozen=True)
class Decision:
    """The outcome of a command or an event.

    Attributes:
        accepted: Command: it was accepted. Event: it changed something.
        reason: Why it was rejected or ignored; for accepted commands an optional note
            (e.g. that a speed was clamped), else ''.
        actions: Effect requests to carry out, in order.
        state: The state afterwards.
    """

    accepted: bool
    reason: str
    actions: tuple[Action, ...]
    state: RobotState


@dataclass(frozen=True)
class MachineSnapshot:
    """Everything GET_STATUS and `/phil/status` need from the machine.

    Attributes:
        state: Current state.
        started: A trajectory exists (upstream `send_active`); GET_STATUS lists joint angles
            only then.
        speed: Commanded playback speed factor.
        resume_point: Saved resume point, if any.
        fault_reason: Cause of the latched FAULT or ESTOP ('' when not latched).
        last_rejection: The last rejected command, if any.
        state_since_s: Clock time the state was entered.
        finished: The shutdown has completed.
    """

    state: RobotState
    started: bool
    speed: float
    resume_point: ResumePoint | None
    fault_reason: str
    last_rejection: RefusedCommand | None
    state_since_s: float
    finished: bool
