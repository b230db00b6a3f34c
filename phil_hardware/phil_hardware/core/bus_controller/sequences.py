"""Lifecycle sequences of the bus controller (README, "Start-up and safety"), run
over its motor families in order (EPOS4, TMotor, Dynamixel; each family's steps are in its
module).

configure (before STANDBY, as upstream does it at program start): open buses, discover (every
family probes, then all listen), then each family configures its discovered motors (EPOS4 SDO
list, CSP mode, NMT start and Shutdown: PDOs flow, power stage off; TMotor SET_ORIGIN
(temporary) at the pinned pose).
activate (START): each family powers on (EPOS4 Enable Operation confirmed by its statusword,
Dynamixel torque on), then the robot holds the measured pose. Nothing in it waits for more than
one reply per device, so START's home motion follows within milliseconds.
deactivate: each family releases (EPOS4 Shutdown + SYNC, TMotor SET_RPM 0, Dynamixel torque off).

Every wait polls the buses and calls the controller's pump hook, so the bus loop keeps
publishing its state while a sequence runs. The sequences block the calling thread (the bus
loop) for at most the sum of the configured waits and timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phil_hardware.core.chunk_queue import ChunkQueue
from phil_hardware.core.codecs import epos4 as epos4_codec
from phil_hardware.core.safety import SafetyMonitor

from .base import Clock, ControllerError, MotorMissingError, Transports
from .config import ControllerConfig, motor_kind
from .feedback import FeedbackReceiver
from .state import Lifecycle

POLL_INTERVAL_S = 0.0005


class LifecycleSequences(FeedbackReceiver):
    """configure / activate / deactivate / shutdown and the wait they share; a base class of
    :class:`~.controller.BusController`, which provides the state named below."""

    config: ControllerConfig
    clock: Clock
    pump_hook: Callable[[], None] | None
    open_transports: Callable[[], Transports]
    lifecycle: Lifecycle
    safety: SafetyMonitor
    queue: ChunkQueue
    present: list[bool]
    missing: list[str]
    supervising: bool
    holding: bool

    def warn(self, text: str) -> None:
        """Keep a warning for the status (bounded to the last 20)."""
        raise NotImplementedError

    def describe_motor(self, index: int) -> str:
        """E.g. "right_wrist (EPOS4 node 7 on can3)"."""
        joint = self.config.joints[index]
        return f'{joint.name} ({motor_kind(joint.motor)} on {joint.motor.bus})'

    def wait(
        self,
        seconds: float,
        until: Callable[[], bool] | None = None,
        sync_buses: Sequence[str] = (),
    ) -> bool:
        """Poll the buses for ``seconds`` or until ``until()`` is true.

        Args:
            seconds: Longest wait [s].
            until: Stop early when this returns True.
            sync_buses: Send a SYNC on these buses every poll (drives answer with TPDOs).

        Returns:
            True when ``until`` became true (or there was none), False on timeout.

        Raises:
            ControllerError: An ESTOP arrived during activation.
        """
        clock = self.clock
        end = clock.now() + seconds
        while True:
            now = clock.now()
            for bus in sync_buses:
                self.send(bus, epos4_codec.encode_sync())
            self.poll(now)
            if self.pump_hook is not None:
                self.pump_hook()
            if self.lifecycle == Lifecycle.ACTIVATING and self.safety.estop_latched:
                raise ControllerError('activation aborted by ESTOP')
            if until is not None and until():
                return True
            if now >= end:
                return until is None
            clock.sleep(min(POLL_INTERVAL_S, end - now))

    def send(self, bus: str, frame) -> bool:
        """Send on a CAN bus (the controller's)."""
        raise NotImplementedError

    def configure(self, zero_origins: bool = True) -> None:
        """Open buses, discover motors, configure drives (no torque), and with
        ``zero_origins`` set the TMotor origins at the pose the robot is in. Blocks ~1-2 s.

        UNCONFIGURED -> INACTIVE (see module doc); ``zero_origins`` False keeps the TMotors'
        origins (a configure after the first, when the arms may have moved since the pins came
        out). On failure the buses are closed again.
        """
        if self.lifecycle != Lifecycle.UNCONFIGURED:
            raise ControllerError(
                f'configure needs state unconfigured, not {self.lifecycle.value}'
            )
        self.lifecycle = Lifecycle.CONFIGURING
        try:
            self.transports = self.open_transports()
            absent = [b for b in self.config.can_buses if b not in self.transports.can]
            absent += [b for b in self.config.serial_buses if b not in self.transports.serial]
            if absent:
                raise ControllerError(f'bus(es) not opened: {", ".join(absent)}')
            self.build_dispatch()
            self._discover()
            for family in self.families:
                family.configure(zero_origins)
            self.lifecycle = Lifecycle.INACTIVE
        except BaseException as error:
            self.transports.close()
            self.transports = Transports()
            self.lifecycle = Lifecycle.UNCONFIGURED
            if isinstance(error, MotorMissingError):
                self.missing = list(error.missing)
            raise

    def survey(self) -> list[int]:
        """Discovery only (``phil doctor``): open the buses, ask every motor to answer as
        :meth:`configure` does, and close them again. Nothing is configured or enabled; what
        the motors said is in ``measured``. Returns the indices of the joints that did not
        answer.
        """
        if self.lifecycle != Lifecycle.UNCONFIGURED:
            raise ControllerError(f'survey needs state unconfigured, not {self.lifecycle.value}')
        self.transports = self.open_transports()
        try:
            self.build_dispatch()
            silent = self._silent_motors()
            for index in silent:
                self.present[index] = False
            for family in self.families:
                family.report()
            return silent
        finally:
            self.transports.close()
            self.transports = Transports()

    def _silent_motors(self) -> list[int]:
        """Probe every family and listen; the indices of the joints that sent nothing."""
        counts = self.measured.feedback_count
        before = list(counts)
        for family in self.families:
            family.probe()
        indices = range(len(self.config.joints))
        self.wait(
            self.config.timing.discovery_listen_s,
            lambda: all(counts[i] > before[i] for i in indices),
        )
        return [i for i in indices if counts[i] == before[i]]

    def _discover(self) -> None:
        joints = self.config.joints
        missing = self._silent_motors()
        refused = [i for i in missing if joints[i].name not in self.config.allow_missing]
        if refused:
            raise MotorMissingError(
                [joints[i].name for i in refused],
                'motor(s) not found: '
                + '; '.join(self.describe_motor(i) for i in refused)
                + '. Check power, wiring and ids, or list them in allow_missing',
            )
        self.missing = [joints[i].name for i in missing]
        for i in missing:
            self.present[i] = False
            self.safety.set_enabled(i, False)
            self.measured.status[i] = 'missing'
            self.warn(f'{self.describe_motor(i)} not found; excluded (allow_missing)')

    def activate(self) -> None:
        """Enable drives and servos, start holding. Blocks a few ms.

        INACTIVE -> ACTIVE (see module doc). On failure everything enabled is released again.
        """
        if self.lifecycle != Lifecycle.INACTIVE:
            raise ControllerError(f'activate needs state inactive, not {self.lifecycle.value}')
        if self.safety.faulted:
            reasons = '; '.join(f'{f.joint or "robot"}: {f.reason}' for f in self.safety.faults)
            raise ControllerError(f'faults latched ({reasons}); reset first')
        self.lifecycle = Lifecycle.ACTIVATING
        try:
            for family in self.families:
                family.activate()
            measured = self.measured
            self.supervising = True
            self.safety.arm(self.clock.now())
            self.queue.hold(measured.position_rad, [0] * measured.count)
            self.holding = False
            self.lifecycle = Lifecycle.ACTIVE
        except BaseException:
            self.release()
            self.lifecycle = Lifecycle.INACTIVE
            raise

    def release(self) -> None:
        """Stop the motors: every family takes its power off."""
        for family in self.families:
            family.release()

    def deactivate(self) -> None:
        """Stop cyclic sending, Maxon shutdown, servo torque off. Blocks briefly.

        ACTIVE -> INACTIVE.
        """
        if self.lifecycle != Lifecycle.ACTIVE:
            raise ControllerError(f'deactivate needs state active, not {self.lifecycle.value}')
        self.lifecycle = Lifecycle.DEACTIVATING
        self.supervising = False
        self.safety.disarm()
        self.queue.halt()
        try:
            self.release()
        finally:
            self.lifecycle = Lifecycle.INACTIVE

    def shutdown(self) -> None:
        """Deactivate if needed and close every bus (finalized): any state -> FINALIZED."""
        try:
            if self.lifecycle == Lifecycle.ACTIVE:
                self.deactivate()
        finally:
            self.transports.close()
            self.transports = Transports()
            self.lifecycle = Lifecycle.FINALIZED


__all__ = ['POLL_INTERVAL_S', 'LifecycleSequences']
