"""Receive side of the bus controller: drain every bus that has input each tick and hand each
frame to the handler its motor family registered; the plausibility filter the families share.

:class:`FeedbackReceiver` is a base class of :class:`~.controller.BusController`; the families
decode and judge their own feedback (``bind_feedback``) and report faults through the
controller's ``check_fault``.
"""

from __future__ import annotations

from phil_hardware.core.codecs.frame import CanFrame, CodecError
from phil_hardware.core.transport.readiness import InputReadiness

from .base import CanHandler, ControllerCounters, MotorFamily, SerialHandler, Transports
from .config import ControllerConfig
from .state import Measurements

PLAUSIBLE_STEP_RAD = 0.2  # largest position step between two feedback frames, plus speed x gap


class FeedbackReceiver:
    """Bus draining and frame dispatch (the controller's receive half). Not thread-safe.

    The controller provides ``transports``, ``measured``, ``counters`` and ``families``.
    """

    transports: Transports
    measured: Measurements
    counters: ControllerCounters
    families: tuple[MotorFamily, ...]

    def __init__(self, config: ControllerConfig) -> None:
        """Empty dispatch tables; nothing received yet."""
        self._std: dict[str, dict[int, CanHandler]] = {}
        self._ext: dict[str, dict[int, CanHandler]] = {}
        self._serial: dict[str, SerialHandler] = {}
        self._rx: list[CanFrame] = []
        self._readiness = InputReadiness({})
        self._velocity_limits = [j.velocity_limit_rad_s for j in config.joints]
        self._jump_candidate = [float('nan')] * len(config.joints)

    def build_dispatch(self) -> None:
        """Per-bus tables from CAN id to feedback handler, filled in by the families."""
        self._std = {bus: {} for bus in self.transports.can}
        self._ext = {bus: {} for bus in self.transports.can}
        self._serial = {}
        for family in self.families:
            family.bind_feedback(self)

    def route_can(self, bus: str, can_id: int, handler: CanHandler, extended: bool) -> None:
        """Hand frames with ``can_id`` on ``bus`` to ``handler`` (extended: the low byte)."""
        (self._ext if extended else self._std).setdefault(bus, {})[can_id] = handler

    def route_serial(self, bus: str, handler: SerialHandler) -> None:
        """Hand the bytes read from serial ``bus`` to ``handler``."""
        self._serial[bus] = handler

    def poll(self, now: float) -> None:
        """Drain every bus with input and handle what arrived (never blocks)."""
        rx = self._rx
        buses = self.transports.can
        if buses is not self._readiness.transports:  # opened, closed or replaced
            self._readiness = InputReadiness(buses)
        for bus in self._readiness.ready():
            rx.clear()
            buses[bus].drain(rx)
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
                self._serial[bus](data, now)

    def plausible(self, index: int, position_rad: float, now: float) -> bool:
        """False for a feedback position that jumps impossibly (counted as rejected)."""
        # A CAN payload has no checksum of its own: a garbled frame that still decodes shows
        # up as an impossible jump. Rejecting it leaves the joint silent, so persistent garbage
        # ends in FEEDBACK_TIMEOUT instead of a made-up position.
        # Two consecutive frames agreeing on the new place are a real (if sudden) relocation.
        previous = self.measured.position_rad[index]
        if previous != previous:
            return True
        gap = now - self.measured.last_feedback_s[index]
        allowed = PLAUSIBLE_STEP_RAD + 2.0 * self._velocity_limits[index] * max(gap, 0.0)
        if abs(position_rad - previous) <= allowed:
            return True
        candidate = self._jump_candidate[index]
        self._jump_candidate[index] = position_rad
        if abs(position_rad - candidate) <= PLAUSIBLE_STEP_RAD:
            return True
        self.counters.frames_implausible += 1
        self.counters.frames_rejected += 1
        return False

    def forget_position(self, index: int) -> None:
        """Accept the next measurement whatever it is (e.g. after SET_ORIGIN moved the zero)."""
        self.measured.position_rad[index] = float('nan')


__all__ = ['PLAUSIBLE_STEP_RAD', 'FeedbackReceiver']
