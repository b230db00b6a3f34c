"""What the behavior state machine remembers, and the transitions its commands and events share:
accept (changing the state), reject (kept as the last rejection), ignore, latch FAULT or ESTOP
and leave the latch. `StateMachine` (in `state_machine`) builds on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from phil_control.core.behavior.actions import (
    Action,
    HaltMotion,
    MoveToPose,
    PausePlay,
    ResumePlay,
    Shutdown,
    StartPlay,
)
from phil_control.core.behavior.states import (
    LATCHED_STATES,
    BehaviorConfig,
    Decision,
    MachineSnapshot,
    RefusedCommand,
    RobotState,
)
from phil_control.core.play.timeline import ResumePoint


class MachineTransitions:
    """The state machine's memory and shared transitions (see `StateMachine`).

    Args:
        config: Pose names and motion times.
        clock: Time source, s (monotonic); stamps state changes and rejections.
    """

    def __init__(
        self, config: BehaviorConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._config = config or BehaviorConfig()
        self._clock = clock
        self._state = RobotState.STANDBY
        self._since_s = clock()
        self._started = False
        self._speed = 1.0
        self._resume: ResumePoint | None = None
        self._last_rejection: RefusedCommand | None = None
        self._ending: str | None = None  # 'pause' or 'stop' once asked during PLAYING
        self._shutdown_after_motion = False
        self._quit_after_play = False  # QUIT in PLAYING: the shutdown pose once the play ends
        self._finished = False
        self._latched_from: RobotState | None = None
        self._fault_reason = ''
        self._reset_pending = False
        self._cause_cleared = False

    @property
    def state(self) -> RobotState:
        """Current state."""
        return self._state

    @property
    def speed(self) -> float:
        """Commanded playback speed factor."""
        return self._speed

    @property
    def resume_point(self) -> ResumePoint | None:
        """Saved resume point, if any."""
        return self._resume

    @property
    def last_rejection(self) -> RefusedCommand | None:
        """The last rejected command, if any."""
        return self._last_rejection

    def snapshot(self) -> MachineSnapshot:
        """A consistent copy of the machine's observable state."""
        return MachineSnapshot(
            self._state,
            self._started,
            self._speed,
            self._resume,
            self._fault_reason,
            self._last_rejection,
            self._since_s,
            self._finished,
        )

    # -------------------------------------------------------------- transitions

    def _shutdown_motion(self) -> Action:
        """The move to the shutdown pose; `Shutdown` follows when it has finished."""
        self._shutdown_after_motion = True
        config = self._config
        return MoveToPose(config.shutdown_pose, config.quit_duration_s, config.quit_profile)

    def _start_play(self, action: StartPlay | ResumePlay) -> Decision:
        self._speed = action.speed
        self._ending = None
        return self._accept(RobotState.PLAYING, actions=(action,))

    def _latch(self, target: RobotState, reason: str, first: tuple[Action, ...] = ()) -> Decision:
        """Latch FAULT or ESTOP (ESTOP wins), remembering the state the latch returns to."""
        self._reset_pending = False
        self._cause_cleared = False
        self._quit_after_play = False  # leaving the latch finishes a QUIT without motion
        self._fault_reason = reason
        if self._state in LATCHED_STATES:
            new_state = (
                RobotState.ESTOP if RobotState.ESTOP in (target, self._state) else RobotState.FAULT
            )
            return self._accept(new_state, actions=first)
        actions = list(first)
        if self._state is RobotState.PLAYING:
            actions.append(PausePlay())
        if self._started:
            actions.append(HaltMotion())
        self._latched_from = self._state
        return self._accept(target, actions=tuple(actions))

    def _leave_latched(self, torque_on: bool, actions: tuple[Action, ...] = ()) -> Decision:
        """Return from FAULT/ESTOP to the state before the latch (PLAYING as IDLE; STANDBY
        without torque or START)."""
        before = self._latched_from or RobotState.STANDBY
        self._latched_from = None
        self._fault_reason = ''
        self._reset_pending = False
        self._cause_cleared = False
        self._ending = None
        if not torque_on:
            self._started = False
        if before is RobotState.SHUTTINGDOWN:
            self._shutdown_after_motion = False
            return self._accept(before, actions=(*actions, Shutdown()))
        if not self._started:
            return self._accept(RobotState.STANDBY, actions=actions)
        if before is RobotState.PLAYING:
            before = RobotState.IDLE
        return self._accept(before, actions=actions)

    def _set_state(self, state: RobotState) -> None:
        if state is not self._state:
            self._state = state
            self._since_s = self._clock()

    def _accept(
        self, state: RobotState | None = None, actions: tuple[Action, ...] = (), reason: str = ''
    ) -> Decision:
        if state is not None:
            self._set_state(state)
        return Decision(True, reason, actions, self._state)

    def _ignored(self, reason: str) -> Decision:
        return Decision(False, reason, (), self._state)

    def _reject(self, op: str, why: str) -> Decision:
        reason = f'{op} rejected: {why}'
        self._last_rejection = RefusedCommand(self._clock(), op, self._state, reason)
        return Decision(False, reason, (), self._state)
