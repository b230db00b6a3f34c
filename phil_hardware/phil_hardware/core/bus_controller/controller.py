"""The bus controller: per-tick receive, decode, safety and cyclic sending (pure given a clock
and transports). Lifecycle sequences (configure, activate, deactivate) are in
:mod:`.sequences`; this module owns the state they act on.

Cadence (ARCHITECTURE section 3): every tick (1 ms) all buses are drained and decoded, the chunk
queue is sampled at the send time, every enabled Maxon gets its target (CSP position or CST
torque) and each CAN bus carrying Maxons one SYNC; every ``slow_divider`` ticks the TMotors get
SET_RPM from the velocity law and each Dynamixel bus one sync write plus one sync read whose
replies are collected on the following ticks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from phil_hardware.core.chunk_queue import ChunkQueue, ControlMode
from phil_hardware.core.codecs import epos4 as epos4_codec
from phil_hardware.core.codecs.frame import CanFrame, CodecError
from phil_hardware.core.codecs.tmotor import ERROR_CODE_TEXT
from phil_hardware.core.safety import Fault, FaultCode, SafetyMonitor, SendCheck
from phil_hardware.core.transport import CanTransport, SerialTransport

from . import sequences
from .config import ControllerConfig
from .dynamixel import DynamixelBank
from .epos4 import Epos4Drive, Epos4Group, describe_statusword, drive_fault_text
from .state import Lifecycle, Measurements
from .tmotor import TMotorGroup, TMotorJoint, is_status_frame

SYNC_FRAME = epos4_codec.encode_sync()
_TORQUE = int(ControlMode.TORQUE)  # plain ints: enum attribute access costs us per tick
_CST = int(epos4_codec.ModeOfOperation.CYCLIC_SYNC_TORQUE)
PLAUSIBLE_STEP_RAD = 0.2  # largest position step between two feedback frames, plus speed x gap


class Clock(Protocol):
    """Time source of the controller (robot monotonic seconds)."""

    def now(self) -> float:
        """Current time [s]."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""


class MonotonicClock:
    """The real clock: ``time.monotonic`` (CLOCK_MONOTONIC, shared by every process)."""

    now = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)


@dataclass
class Transports:
    """Open buses by name."""

    can: dict[str, CanTransport] = field(default_factory=dict)
    serial: dict[str, SerialTransport] = field(default_factory=dict)

    def close(self) -> None:
        """Close every bus."""
        for transport in (*self.can.values(), *self.serial.values()):
            transport.close()


class ControllerError(RuntimeError):
    """A lifecycle step failed; the message names the joint/bus and what to check."""


class MotorMissingError(ControllerError):
    """Discovery did not find configured motors (``missing`` names their joints)."""

    def __init__(self, missing: list[str], detail: str) -> None:
        """Record the missing joints."""
        super().__init__(detail)
        self.missing = missing


@dataclass
class ControllerCounters:
    """Counters published in the state snapshot."""

    ticks: int = 0
    frames_rejected: int = 0
    frames_unexpected: int = 0
    frames_implausible: int = 0
    sdo_aborts: int = 0
    mode_switches: int = 0
    tmotor_frames_skipped_no_feedback: int = 0
    dxl_status_errors: int = 0


class BusController:
    """Owns the buses of one robot and runs its cyclic exchange. Not thread-safe.

    Attributes:
        lifecycle: Current :class:`Lifecycle`.
        queue: Trajectory chunk queue (sampled every tick while active).
        safety: Safety monitor (faults, skips).
        measured: Latest measured state per joint.
        missing: Joints not discovered (allowed by ``allow_missing``).
        messages: Warnings for humans (bounded), e.g. a refused baud rate on a PTY.
    """

    def __init__(self, config: ControllerConfig, open_transports: Callable[[], Transports],
                 clock: Clock | None = None,
                 pump_hook: Callable[[], None] | None = None) -> None:
        """Create an unconfigured controller.

        Args:
            config: Validated controller configuration.
            open_transports: Called by :meth:`configure` to open the buses.
            clock: Time source (default :class:`MonotonicClock`).
            pump_hook: Called on every poll while a lifecycle sequence waits (the bus loop
                publishes its snapshot and picks up an ESTOP there).
        """
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
        self.sdo_replies: dict[int, object] = {}
        self.dxl_replies: dict[tuple[str, int], object] = {}
        self._tick_index = 0
        self._std: dict[str, dict[int, Callable]] = {}
        self._ext: dict[str, dict[int, Callable]] = {}
        self._rx: list[CanFrame] = []
        self._velocity_limits = [j.velocity_limit_rad_s for j in config.joints]
        self._jump_candidate = [float('nan')] * count
        self._send_failures: dict[str, int] = {}
        self._active_tmotors: list[TMotorJoint] = []
        self._active_epos: list[tuple[str, list[Epos4Drive]]] = []

    # -- lifecycle (sequences live in .sequences) -------------------------------------------

    def configure(self) -> None:
        """Open buses, discover motors, configure drives (no torque). Blocks up to ~1-2 s."""
        sequences.configure(self)

    def activate(self) -> None:
        """Zero TMotor origins, enable drives and servos, start holding. Blocks ~0.5-1 s."""
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

    def reset(self) -> list[str]:
        """Clear faults whose cause is gone; returns reasons for those that stay."""
        now = self.clock.now()
        reasons = self.safety.reset(now)
        if reasons or not self.holding:
            return reasons
        self.holding = False
        if self.lifecycle != Lifecycle.ACTIVE:
            return reasons
        targets = list(self.queue.target_rad)
        for bus, drives in self._active_epos:
            for drive in drives:
                if drive.enabled:
                    continue
                # A drive shut down on a range violation may have been moved since: it
                # restarts where it is, not at the target it had before the fault.
                measured = self.measured.position_rad[drive.index]
                targets[drive.index] = measured
                drive.enabled = True
                drive.mode = epos4_codec.ModeOfOperation.CYCLIC_SYNC_POSITION
                for frame in sequences.reenable_frames(drive, measured):
                    self.send(bus, frame)
                self.send(bus, SYNC_FRAME)
        self.queue.hold(targets)
        return reasons

    # -- receiving ---------------------------------------------------------------------------

    def build_dispatch(self) -> None:
        """Per-bus tables from CAN id to feedback handler."""
        self._std = {bus: {} for bus in self.transports.can}
        self._ext = {bus: {} for bus in self.transports.can}
        for motor in self.tmotors.motors:
            handler = partial(self._on_tmotor, motor)
            self._std.setdefault(motor.bus, {})[motor.node_id] = handler
            self._ext.setdefault(motor.bus, {})[motor.node_id] = handler
        for drive in self.epos.drives:
            table = self._std.setdefault(drive.bus, {})
            table[epos4_codec.TPDO1_BASE + drive.node_id] = partial(self._on_tpdo, drive)
            table[epos4_codec.SDO_RESPONSE_BASE + drive.node_id] = partial(self._on_sdo, drive)

    def poll(self, now: float) -> None:
        """Drain every bus and handle what arrived (never blocks)."""
        rx = self._rx
        for bus, transport in self.transports.can.items():
            rx.clear()
            transport.drain(rx)
            if not rx:
                continue
            std = self._std[bus]
            ext = self._ext[bus]
            for frame in rx:
                table = ext if frame.is_extended_id else std
                handler = table.get(frame.arbitration_id & 0xFF if frame.is_extended_id
                                    else frame.arbitration_id)
                if handler is None:
                    self.counters.frames_unexpected += 1
                    continue
                try:
                    handler(frame, now)
                except CodecError:
                    self.counters.frames_rejected += 1
        for bus, transport in self.transports.serial.items():
            data = transport.read()
            if data:
                self._on_serial(self.dxl_banks[bus], data, now)

    def _on_tmotor(self, motor: TMotorJoint, frame: CanFrame, now: float) -> None:
        if not is_status_frame(frame, motor.node_id):
            self.counters.frames_rejected += 1
            return
        feedback, position, velocity = TMotorGroup.decode(motor, frame)
        if feedback.error_code not in ERROR_CODE_TEXT:  # no such code: a garbled frame
            self.counters.frames_rejected += 1
            return
        i = motor.index
        m = self.measured
        if not self._plausible(i, position, now):
            return
        previous_error = m.error_code[i]
        m.position_rad[i] = position
        m.velocity_rad_s[i] = velocity
        m.current_a[i] = feedback.current_a
        m.temperature_c[i] = feedback.temperature_c
        m.error_code[i] = feedback.error_code
        m.last_feedback_s[i] = now
        m.feedback_count[i] += 1
        m.status[i] = feedback.error_text if feedback.error_code else 'ok'
        if self.supervising:
            safety = self.safety
            self._check(safety.on_position(i, position, now))
            self._check(safety.on_current(i, feedback.current_a, now))
            # A real motor error persists: two frames in a row with the same code latch it.
            code = feedback.error_code
            error = f'motor error {code}: {feedback.error_text}'
            if not code or code == previous_error:
                self._check(safety.on_motor_error(i, error if code else '', now))

    def _on_tpdo(self, drive: Epos4Drive, frame: CanFrame, now: float) -> None:
        feedback, position = drive.decode(frame)
        i = drive.index
        m = self.measured
        if not self._plausible(i, position, now):
            return
        m.update_position(i, position, now)
        m.statusword[i] = feedback.statusword
        m.torque_mnm[i] = feedback.torque_mnm
        m.status[i] = describe_statusword(feedback.statusword)
        if self.supervising:
            self._check(self.safety.on_position(i, position, now))
            self._check(self.safety.on_motor_error(i, drive_fault_text(feedback.statusword), now))

    def _on_sdo(self, drive: Epos4Drive, frame: CanFrame, now: float) -> None:
        self.measured.feedback_count[drive.index] += 1  # any reply proves the drive is there
        self.sdo_replies[drive.node_id] = frame
        try:
            reply = epos4_codec.decode_sdo_response(frame)
        except CodecError:
            return  # the discovery probe's reply need not be a valid response
        if reply.service == epos4_codec.SdoService.ABORT and (
                self.lifecycle != Lifecycle.CONFIGURING):  # the probe's abort is expected
            self.counters.sdo_aborts += 1
            if self.lifecycle == Lifecycle.ACTIVE:
                self._check(self.safety.latch(
                    FaultCode.MOTOR_ERROR, drive.joint,
                    f'SDO 0x{reply.index:04X} refused: {reply.abort_text}', now))

    def _on_serial(self, bank: DynamixelBank, data: bytes, now: float) -> None:
        for servo, status in bank.feed(data):
            self.dxl_replies[(bank.bus, servo.dxl_id)] = status
            i = servo.index
            self.measured.feedback_count[i] += 1
            if status.error:
                self.counters.dxl_status_errors += 1
            position = bank.position_reply(servo, status)
            if position is None:
                continue
            self.measured.update_position(i, position, now)
            self.measured.error_code[i] = status.error
            self.measured.status[i] = bank.error_text(status) or 'ok'
            if self.supervising:
                self._check(self.safety.on_position(i, position, now))
                alert = status.error & 0x80
                self._check(self.safety.on_motor_error(
                    i, bank.error_text(status) if alert else '', now))

    def _plausible(self, index: int, position: float, now: float) -> bool:
        # A CAN payload has no checksum of its own: a garbled frame that still decodes shows
        # up as an impossible jump. Rejecting it leaves the joint silent, so persistent garbage
        # ends in FEEDBACK_TIMEOUT instead of a made-up position.
        # Two consecutive frames agreeing on the new place are a real (if sudden) relocation.
        previous = self.measured.position_rad[index]
        if previous != previous:
            return True
        gap = now - self.measured.last_feedback_s[index]
        allowed = PLAUSIBLE_STEP_RAD + 2.0 * self._velocity_limits[index] * max(gap, 0.0)
        if abs(position - previous) <= allowed:
            return True
        candidate = self._jump_candidate[index]
        self._jump_candidate[index] = position
        if abs(position - candidate) <= PLAUSIBLE_STEP_RAD:
            return True
        self.counters.frames_implausible += 1
        self.counters.frames_rejected += 1
        return False

    def forget_position(self, index: int) -> None:
        """Accept the next measurement whatever it is (e.g. after SET_ORIGIN moved the zero)."""
        self.measured.position_rad[index] = float('nan')

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
            self._check(self.safety.latch(
                FaultCode.BUS_ERROR, '', f'{bus}: {failures} sends failed in a row '
                f'({transport.last_error}); check cabling, termination and bus-off',
                self.clock.now()))
        return False

    def set_cyclic_members(self) -> None:
        """Fix the motors in cyclic traffic (present ones) after discovery."""
        self._active_tmotors = [m for m in self.tmotors.motors if self.present[m.index]]
        present_drives = [d for d in self.epos.drives if self.present[d.index]]
        self._active_epos = [(bus, [d for d in present_drives if d.bus == bus])
                             for bus in self.epos.buses(present_drives)]

    def tick(self, now: float) -> None:
        """One control cycle at send time ``now`` (robot monotonic seconds)."""
        self.counters.ticks += 1
        self._tick_index += 1
        self.poll(now)
        if self.lifecycle == Lifecycle.ACTIVE:
            self._cycle(now)
        elif (self.lifecycle == Lifecycle.INACTIVE
              and self._tick_index % self.config.cycle.inactive_poll_ticks == 0):
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
        if phase == self.config.cycle.tmotor_phase:
            self._send_tmotors(targets, velocities, measured)
        if phase == self.config.cycle.dxl_phase:
            for bus, bank in self.dxl_banks.items():
                if bank.present:
                    # One write for both packets: a PTY/USB write costs far more than its bytes.
                    self.transports.serial[bus].write(bank.goal_packet(targets)
                                                      + bank.read_packet())

    def _send_tmotors(self, targets, velocities, measured) -> None:
        safety = self.safety
        holding = self.holding
        for motor in self._active_tmotors:
            i = motor.index
            measured_rad = measured[i]
            if measured_rad != measured_rad:
                self.counters.tmotor_frames_skipped_no_feedback += 1
                continue
            target = targets[i]
            if safety.check_send(i, target) != SendCheck.OK:
                # Skipping leaves the motor on its last speed command; while holding after a
                # fault that must be a standstill, not whatever was last sent.
                if holding:
                    self.send(motor.bus, TMotorGroup.stop_frame(motor))
                continue
            velocity = 0.0 if holding else float(velocities[i])
            self.send(motor.bus, TMotorGroup.velocity_frame(motor, target, velocity,
                                                            measured_rad))

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


__all__ = ['BusController', 'Clock', 'ControllerError', 'MonotonicClock', 'MotorMissingError',
           'Transports']
