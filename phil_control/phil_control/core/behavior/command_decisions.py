"""The decisions of each group of commands once `StateMachine.decide` has routed a command:
before START has completed, QUIT, while FAULT or ESTOP is latched, play control in PLAYING and
motions in IDLE (the rules are in `state_machine`'s docstring).
"""

from __future__ import annotations

from phil_control.core.behavior.actions import (
    ActivateHardware,
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
from phil_control.core.behavior.states import Decision, RobotState
from phil_control.core.behavior.transitions import MachineTransitions
from phil_control.core.profiles import Profile
from phil_control.core.protocol.commands import (
    Command,
    Gesture,
    Hit,
    Look,
    Move,
    Play,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Pose,
    Quit,
    Reset,
    Resume,
    Start,
)


class CommandDecisions(MachineTransitions):
    """Accept or reject one command of a group, changing the state and asking for effects."""

    def _decide_before_start(self, command: Command, op: str) -> Decision:
        if isinstance(command, Quit):
            return self._accept(RobotState.SHUTTINGDOWN, actions=(Shutdown(),))
        if isinstance(command, Start):
            if self._state is not RobotState.STANDBY:
                return self._reject(op, f'robot is {self._state.value}; START is in progress')
            config = self._config
            return self._accept(
                RobotState.INIT,
                actions=(
                    ActivateHardware(),
                    MoveToPose(config.start_pose, config.start_duration_s, config.start_profile),
                ),
            )
        progress = 'START is in progress' if self._state is RobotState.INIT else 'not started'
        return self._reject(
            op,
            f'robot is {self._state.value} ({progress}); before the first '
            'trajectory only START and QUIT are accepted',
        )

    def _decide_quit(self) -> Decision:
        """QUIT once START has completed, outside FAULT and ESTOP."""
        if self._state is RobotState.PLAYING:
            self._resume = None
            self._ending = 'stop'
            self._quit_after_play = True
            return self._accept(RobotState.SHUTTINGDOWN, actions=(StopPlay(),))
        if self._state is RobotState.INIT:
            return self._accept(RobotState.SHUTTINGDOWN, actions=(HaltMotion(), Shutdown()))
        return self._accept(RobotState.SHUTTINGDOWN, actions=(self._shutdown_motion(),))

    def _decide_latched(self, command: Command, op: str) -> Decision:
        if isinstance(command, Quit):
            self._latched_from = None
            return self._accept(RobotState.SHUTTINGDOWN, actions=(Shutdown(),))
        if isinstance(command, Reset):
            if self._cause_cleared:
                return self._leave_latched(torque_on=True, actions=(ResetHardware(),))
            self._reset_pending = True
            return self._accept(
                actions=(ResetHardware(),),
                reason='waiting for the hardware to report the cause gone',
            )
        return self._reject(
            op,
            f'robot is {self._state.value} ({self._fault_reason}); only '
            'RESET, QUIT, ESTOP and GET_STATUS are accepted',
        )

    def _decide_play_control(self, command: Command, op: str) -> Decision:
        if self._state is not RobotState.PLAYING:
            return self._reject(
                op, f'robot is {self._state.value}; {op} is allowed only in PLAYING'
            )
        if isinstance(command, PlayCtrlSpeed):
            self._speed = command.speed
            note = (
                f'speed {command.requested:g} clamped to {command.speed:.2f}'
                if command.was_clamped
                else ''
            )
            return self._accept(actions=(SetPlaySpeed(command.speed),), reason=note)
        if isinstance(command, PlayCtrlStop):
            self._resume = None
            if self._ending == 'stop':
                return self._accept(reason='stop already requested')
            self._ending = 'stop'
            return self._accept(actions=(StopPlay(),))
        if self._ending == 'stop':
            return self._reject(op, 'the play is already stopping (PLAY_CTRL stop)')
        if self._ending == 'pause':
            return self._accept(reason='pause already requested')
        self._ending = 'pause'
        return self._accept(actions=(PausePlay(),))

    def _decide_motion(self, command: Command, op: str) -> Decision:
        config = self._config
        if isinstance(command, Look):
            return self._accept(
                actions=(
                    LookAt(
                        command.pan_rad,
                        command.tilt_rad,
                        config.look_duration_s,
                        config.move_profile,
                    ),
                )
            )
        if isinstance(command, Gesture):
            return self._accept(actions=(PerformGesture(command.name),))
        if isinstance(command, Move):
            duration = config.move_duration_s if command.duration_s is None else command.duration_s
            profile = Profile(command.profile) if command.profile else config.move_profile
            return self._accept(actions=(MoveJoints(command.targets, duration, profile),))
        if isinstance(command, Pose):
            action = MoveToPose(command.name, config.pose_duration_s, config.pose_profile)
            if command.name == config.shutdown_pose:
                self._shutdown_after_motion = True
                return self._accept(RobotState.SHUTTINGDOWN, actions=(action,))
            return self._accept(actions=(action,))
        if isinstance(command, Hit):
            return self._accept(
                actions=(StrikeInstrument(command.instrument, command.velocity, command.hand),)
            )
        if isinstance(command, Play):
            self._resume = None
            return self._start_play(
                StartPlay(command.play_id, command.speed, command.start_bar, command.improv)
            )
        if isinstance(command, Resume):
            if self._resume is None:
                return self._reject(
                    op, 'robot is IDLE but no resume point is saved; PAUSE a play first'
                )
            point, self._resume = self._resume, None
            return self._start_play(ResumePlay(point.play_id, point.bar))
        return self._reject(op, f'robot is {self._state.value}; {op} is not handled')
