"""Robot behavior: states, command gating and the effect requests of each command.

Typical use::

    machine = StateMachine(BehaviorConfig(pose_names=tuple(model.poses)))
    decision = machine.decide(command)        # a parsed protocol command
    if decision.accepted:
        for action in decision.actions:       # MoveToPose, StartPlay, ...
            execute(action)
    else:
        log(decision.reason)
"""

from __future__ import annotations

from phil_control.core.behavior.actions import (
    Action,
    ActivateHardware,
    EstopHardware,
    HaltMotion,
    LookAt,
    MoveJoints,
    MoveToPose,
    PausePlay,
    PerformGesture,
    ResetHardware,
    ResumePlay,
    SetPlaySpeed,
    Shutdown,
    StartPlay,
    StopPlay,
    StrikeInstrument,
)
from phil_control.core.behavior.state_machine import StateMachine
from phil_control.core.behavior.states import (
    LATCHED_STATES,
    BehaviorConfig,
    Decision,
    MachineSnapshot,
    RefusedCommand,
    RobotState,
)
from phil_control.core.play.timeline import ResumePoint

__all__ = [
    'LATCHED_STATES',
    'Action',
    'ActivateHardware',
    'BehaviorConfig',
    'Decision',
    'EstopHardware',
    'HaltMotion',
    'LookAt',
    'MachineSnapshot',
    'MoveJoints',
    'MoveToPose',
    'PausePlay',
    'PerformGesture',
    'RefusedCommand',
    'ResetHardware',
    'ResumePlay',
    'ResumePoint',
    'RobotState',
    'SetPlaySpeed',
    'Shutdown',
    'StartPlay',
    'StateMachine',
    'StopPlay',
    'StrikeInstrument',
]
