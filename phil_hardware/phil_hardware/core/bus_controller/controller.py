"""The bus controller: per-tick receive, decode, safety and cyclic sending (pure given a clock
and transports). Lifecycle sequences (configure, activate, deactivate) are in
:mod:`.sequences`, the receive side (draining, decoding, plausibility) in :mod:`.feedback`;
this module owns the state they act on, the commands and the cyclic sending.

Cadence (ARCHITECTURE section 3): every tick (1 ms) all buses are drained and decoded, the chunk
queue is sampled at the send time, every enabled Maxon gets its target (CSP position or CST
torque) and each CAN bus carrying Maxons one SYNC; every ``slow_divider`` ticks the TMotors get
SET_RPM from the velocity law and each Dynamixel bus one sync write plus one sync read whose
replies are collected on the following ticks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from phil_hardware.core.chunk_queue import ChunkQueue, ControlMode
from phil_hardware.core.codecs import epos4 as epos4_codec
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.safety import Fault, FaultCode, SafetyMonitor, SendCheck

from . import sequences
from .base import (
    Clock,
    ControllerCounters,
    ControllerError,
    MonotonicClock,
    MotorMissingError,
    Transports,
)
from .config import ControllerConfig
from .dynamixel import DynamixelBank
from .epos4 import Epos4Drive, Epos4Group
from .feedback import FeedbackReceiver
from .state import Lifecycle, Measurements
from .tmotor import TMotorGroup, TMotorJoint

SYNC_FRAME = epos4_codec.encode_sync()
_TORQUE = int(ControlMode.TORQUE)  # plain ints: enum attribute access costs us per tick
_CST = int(epos4_codec.ModeOfOperation.CYCLIC_SYNC_TORQUE)


class BusController(FeedbackReceiver):
    """Owns the buses of one robot and runs its cyclic exchange. Not thread-safe.

    The receive half (bus draining, feedback decoding, plausibility) is inherited from
    :class:`~.feedback.FeedbackReceiver`.

    Attributes:
        lifecycle: Current :class:`Lifecycle`.
        queue: Trajectory chunk queue (sampled every tick while active).
        safety: Safety monitor (faults, skips).
        measured: Latest measured state per joint.
        missing: Joints not discovered (allowed by ``allow_missing``).
        messages: Warnings for humans (bounded), e.g. a refused baud rate on a PTY.
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
        initial = [j.motor.initial_position_rad for j in config.joints]
        self.queue = ChunkQueue(config.joint_names, initial, config.torque_joints)
        self.tmotors = TMotorGroup(config.joints)
        self.epos = Epos4Group(config.joints, config.gravity_joints)
        self.dxl_banks = {bus: DynamixelBank(bus, config.joints) for bus in config.serial_buses}
        self.missing: list[str] = []
        self.present = [True] * count
        self.messages: list[str] = []
        self.counters = ControllerCounters()
        self.holding = False
        self.supervising = False
        self._tick_index = 0
        self._send_failures: dict[str, int] = {}
        self._tmotors_by_phase: dict[int, list[TMotorJoint]] = {}
        self._active_epos: list[tuple[str, list[Epos4Drive]]] = []

    # -- lifecycle (sequences live in .sequences) -------------------------------------------

    def configure(self, zero_origins: bool = True) -> None:
        """Open buses, discover motors, configure drives (no torque), and with
        ``zero_origins`` set the TMotor origins at the pose the robot is in. Blocks ~1-2 s."""
        sequences.configure(self, zero_origins)

    def activate(self) -> None:
        """Enable drives and servos, start holding. Blocks a few ms."""
        sequences.activate(self)

    def deactivate(self) -> None:
        """Stop cyclic sending, Maxon shutdown, servo torque off. Blocks briefly."""
        sequences.deactivate(self)

    def shutdown(self) -> None:
        """Deactivate if needed and close every bus (finalized)."""
        sequences.shutdown(self)

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
        for bus, drives in self._active_epos:
            for drive in drives:
                if drive.enabled:
                    continue
                # A drive shut down on a range violation restarts where it is.
                measured = self.measured.position_rad[drive.index]
                drive.enabled = True
                drive.mode = epos4_codec.ModeOfOperation.CYCLIC_SYNC_POSITION
                for frame in sequences.reenable_frames(drive, measured):
                    self.send(bus, frame)
                self.send(bus, SYNC_FRAME)
        self.queue.hold(targets)
        return reasons

    def _check(self, fault: Fault | None) -> None:
        if fault is not None and self.lifecycle in (Lifecycle.ACTIVE, Lifecycle.ACTIVATING):
            self.enter_hold()

    def enter_hold(self) -> None:
        """Hold every joint at its measured position; shut down Maxons out of range."""
        self.queue.hold(self.measured.position_rad, [ControlMode.POSITION] * self.measured.count)
        self.holding = True
        if self.lifecycle != Lifecycle.ACTIVE:
            return
        for bus, drives in self._active_epos:
            for drive in drives:
                if drive.enabled and self.safety.out_of_range(drive.index):
                    drive.enabled = False
                    for frame in sequences.shutdown_with_sync(drive):
                        self.send(bus, frame)

    # -- sending -----------------------------------------------------------------------------

    def send(self, bus: str, frame: CanFrame) -> bool:
        """Send on a CAN bus; consecutive failures latch BUS_ERROR."""
        transport = self.transports.can[bus]
        if transport.send(frame):
            self._send_failures[bus] = 0
            return True
        failures = self._send_failures.get(bus, 0) + 1
        self._send_failures[bus] = failures
        if failures == self.config.cycle.send_error_limit:
            self._check(
                self.safety.latch(
                    FaultCode.BUS_ERROR,
                    '',
                    f'{bus}: {failures} sends failed in a row '
                    f'({transport.last_error}); check cabling, termination and bus-off',
                    self.clock.now(),
                )
            )
        return False

    def set_cyclic_members(self) -> None:
        """Fix the motors in cyclic traffic (present ones) after discovery."""
        phases = self.config.cycle.tmotor_phases
        buses = sorted({m.bus for m in self.tmotors.motors})
        self._tmotors_by_phase = {}
        for motor in self.tmotors.motors:
            if self.present[motor.index]:
                phase = phases[min(buses.index(motor.bus), len(phases) - 1)]
                self._tmotors_by_phase.setdefault(phase, []).append(motor)
        present_drives = [d for d in self.epos.drives if self.present[d.index]]
        self._active_epos = [
            (bus, [d for d in present_drives if d.bus == bus])
            for bus in self.epos.buses(present_drives)
        ]

    @property
    def tick_index(self) -> int:
        """Ticks run so far; its remainder by ``cycle.slow_divider`` is the traffic phase."""
        return self._tick_index

    def tick(self, now: float) -> None:
        """One control cycle at send time ``now`` (robot monotonic seconds)."""
        self.counters.ticks += 1
        self._tick_index += 1
        self.poll(now)
        if self.lifecycle == Lifecycle.ACTIVE:
            self._cycle(now)
        elif (
            self.lifecycle == Lifecycle.INACTIVE
            and self._tick_index % self.config.cycle.inactive_poll_ticks == 0
        ):
            self.poll_feedback()

    def poll_feedback(self) -> None:
        """SYNC on Maxon buses and a Dynamixel read, so the state stays readable."""
        for bus, _drives in self._active_epos:
            self.send(bus, SYNC_FRAME)
        for bus, bank in self.dxl_banks.items():
            if bank.present:
                self.transports.serial[bus].write(bank.read_packet())

    def _cycle(self, now: float) -> None:
        safety = self.safety
        if self.supervising:
            for fault in safety.check_timeouts(now):
                self._check(fault)
        targets, velocities, modes = self.queue.sample(now)
        if safety.check_targets(targets, now) is not None:
            self.enter_hold()
            targets, velocities, modes = self.queue.sample(now)
        measured = self.measured.position_rad
        for bus, drives in self._active_epos:
            for drive in drives:
                if not drive.enabled:
                    continue
                i = drive.index
                if (modes[i] == _TORQUE) != (drive.mode == _CST):
                    self.counters.mode_switches += 1
                    for frame in drive.switch_to(int(modes[i]), targets[i], measured):
                        self.send(bus, frame)
                self.send(bus, drive.cyclic_frame(targets[i], measured))
            self.send(bus, SYNC_FRAME)
        phase = self._tick_index % self.config.cycle.slow_divider
        tmotors = self._tmotors_by_phase.get(phase)
        if tmotors:
            self._send_tmotors(tmotors, targets, velocities, measured, now)
        if phase == self.config.cycle.dxl_phase:
            for bus, bank in self.dxl_banks.items():
                if bank.present:
                    # One write for both packets: a PTY/USB write costs far more than its bytes.
                    self.transports.serial[bus].write(
                        bank.goal_packet(targets) + bank.read_packet()
                    )

    def _send_tmotors(self, motors, targets, velocities, measured, now: float) -> None:
        safety = self.safety
        holding = self.holding
        for motor in motors:
            i = motor.index
            measured_rad = measured[i]
            if measured_rad != measured_rad:
                self.counters.tmotor_frames_skipped_no_feedback += 1
                continue
            target = targets[i]
            check = safety.check_send(i, target, now)
            if check == SendCheck.FEEDFORWARD_ONLY:
                measured_rad = None
            elif check != SendCheck.OK:
                # Skipping leaves the motor on its last speed command; while holding after a
                # fault that must be a standstill, not whatever was last sent.
                if holding:
                    self.send(motor.bus, TMotorGroup.stop_frame(motor))
                continue
            velocity = 0.0 if holding else float(velocities[i])
            self.send(motor.bus, TMotorGroup.velocity_frame(motor, target, velocity, measured_rad))

    # -- reporting ---------------------------------------------------------------------------

    def connected(self, index: int, now: float) -> bool:
        """Feedback from joint ``index`` within its safety timeout."""
        timeout = self.safety.feedback_timeout_s(index)
        return self.present[index] and self.measured.connected(index, now, max(timeout, 0.1))

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
    'MotorMissingError',
    'Transports',
]
