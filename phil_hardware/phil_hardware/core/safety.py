"""Per-cycle safety rules of the bus loop (pure: the caller passes measurements and the time).

Rules (docs/design.md, "Safety checks in the bus loop"):

* Pre-send, TMotor only: a target more than ``jump_limit_rad`` (30 deg) away from the last
  measured position, or outside the URDF limits, skips that frame (counted, nothing latches).
* Post-receive, every family: a measured position outside the URDF limits latches
  POSITION_OUT_OF_RANGE (the bus controller then sends a Maxon the shutdown controlword).
* Over-current: the ``over_current_frames``-th (7th) consecutive feedback frame whose current
  magnitude exceeds the limit latches OVER_CURRENT. Upstream compared the signed current; a
  large negative current is just as bad, so the magnitude is used.
* No feedback for longer than the joint's timeout while armed latches FEEDBACK_TIMEOUT.
* A NaN/Inf target latches INVALID_TARGET; ESTOP latches on request.

A latched fault stays until :meth:`SafetyMonitor.reset` is called **and** its cause is gone
(position back in range, feedback present, current below the limit, motor error cleared).
Reacting to a fault (hold measured positions, drop the queue, Maxon shutdown) is the bus
controller's job; this module only decides. What a fault is (:class:`FaultCode`,
:class:`Fault`) lives in :mod:`.faults`; both are importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from mypy_extensions import mypyc_attr

from .faults import Fault, FaultCode


class SendCheck(IntEnum):
    """Verdict of the TMotor pre-send check."""

    OK = 0
    SKIP_JUMP = 1
    SKIP_RANGE = 2
    # The measurement is too old for the velocity law's position term: send the trajectory's
    # velocity alone (a stale angle would turn into a large, wrong correction, and the jump
    # check against it would skip frames and leave the motor on its last speed).
    FEEDFORWARD_ONLY = 3


# A Python class where mypyc compiles the module: the bus loop's configuration is pickled to
# its process, and a compiled frozen dataclass cannot be unpickled.
@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class SafetyConfig:
    """Safety parameters (validated once).

    Attributes:
        jump_limit_rad: Largest allowed |target - measured| for a TMotor frame [rad].
        over_current_frames: Consecutive over-limit frames that latch OVER_CURRENT.
        can_feedback_timeout_s: Feedback silence that latches FEEDBACK_TIMEOUT on CAN [s].
        serial_feedback_timeout_s: Same for Dynamixel servos [s].
        fresh_feedback_s: A TMotor measurement older than this is stale: the pre-send check
            answers FEEDFORWARD_ONLY (the motors broadcast status every 5 ms) [s].
    """

    jump_limit_rad: float = math.radians(30.0)
    over_current_frames: int = 7
    can_feedback_timeout_s: float = 0.05
    serial_feedback_timeout_s: float = 0.1
    fresh_feedback_s: float = 0.015

    def __post_init__(self) -> None:
        """Refuse non-positive or non-finite values."""
        for name in (
            'jump_limit_rad',
            'can_feedback_timeout_s',
            'serial_feedback_timeout_s',
            'fresh_feedback_s',
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'safety {name} must be a positive number, got {value!r}')
        if self.over_current_frames < 1:
            raise ValueError(
                f'safety over_current_frames must be >= 1, got {self.over_current_frames}'
            )


@dataclass(frozen=True)
class JointSafety:
    """What the monitor knows about one joint.

    Attributes:
        name: Joint name.
        lower_rad / upper_rad: URDF hard limits [rad].
        feedback_timeout_s: Silence that latches FEEDBACK_TIMEOUT [s].
        current_limit_a: Over-current threshold [A]; inf when the motor reports no current.
        pre_send_checks: Jump and range checks before sending (TMotor only, as upstream).
    """

    name: str
    lower_rad: float
    upper_rad: float
    feedback_timeout_s: float
    current_limit_a: float = math.inf
    pre_send_checks: bool = False


@dataclass
class _JointState:
    spec: JointSafety
    enabled: bool = True
    measured_rad: float = math.nan
    last_feedback_s: float = math.nan
    current_a: float = 0.0
    over_current_count: int = 0
    load_ratio: float = 0.0
    motor_error: str = ''
    armed: bool = False
    skipped_jump: int = 0
    skipped_range: int = 0


@dataclass
class SafetyCounters:
    """Counts of the non-latching decisions."""

    skipped_jump: int = 0
    skipped_range: int = 0
    feedforward_only: int = 0
    faults_latched: int = 0
    resets_refused: int = 0


class SafetyMonitor:
    """Applies the safety rules to one robot's joints. Not thread-safe (the bus loop owns it)."""

    def __init__(self, joints: Sequence[JointSafety], config: SafetyConfig | None = None) -> None:
        """Create a monitor with nothing measured and nothing latched.

        Args:
            joints: One entry per robot joint, in index order.
            config: Thresholds; defaults are upstream's.
        """
        self.config = config or SafetyConfig()
        self._joints = [_JointState(spec) for spec in joints]
        self._index = {state.spec.name: i for i, state in enumerate(self._joints)}
        self._faults: list[Fault] = []
        self._estop = False
        self.counters = SafetyCounters()

    @property
    def faults(self) -> tuple[Fault, ...]:
        """Latched faults, oldest first."""
        return tuple(self._faults)

    @property
    def faulted(self) -> bool:
        """True while any fault (including ESTOP) is latched."""
        return bool(self._faults)

    @property
    def estop_latched(self) -> bool:
        """True while an ESTOP is latched."""
        return self._estop

    def set_enabled(self, index: int, enabled: bool) -> None:
        """Include or exclude a joint (an allowed-missing motor is excluded from every rule)."""
        self._joints[index].enabled = enabled

    def arm(self, now_s: float) -> None:
        """Start feedback-timeout supervision (activation); silence is counted from now."""
        for state in self._joints:
            state.armed = state.enabled
            if not state.last_feedback_s >= now_s:  # also NaN
                state.last_feedback_s = now_s

    def disarm(self) -> None:
        """Stop feedback-timeout supervision (deactivation)."""
        for state in self._joints:
            state.armed = False

    def check_send(self, index: int, target_rad: float, now_s: float | None = None) -> SendCheck:
        """TMotor pre-send check of one target; a skip or a stale measurement is counted.

        Args:
            index: Joint index.
            target_rad: Joint target about to be sent [rad].
            now_s: Robot time of the send [s]; None skips the staleness rule.
        """
        state = self._joints[index]
        spec = state.spec
        if not spec.pre_send_checks:
            return SendCheck.OK
        if not spec.lower_rad <= target_rad <= spec.upper_rad:
            state.skipped_range += 1
            self.counters.skipped_range += 1
            return SendCheck.SKIP_RANGE
        if now_s is not None and now_s - state.last_feedback_s > self.config.fresh_feedback_s:
            self.counters.feedforward_only += 1
            return SendCheck.FEEDFORWARD_ONLY
        # Without a measurement there is nothing to jump from; the controller only sends after
        # the first feedback anyway.
        if abs(target_rad - state.measured_rad) > self.config.jump_limit_rad:
            state.skipped_jump += 1
            self.counters.skipped_jump += 1
            return SendCheck.SKIP_JUMP
        return SendCheck.OK

    def on_position(self, index: int, position_rad: float, now_s: float) -> Fault | None:
        """Record a measured joint position; latch POSITION_OUT_OF_RANGE when outside limits."""
        state = self._joints[index]
        state.measured_rad = position_rad
        state.last_feedback_s = now_s
        spec = state.spec
        if not state.enabled or spec.lower_rad <= position_rad <= spec.upper_rad:
            return None
        return self.latch(
            FaultCode.POSITION_OUT_OF_RANGE,
            spec.name,
            f'measured {math.degrees(position_rad):.2f} deg outside '
            f'[{math.degrees(spec.lower_rad):g}, {math.degrees(spec.upper_rad):g}] deg',
            now_s,
        )

    def on_current(self, index: int, current_a: float, now_s: float) -> Fault | None:
        """Record a measured current; latch OVER_CURRENT on the N-th consecutive frame above."""
        state = self._joints[index]
        state.current_a = current_a
        return self._count_over(
            state,
            abs(current_a) / state.spec.current_limit_a,
            f'{state.spec.current_limit_a:g} A (last {current_a:.2f} A)',
            now_s,
        )

    def _count_over(
        self, state: _JointState, ratio: float, limit_text: str, now_s: float
    ) -> Fault | None:
        state.load_ratio = ratio
        if not ratio > 1.0 or not state.enabled:
            state.over_current_count = 0
            return None
        state.over_current_count += 1
        if state.over_current_count < self.config.over_current_frames:
            return None
        return self.latch(
            FaultCode.OVER_CURRENT,
            state.spec.name,
            f'{state.over_current_count} consecutive frames above {limit_text}; check for a '
            'blocked joint or a collision',
            now_s,
        )

    def on_motor_error(self, index: int, error_text: str, now_s: float) -> Fault | None:
        """Record the motor's own error indicator ('' = healthy); latch MOTOR_ERROR when set."""
        state = self._joints[index]
        state.motor_error = error_text
        if not error_text or not state.enabled:
            return None
        return self.latch(FaultCode.MOTOR_ERROR, state.spec.name, error_text, now_s)

    def check_timeouts(self, now_s: float) -> list[Fault]:
        """Latch FEEDBACK_TIMEOUT for every armed joint silent for longer than its timeout."""
        latched = []
        for state in self._joints:
            if not (state.armed and state.enabled):
                continue
            silence = now_s - state.last_feedback_s
            if silence > state.spec.feedback_timeout_s:
                fault = self.latch(
                    FaultCode.FEEDBACK_TIMEOUT,
                    state.spec.name,
                    f'no feedback for {silence * 1e3:.0f} ms (timeout '
                    f'{state.spec.feedback_timeout_s * 1e3:.0f} ms); check power and wiring',
                    now_s,
                )
                if fault is not None:
                    latched.append(fault)
        return latched

    def check_targets(self, targets_rad: Sequence[float], now_s: float) -> Fault | None:
        """Latch INVALID_TARGET when any enabled joint's target is NaN or infinite."""
        for state, value in zip(self._joints, targets_rad, strict=True):
            if state.enabled and not math.isfinite(value):
                return self.latch(
                    FaultCode.INVALID_TARGET,
                    state.spec.name,
                    f'target {value!r} is not finite',
                    now_s,
                )
        return None

    def estop(self, now_s: float, reason: str = 'emergency stop requested') -> Fault | None:
        """Latch ESTOP."""
        self._estop = True
        return self.latch(FaultCode.ESTOP, '', reason, now_s)

    def latch(self, code: FaultCode, joint: str, reason: str, now_s: float) -> Fault | None:
        """Latch a fault unless one of the same code is already latched for that joint (for
        PROCESS_DIED: with the same reason, which names the process).

        Returns:
            The new fault, or None when it was already latched.
        """
        if any(
            f.code == code
            and f.joint == joint
            and (code != FaultCode.PROCESS_DIED or f.reason == reason)
            for f in self._faults
        ):
            return None
        fault = Fault(code, joint, reason, now_s)
        self._faults.append(fault)
        self.counters.faults_latched += 1
        return fault

    def cause_remaining(self, fault: Fault, now_s: float) -> str | None:
        """Why ``fault`` cannot be cleared now, or None when its cause is gone."""
        state = self._joints[self._index[fault.joint]] if fault.joint in self._index else None
        code = fault.code
        if state is None or not state.enabled:
            if code == FaultCode.MOTOR_MISSING:
                return 'the motor is missing; configure again'
            return None
        spec = state.spec
        if code == FaultCode.POSITION_OUT_OF_RANGE and not (
            spec.lower_rad <= state.measured_rad <= spec.upper_rad
        ):
            degrees = math.degrees(state.measured_rad)
            return f'{spec.name} is still out of range ({degrees:.2f} deg)'
        if code == FaultCode.OVER_CURRENT and state.load_ratio > 1.0:
            return f'{spec.name} current is still above the limit'
        if code == FaultCode.FEEDBACK_TIMEOUT and not (
            now_s - state.last_feedback_s <= spec.feedback_timeout_s
        ):
            return f'{spec.name} still sends no feedback'
        if code == FaultCode.MOTOR_ERROR and state.motor_error:
            return f'{spec.name} still reports: {state.motor_error}'
        if code == FaultCode.MOTOR_MISSING:
            return f'{spec.name} is missing; configure again'
        return None

    def reset(self, now_s: float) -> list[str]:
        """Clear every latched fault whose cause is gone (ESTOP always clears).

        Returns:
            Reasons for the faults that stay latched; empty when everything cleared.
        """
        remaining: list[Fault] = []
        reasons: list[str] = []
        for fault in self._faults:
            why = None if fault.code == FaultCode.ESTOP else self.cause_remaining(fault, now_s)
            if why is None:
                if fault.code == FaultCode.OVER_CURRENT:
                    self._joints[self._index[fault.joint]].over_current_count = 0
                continue
            remaining.append(fault)
            reasons.append(why)
        self._faults = remaining
        self._estop = any(f.code == FaultCode.ESTOP for f in remaining)
        if reasons:
            self.counters.resets_refused += 1
        else:
            # Silence is counted again from the reset, not from before the fault.
            for state in self._joints:
                if state.armed:
                    state.last_feedback_s = max(state.last_feedback_s, now_s)
        return reasons

    def out_of_range(self, index: int) -> bool:
        """True when joint ``index``'s last measurement is outside its limits."""
        state = self._joints[index]
        return not state.spec.lower_rad <= state.measured_rad <= state.spec.upper_rad

    def feedback_timeout_s(self, index: int) -> float:
        """Feedback timeout of joint ``index`` [s]."""
        return self._joints[index].spec.feedback_timeout_s

    def skips(self, index: int) -> tuple[int, int]:
        """(jump skips, range skips) of one joint."""
        state = self._joints[index]
        return state.skipped_jump, state.skipped_range
