"""Receive side of the bus controller: drain every bus each tick, decode the feedback of each
motor family, keep the measured state and hand what it shows to the safety monitor.

:class:`FeedbackReceiver` is the base class of :class:`~.controller.BusController`; it owns the
dispatch tables and the plausibility filter and works on the controller's state (documented
below). A fault it detects is passed to :meth:`FeedbackReceiver._check`, which the controller
implements (hold the measured pose).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from phil_hardware.core.codecs import epos4 as epos4_codec
from phil_hardware.core.codecs.frame import CanFrame, CodecError
from phil_hardware.core.codecs.tmotor import ERROR_CODE_TEXT
from phil_hardware.core.safety import Fault, FaultCode, SafetyMonitor

from .base import ControllerCounters, Transports
from .config import ControllerConfig
from .dynamixel import DynamixelBank
from .epos4 import Epos4Drive, Epos4Group, describe_statusword, drive_fault_text
from .state import Lifecycle, Measurements
from .tmotor import TMotorGroup, TMotorJoint, is_status_frame

PLAUSIBLE_STEP_RAD = 0.2  # largest position step between two feedback frames, plus speed x gap


class FeedbackReceiver:
    """Bus draining and feedback decoding (the controller's receive half). Not thread-safe.

    The controller provides ``lifecycle``, ``transports``, ``measured``, ``counters``,
    ``safety``, ``supervising``, ``tmotors``, ``epos`` and ``dxl_banks`` and implements
    :meth:`_check`.

    Attributes:
        sdo_replies: Latest SDO response frame per EPOS4 node id (read by the sequences).
        dxl_replies: Latest Dynamixel status per (bus, id) (read by the sequences).
    """

    config: ControllerConfig
    lifecycle: Lifecycle
    transports: Transports
    measured: Measurements
    counters: ControllerCounters
    safety: SafetyMonitor
    supervising: bool
    tmotors: TMotorGroup
    epos: Epos4Group
    dxl_banks: dict[str, DynamixelBank]

    def __init__(self, config: ControllerConfig) -> None:
        """Empty dispatch tables; nothing received yet."""
        self.sdo_replies: dict[int, object] = {}
        self.dxl_replies: dict[tuple[str, int], object] = {}
        self._std: dict[str, dict[int, Callable]] = {}
        self._ext: dict[str, dict[int, Callable]] = {}
        self._rx: list[CanFrame] = []
        self._velocity_limits = [j.velocity_limit_rad_s for j in config.joints]
        self._jump_candidate = [float('nan')] * len(config.joints)

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
                handler = table.get(
                    frame.arbitration_id & 0xFF if frame.is_extended_id else frame.arbitration_id
                )
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
            self.lifecycle != Lifecycle.CONFIGURING
        ):  # the probe's abort is expected
            self.counters.sdo_aborts += 1
            if self.lifecycle == Lifecycle.ACTIVE:
                self._check(
                    self.safety.latch(
                        FaultCode.MOTOR_ERROR,
                        drive.joint,
                        f'SDO 0x{reply.index:04X} refused: {reply.abort_text}',
                        now,
                    )
                )

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
                self._check(
                    self.safety.on_motor_error(i, bank.error_text(status) if alert else '', now)
                )

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
        """React to a fault the feedback showed (None: nothing happened)."""
        raise NotImplementedError


__all__ = ['PLAUSIBLE_STEP_RAD', 'FeedbackReceiver']
