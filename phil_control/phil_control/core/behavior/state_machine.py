"""The robot behavior state machine: which command is accepted when, and what it asks for.

Pure and ROS-free: `decide(command)` and the event inputs change the state and return a
`Decision` whose `actions` the caller carries out in order. Not thread-safe: call it from one
thread or under one lock. `StateMachine` routes each command here; the decisions of each group
of commands are in `command_decisions`, what the machine remembers and the transitions its
commands and events share in `transitions`.

Gating (upstream Gen-2):

* Until the first trajectory exists (`start_completed`, upstream `send_active`) only START and
  QUIT are accepted; QUIT then goes straight to SHUTTINGDOWN.
* START: STANDBY -> INIT, torque on, move to the start pose. READY: INIT -> IDLE.
* LOOK, GESTURE, MOVE, POSE, HIT, PLAY, RESUME only in IDLE. PLAY and RESUME enter PLAYING at
  the play's speed (1.0 unless a Play goal asks for another); PLAY drops the resume point,
  RESUME uses it up (a new PAUSE saves a new one). RESUME without a resume point is rejected.
* PAUSE and PLAY_CTRL only in PLAYING. PAUSE asks the player to save a resume point and stop
  (`play_paused` -> IDLE); PLAY_CTRL stop drops the resume point (`play_finished` -> IDLE); a
  normal end (`play_finished`) keeps whatever point there is.
* QUIT (state SHUTTINGDOWN at once, as upstream) in every state, as upstream's README promises
  (its code took it only in IDLE): in IDLE the robot moves to the shutdown pose and, when the
  motion has finished (`motion_finished`), the machine asks for `Shutdown`; in PLAYING the
  play stops first (no resume point), then the same; in INIT (the locking pins may still be
  in) the START motion halts and the torque goes off without any motion, as in STANDBY,
  FAULT and ESTOP. `POSE|shutdown` does what QUIT does in IDLE.
* GET_STATUS, PROTOCOL and ESTOP are accepted in every state.

Added to upstream: FAULT and ESTOP, latched from the hardware (`hardware_fault`,
`hardware_estop`) or by the ESTOP command. Motions are rejected there; RESET, QUIT (straight to
SHUTTINGDOWN) and ESTOP are accepted. RESET leaves once the hardware reports the cause gone
(`hardware_cleared`, before or after the RESET) and returns to the state before the latch:
PLAYING returns as IDLE (the play was paused, its resume point kept), SHUTTINGDOWN finishes
without the shutdown pose, and the robot is back in STANDBY (START needed again) when the
torque was lost or START had not completed.
"""

from __future__ import annotations

from phil_control.core.behavior.actions import EstopHardware, Shutdown
from phil_control.core.behavior.command_decisions import CommandDecisions
from phil_control.core.behavior.states import LATCHED_STATES, Decision, RobotState
from phil_control.core.play.timeline import ResumePoint
from phil_control.core.protocol.commands import (
    MOTION_COMMANDS,
    Command,
    Estop,
    GetStatus,
    Pause,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Protocol,
    Quit,
    Ready,
    Reset,
    Start,
)

#: Commands decided at once, whatever is being carried out (see `StateMachine.waits`).
NEVER_WAIT = (Estop, Quit, Reset, GetStatus, Protocol)


class StateMachine(CommandDecisions):
    """Command gating and state transitions of the robot (see the module docstring).

    Args:
        config: Pose names and motion times.
        clock: Time source, s (monotonic); stamps state changes and rejections.
    """

    def waits(self, command: Command) -> str:
        """Why ``command`` should wait before it is decided ('' = decide it now): START is being
        carried out (before its first trajectory), or a PAUSE or PLAY_CTRL stop is (before the
        play has ended), and the command would be refused only because of that. Upstream
        dropped such commands; the caller decides them, in order, once the transition is
        over. ESTOP, QUIT, RESET, GET_STATUS and PROTOCOL never wait, nor what the transition
        itself accepts (another PAUSE, a speed, a stop while pausing)."""
        if isinstance(command, NEVER_WAIT):
            return ''
        if self._state is RobotState.INIT and not self._started:
            return 'START is in progress'
        if self._state is RobotState.PLAYING and self._ending is not None:
            if isinstance(command, Pause | PlayCtrlSpeed | PlayCtrlStop):
                return ''
            asked = 'PAUSE' if self._ending == 'pause' else 'PLAY_CTRL stop'
            return f'the play is ending ({asked})'
        return ''

    # ----------------------------------------------------------------- commands

    def decide(self, command: Command) -> Decision:
        """Accept or reject a command; on acceptance change the state and request its effects.

        Every rejection carries a reason naming the command, the state and the rule, and is
        kept as `last_rejection`.
        """
        if isinstance(command, GetStatus | Protocol):
            return self._accept()
        if isinstance(command, Estop):
            return self._latch(RobotState.ESTOP, 'ESTOP command', (EstopHardware(),))
        op = command.opcode.value
        state = self._state.value
        if self._state is RobotState.SHUTTINGDOWN:
            return self._reject(op, f'robot is {state}; no commands are accepted')
        if self._state in LATCHED_STATES:
            return self._decide_latched(command, op)
        if isinstance(command, Reset):
            return self._reject(op, f'robot is {state}; RESET is allowed only in FAULT or ESTOP')
        if not self._started:
            return self._decide_before_start(command, op)
        if isinstance(command, Start):
            return self._reject(op, f'robot is {state}; already started')
        if isinstance(command, Ready):
            if self._state is not RobotState.INIT:
                return self._reject(op, f'robot is {state}; READY is allowed only in INIT')
            return self._accept(RobotState.IDLE)
        if isinstance(command, Quit):
            return self._decide_quit()
        if isinstance(command, Pause | PlayCtrlStop | PlayCtrlSpeed):
            return self._decide_play_control(command, op)
        if isinstance(command, MOTION_COMMANDS):
            if self._state is not RobotState.IDLE:
                return self._reject(op, f'robot is {state}; motions are allowed only in IDLE')
            return self._decide_motion(command, op)
        return self._reject(op, f'robot is {state}; {op} is not handled')

    # ------------------------------------------------------------------- events

    def start_completed(self) -> Decision:
        """The hardware is active and the START motion is queued (the first trajectory)."""
        if self._state is not RobotState.INIT or self._started:
            return self._ignored('START is not in progress')
        self._started = True
        return self._accept()

    def motion_finished(self) -> Decision:
        """All queued motion has finished; after QUIT or `POSE|shutdown` asks for `Shutdown`."""
        if self._state is RobotState.SHUTTINGDOWN and self._shutdown_after_motion:
            self._shutdown_after_motion = False
            return self._accept(actions=(Shutdown(),))
        return self._ignored('no state waits for the end of a motion')

    def play_finished(self) -> Decision:
        """The play ended (score done, or stopped by PLAY_CTRL stop): PLAYING -> IDLE; after
        QUIT, the move to the shutdown pose."""
        self._ending = None
        if self._quit_after_play:
            return self._after_quit_play()
        if self._state is RobotState.PLAYING:
            return self._accept(RobotState.IDLE)
        if self._latched_from is RobotState.PLAYING:
            return self._accept()
        return self._ignored(f'robot is {self._state.value}, not PLAYING')

    def play_paused(self, resume_point: ResumePoint) -> Decision:
        """The play stopped after PAUSE and saved `resume_point`: PLAYING -> IDLE.

        The point is dropped when PLAY_CTRL stop was asked meanwhile.
        """
        keep = self._ending != 'stop'
        self._ending = None
        if self._quit_after_play:
            return self._after_quit_play()
        if self._state is RobotState.PLAYING or self._latched_from is RobotState.PLAYING:
            if keep:
                self._resume = resume_point
            if self._state is RobotState.PLAYING:
                return self._accept(RobotState.IDLE)
            return self._accept()
        return self._ignored(f'robot is {self._state.value}, not PLAYING')

    def _after_quit_play(self) -> Decision:
        self._quit_after_play = False
        return self._accept(actions=(self._shutdown_motion(),))

    def hardware_fault(self, reason: str) -> Decision:
        """The hardware reported a fault: latch FAULT (ESTOP stays ESTOP)."""
        return self._latch(RobotState.FAULT, reason or 'hardware fault')

    def hardware_estop(self, reason: str = '') -> Decision:
        """The hardware reported an emergency stop: latch ESTOP."""
        return self._latch(RobotState.ESTOP, reason or 'hardware emergency stop')

    def hardware_cleared(self, torque_on: bool = True, reset_granted: bool = False) -> Decision:
        """The hardware reports the cause of FAULT/ESTOP gone.

        Args:
            torque_on: False when the drives lost torque; the robot then returns to STANDBY.
            reset_granted: The hardware cleared its latches on a RESET (it judged every latch
                reported since, e.g. a fault reported after the RESET was asked); the machine
                leaves even when a later latch report cancelled its own pending RESET.
        """
        if self._state not in LATCHED_STATES:
            return self._ignored(f'robot is {self._state.value}; nothing is latched')
        if not torque_on:
            self._started = False
        if self._reset_pending or reset_granted:
            return self._leave_latched(torque_on)
        self._cause_cleared = True
        return self._ignored('cause gone; RESET to continue')

    def shutdown_completed(self) -> Decision:
        """The controller has shut down (or is being shut down from outside)."""
        self._finished = True
        self._shutdown_after_motion = False
        self._latched_from = None
        if self._state is RobotState.SHUTTINGDOWN:
            return self._accept()
        return self._accept(RobotState.SHUTTINGDOWN)
