"""What the bus controller and its motor families share: the clock, the open buses, the errors
of a lifecycle step, the traffic counters, and the two sides of the family interface
(:class:`MotorFamily`, implemented once per motor family, and :class:`BusAccess`, what a family
may use of the controller)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from mypy_extensions import mypyc_attr

from phil_hardware.core.clock import Clock, MonotonicClock
from phil_hardware.core.transport import CanTransport, SerialTransport

if TYPE_CHECKING:
    from phil_hardware.core.codecs.frame import CanFrame
    from phil_hardware.core.safety import Fault, SafetyMonitor

    from .config import ControllerConfig
    from .state import Lifecycle, Measurements

CanHandler = Callable[['CanFrame', float], None]
SerialHandler = Callable[[bytes, float], None]


@dataclass
class Transports:
    """Open buses by name."""

    can: dict[str, CanTransport] = field(default_factory=dict)
    serial: dict[str, SerialTransport] = field(default_factory=dict)

    def close(self) -> None:
        """Close every bus."""
        for can in self.can.values():
            can.close()
        for serial in self.serial.values():
            serial.close()


# A Python class where mypyc compiles the module (it cannot subclass RuntimeError natively).
@mypyc_attr(native_class=False)
class ControllerError(RuntimeError):
    """A lifecycle step failed; the message names the joint/bus and what to check."""


@mypyc_attr(native_class=False)
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


class FeedbackRoutes(Protocol):
    """Where a family registers the handlers of what its motors send."""

    def route_can(self, bus: str, can_id: int, handler: CanHandler, extended: bool) -> None:
        """Hand frames with ``can_id`` on ``bus`` to ``handler`` (extended: the low byte)."""

    def route_serial(self, bus: str, handler: SerialHandler) -> None:
        """Hand the bytes read from serial ``bus`` to ``handler``."""


class BusAccess(Protocol):
    """The bus controller as its motor families see it (state, sending, waiting, faults)."""

    config: ControllerConfig
    clock: Clock
    transports: Transports
    lifecycle: Lifecycle
    measured: Measurements
    safety: SafetyMonitor
    counters: ControllerCounters
    present: list[bool]
    supervising: bool
    holding: bool

    def send(self, bus: str, frame: CanFrame) -> bool:
        """Send on a CAN bus (failures counted, never raised)."""

    def wait(
        self,
        seconds: float,
        until: Callable[[], bool] | None = None,
        sync_buses: Sequence[str] = (),
    ) -> bool:
        """Poll the buses for ``seconds`` or until ``until()``; False on timeout."""

    def warn(self, text: str) -> None:
        """Keep a warning for the status."""

    def describe_motor(self, index: int) -> str:
        """E.g. "right_wrist (EPOS4 node 7 on can3)"."""

    def check_fault(self, fault: Fault | None) -> None:
        """Hold the measured pose when ``fault`` latched while active."""

    def plausible(self, index: int, position_rad: float, now: float) -> bool:
        """False for a feedback position that jumps impossibly (counted as rejected)."""

    def forget_position(self, index: int) -> None:
        """Accept the next measurement of joint ``index`` whatever it is."""


# A family may be a Python class where mypyc compiles this module (a new motor type tried out
# before it is compiled, the tests' recording families).
@mypyc_attr(allow_interpreted_subclasses=True)
class MotorFamily:
    """One motor family's driver (TMotor, EPOS4, Dynamixel): the controller runs every
    lifecycle step and every tick over its families in a fixed order, so a new family is one
    new module. Every hook defaults to doing nothing.

    Lifecycle: :meth:`bind_feedback` and :meth:`probe` at configure (before the missing motors
    are decided), :meth:`configure` after it; :meth:`activate`, :meth:`release`; while active
    :meth:`tick` every cycle, :meth:`hold` when a fault holds the robot and :meth:`resume`
    after a reset; while inactive :meth:`request_feedback` keeps the state readable.
    """

    def bind_feedback(self, routes: FeedbackRoutes) -> None:
        """Register the handlers of the frames and bytes this family's motors send."""

    def probe(self) -> None:
        """Ask every motor of the family to answer (discovery); may wait for replies."""

    def report(self) -> None:
        """Read what the discovered motors say about themselves into ``measured`` without
        changing anything (``phil doctor``)."""

    def configure(self, zero_origins: bool) -> None:
        """Configure the discovered motors (no torque)."""

    def activate(self) -> None:
        """Power the motors on; raise :class:`ControllerError` naming any that refuse."""

    def tick(self, phase: int, now: float, targets, velocities, modes) -> None:
        """Send this cycle's commands (``phase``: tick index mod ``cycle.slow_divider``)."""

    def request_feedback(self) -> None:
        """While inactive: ask for the feedback that does not arrive by itself."""

    def hold(self) -> None:
        """A fault holds the robot: power off what must not go on."""

    def resume(self) -> None:
        """Faults were reset while active: bring back what :meth:`hold` powered off."""

    def release(self) -> None:
        """Stop the motors and take their power off (never raises for a single motor)."""


__all__ = [
    'BusAccess',
    'Clock',
    'ControllerCounters',
    'ControllerError',
    'FeedbackRoutes',
    'MonotonicClock',
    'MotorFamily',
    'MotorMissingError',
    'Transports',
]
