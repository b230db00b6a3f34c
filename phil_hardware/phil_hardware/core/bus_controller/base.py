"""What the bus controller, its receive side and its lifecycle sequences share: the clock, the
open buses, the errors of a lifecycle step and the traffic counters."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from phil_hardware.core.transport import CanTransport, SerialTransport


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


__all__ = [
    'Clock',
    'ControllerCounters',
    'ControllerError',
    'MonotonicClock',
    'MotorMissingError',
    'Transports',
]
