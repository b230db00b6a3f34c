"""The bus controller: per-tick receive, safety and cyclic sending over its motor families
(pure given a clock and transports). Lifecycle sequences (configure, activate, deactivate) are
in :mod:`.sequences`, the receive side (draining, dispatch, plausibility) in :mod:`.feedback`,
each family's steps, cyclic commands and decoding in its module (:mod:`.epos4_family`,
:mod:`.tmotor`, :mod:`.dynamixel`); this module owns the state they act on and the commands.

Cadence: every tick (1 ms) all buses are drained and decoded, the chunk
queue is sampled at the send time, every enabled Maxon gets its target (CSP position or CST
torque) and each CAN bus carrying Maxons one SYNC; every ``slow_divider`` ticks the TMotors get
SET_RPM from the velocity law and each Dynamixel bus one sync write plus one sync read whose
replies are collected on the following ticks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from phil_hardware.core.chunk_queue import ChunkQueue, ControlMode
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.safety import Fault, FaultCode, SafetyMonitor

from .base import (
    Clock,
    ControllerCounters,
    ControllerError,
    MonotonicClock,
    MotorFamily,
    MotorMissingError,
    Transports,
)
from .config import ControllerConfig
from .dynamixel import DynamixelBank, DynamixelFamily
from .epos4 import Epos4Group
from .epos4_family import Epos4Family
from .sequences import LifecycleSequences
from .state import Lifecycle, Measurements
from .tmotor import TMotorFamily, TMotorGroup


class BusController(LifecycleSequences):
    """Owns the buses of one robot and runs its cyclic exchange. Not thread-safe.

    The lifecycle sequences and the receive half (bus draining, dispatch, plausibility) are
    inherited from :class:`~.sequences.LifecycleSequences` and
    :class:`~.feedback.FeedbackReceiver`.

    Attributes:
        lifecycle: Current :class:`Lifecycle`.
        queue: Trajectory chunk queue (sampled every tick while active).
        safety: Safety monitor (faults, skips).
        measured: Latest measured state per joint.
        missing: Joints not discovered (allowed by ``allow_missing``).
        messages: Warnings for humans (bounded), e.g. a refused baud rate on a PTY.
        families: The motor families' drivers, in the order every step runs them (EPOS4 first:
            its targets and SYNC open each tick).
    """

    def __init__(
        self,
        config: ControllerConfig,
        open_transports: Callable[[], Transports],
        clock: Clock | None = None,
        pump_hook: Callable[[], None] | None = None,
    ) -> None:
        """Create an unconfigured controller.

        Args:
            config: Validated controller configuration.
            open_transports: Called by :meth:`configure` to open the buses.
            clock: Time source (default :class:`MonotonicClock`).
            pump_hook: Called on every poll while a lifecycle sequence waits (the bus loop
                publishes its snapshot and picks up an ESTOP there).
        """
        super().__init__(config)
        self.config = config
        self.clock = clock or MonotonicClock()
        self.pump_hook = pump_hook
        self.open_transports = open_transports
        self.transports = Transports()
        self.lifecycle = Lifecycle.UNCONFIGURED
        count = len(config.joints)
        self.measured = Measurements(count)
        self.safety = SafetyMonitor(config.joint_safety(), config.safety)
        self._connected_within_s = [
            max(self.safety.feedback_timeout_s(i), 0.1) for i in range(count)
        ]
        initial = [j.motor.initial_position_rad for j in config.joints]
        self.queue = ChunkQueue(config.joint_names, initial, config.torque_joints)
        self.tmotors = TMotorGroup(config.joints)
        self.epos = Epos4Group(config.joints, config.gravity_joints)
        self.dxl_banks = {bus: DynamixelBank(bus, config.joints) for bus in config.serial_buses}
        self.families: tuple[MotorFamily, ...] = (
            Epos4Family(self, self.epos),
            TMotorFamily(self, self.tmotors),
            DynamixelFamily(self, self.dxl_banks),
        )
        self.missing: list[str] = []
        self.present = [True] * count
        self.messages: list[str] = []
        self.counters = ControllerCounters()
        self.holding = False
        self._tick_targets: list[list] | None = None  # the lists this tick's families read
        self.supervising = False
        self._tick_index = 0
        self._send_failures: dict[str, int] = {}

    def warn(self, text: str) -> None:
        """Keep a warning for the status (bounded to the last 20)."""
        self.messages.append(text)
        del self.messages[:-20]

    # -- commands ----------------------------------------------------------------------------

    def push_chunk(self, chunk: object) -> str | None:
        """Queue a chunk; returns the rejection reason or None."""
        if self.safety.faulted:
            self.queue.rejected += 1
            self.queue.last_reject_reason = 'faulted: reset first'
            return self.queue.last_reject_reason
        return self.queue.push(chunk)

    def halt(self) -> int:
        """Drop queued motion and hold the current target; returns the chunks dropped."""
        return self.queue.halt()

    def estop(self, reason: str = 'emergency stop requested') -> None:
        """Latch ESTOP and hold the measured pose."""
        self.safety.estop(self.clock.now(), reason)
        self.enter_hold()

    def fault(self, reason: str) -> None:
        """Latch a fault of the graph around the loop (a node on the motion path died or
        stopped responding) and hold the measured pose."""
        if self.safety.latch(FaultCode.PROCESS_DIED, '', reason, self.clock.now()) is not None:
            self.enter_hold()

    def reset(self) -> list[str]:
        """Clear faults whose cause is gone; returns reasons for those that stay.

        Every joint then holds where it is measured now, not where it was held: a joint may have
        moved while the latch held it (a drive without torque, feedback that came back late),
        and the next motion starts from the pose the targets hold.
        """
        now = self.clock.now()
        reasons = self.safety.reset(now)
        if reasons or not self.holding:
            return reasons
        self.holding = False
        if self.lifecycle != Lifecycle.ACTIVE:
            return reasons
        targets = [
            float(measured) if self.present[index] and math.isfinite(measured) else target
            for index, (measured, target) in enumerate(
                zip(self.measured.position_rad, self.queue.target_rad, strict=True)
            )
        ]
        for family in self.families:
            family.resume()
        self.queue.hold(targets)
        return reasons

    def check_fault(self, fault: Fault | None) -> None:
        """Hold the measured pose when ``fault`` latched while active (None: nothing)."""
        if fault is not None and self.lifecycle in (Lifecycle.ACTIVE, Lifecycle.ACTIVATING):
            self.enter_hold()

    def enter_hold(self) -> None:
        """Hold every joint at its measured position; shut down Maxons out of range."""
        self.queue.hold(self.measured.position_rad, [ControlMode.POSITION] * self.measured.count)
        self.holding = True
        self._follow_hold_within_tick()
        if self.lifecycle != Lifecycle.ACTIVE:
            return
        for family in self.families:
            family.hold()

    # -- sending -----------------------------------------------------------------------------

    def send(self, bus: str, frame: CanFrame) -> bool:
        """Send on a CAN bus; consecutive failures latch BUS_ERROR."""
        if self.transports.can[bus].send(frame):  # the common case without a second call
            self._send_failures[bus] = 0
            return True
        return self._sent(bus, False)

    def _sent(self, bus: str, ok: bool) -> bool:
        """Count a send on ``bus`` (``ok``: it went out); ``ok``."""
        if ok:
            self._send_failures[bus] = 0
            return True
        transport = self.transports.can[bus]
        failures = self._send_failures.get(bus, 0) + 1
        self._send_failures[bus] = failures
        if failures == self.config.cycle.send_error_limit:
            self.check_fault(
                self.safety.latch(
                    FaultCode.BUS_ERROR,
                    '',
                    f'{bus}: {failures} sends failed in a row '
                    f'({transport.last_error}); check cabling, termination and bus-off',
                    self.clock.now(),
                )
            )
        return False

    @property
    def tick_index(self) -> int:
        """Ticks run so far; its remainder by ``cycle.slow_divider`` is the traffic phase."""
        return self._tick_index

    def tick(self, now: float) -> None:
        """One control cycle at send time ``now`` (robot monotonic seconds). A tick's frames
        leave each simulated bus as one datagram (`CanTransport.hold`); nothing in a tick waits
        for an answer."""
        self.counters.ticks += 1
        self._tick_index += 1
        buses = self.transports.can
        for transport in buses.values():
            transport.hold()
        try:
            self.poll(now)
            if self.lifecycle == Lifecycle.ACTIVE:
                self._cycle(now)
            elif (
                self.lifecycle == Lifecycle.INACTIVE
                and self._tick_index % self.config.cycle.inactive_poll_ticks == 0
            ):
                self.poll_feedback()
        finally:
            for bus, transport in buses.items():
                self._sent(bus, transport.release())

    def poll_feedback(self) -> None:
        """SYNC on Maxon buses and a Dynamixel read, so the state stays readable."""
        for family in self.families:
            family.request_feedback()

    def _cycle(self, now: float) -> None:
        safety = self.safety
        if self.supervising:
            for fault in safety.check_timeouts(now):
                self.check_fault(fault)
        # Plain lists: the safety check and the families read them element by element, and
        # a numpy scalar costs several times a float in every index and every operation.
        self._tick_targets = targets, velocities, modes = [
            values.tolist() for values in self.queue.sample(now)
        ]
        try:
            if safety.check_targets(targets, now) is not None:
                self.enter_hold()
            phase = self._tick_index % self.config.cycle.slow_divider
            for family in self.families:
                family.tick(phase, now, targets, velocities, modes)
        finally:
            self._tick_targets = None

    def _follow_hold_within_tick(self) -> None:
        # A hold latched part-way through a tick (a failed send) must reach the rest of it:
        # the lists the families are reading take the held targets, velocities and modes.
        if self._tick_targets is not None:
            for values, held in zip(self._tick_targets, self.queue.sample_view(), strict=True):
                values[:] = held.tolist()

    # -- reporting ---------------------------------------------------------------------------

    def connected_all(self, now: float) -> list[bool]:
        """Per joint, index order: present, with feedback within its safety timeout (at
        least 0.1 s)."""
        return [
            present and now - last <= within
            for present, last, within in zip(
                self.present, self.measured.last_feedback_s, self._connected_within_s, strict=True
            )
        ]

    @property
    def frames_skipped(self) -> int:
        """TMotor frames skipped by the jump and range checks."""
        return self.safety.counters.skipped_jump + self.safety.counters.skipped_range

    def faults(self) -> tuple[Fault, ...]:
        """Latched faults."""
        return self.safety.faults


__all__ = [
    'BusController',
    'Clock',
    'ControllerError',
    'MonotonicClock',
    'MotorFamily',
    'MotorMissingError',
    'Transports',
]
