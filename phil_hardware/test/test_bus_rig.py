"""Rig for the controller-vs-simulator tests (no tests here): SimulatedRobot on python-can
virtual buses and a PTY, a BusController on the other end of the same channels, spy buses that see
every frame.

Controller and simulator run in lockstep on one virtual clock: each millisecond the controller
ticks, then the simulator serves what was sent and advances its physics to the same instant.
What the rig computes does not depend on the load: the virtual buses hand frames over at once,
and a step begins only once the bytes of the last one have crossed the PTY (the kernel's tty
worker moves them in its own time: a busy or paused machine makes the step come later, never
the bytes). The steps are not paced to the wall clock. (The real bus loop and the simulator as
processes, with real time, are the whole-graph tests' and the benchmarks'.)"""

from __future__ import annotations

import fcntl
import random
import struct
import termios
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import can

from phil_description.core import RobotModel
from phil_hardware.core.bus_controller import (
    BusController,
    SequenceTiming,
    Transports,
    controller_config_from_model,
)
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.safety import SafetyConfig
from phil_hardware.core.transport import CanTransport, SerialTransport, open_serial_port
from phil_hardware.sim import PtyPort, SimConfig, SimulatedRobot

FAST_TIMING = SequenceTiming(discovery_listen_s=0.15, origin_settle_s=0.05, sdo_timeout_s=0.3)
STEP_S = 0.001


class SerialLine:
    """The Dynamixel PTY between the rig's controller and simulator, counted at both ends.

    Bytes written at one end reach the other through the kernel's tty worker, in its own time.
    :meth:`settle` waits until every byte written has arrived, so that no reply comes a step
    later, or a hundred, because the machine was busy.
    """

    SETTLE_TIMEOUT_S = 10.0

    def __init__(self, pty: CountingPty) -> None:
        self.pty = pty
        self._transport: SerialTransport | None = None
        self._written_before = self._read_before = 0

    def attach(self, transport: SerialTransport) -> SerialTransport:
        """Watch the controller's newly opened end (bytes left over from an end closed
        before it may still arrive: they only count as more than was awaited)."""
        self._transport = transport
        self._written_before, self._read_before = self.pty.bytes_written, self.pty.bytes_read
        return transport

    def in_flight(self) -> tuple[int, int]:
        """Bytes (controller to simulator, simulator to controller) written and not arrived."""
        transport = self._transport
        if transport is None or not transport.port.is_open:
            return 0, 0
        at_simulator = self.pty.bytes_read - self._read_before + self.pty.bytes_waiting()
        at_controller = transport.bytes_arrived
        return (
            max(0, transport.bytes_sent - at_simulator),
            max(0, self.pty.bytes_written - self._written_before - at_controller),
        )

    def settle(self) -> None:
        """Return once nothing written is still on its way (AssertionError after
        :attr:`SETTLE_TIMEOUT_S` of wall time: the line lost bytes, a rig fault)."""
        deadline = None
        while any(pending := self.in_flight()):
            if deadline is None:
                deadline = time.monotonic() + self.SETTLE_TIMEOUT_S
            elif time.monotonic() > deadline:
                raise AssertionError(
                    f'{pending[0]} bytes to the simulator and {pending[1]} to the controller '
                    f'still on the PTY after {self.SETTLE_TIMEOUT_S} s'
                )
            time.sleep(0.0001)


class CountingPty(PtyPort):
    """:class:`PtyPort` that counts the bytes its master end reads and writes."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = self.bytes_written = 0

    def read(self, max_bytes: int = 4096) -> bytes:
        data = super().read(max_bytes)
        self.bytes_read += len(data)
        return data

    def write(self, data: bytes) -> int:
        written = super().write(data)
        self.bytes_written += written
        return written

    def bytes_waiting(self) -> int:
        """Bytes that arrived at the master end and were not read yet."""
        return struct.unpack('i', fcntl.ioctl(self.fileno(), termios.FIONREAD, b'\0' * 4))[0]


class LockstepClock:
    """Virtual time of controller and simulator (one :class:`~phil_hardware.core.clock.Clock`),
    advanced one millisecond at a time once the serial line has settled; a controller's
    ``sleep`` (its lifecycle waits) steps the simulator meanwhile."""

    def __init__(self, line: SerialLine) -> None:
        self._now_s = time.monotonic()
        self.line = line
        self.robot: SimulatedRobot | None = None

    def now(self) -> float:
        return self._now_s

    def advance(self) -> float:
        """One millisecond later, once the bytes of the last one have crossed; the new time."""
        self.line.settle()
        self._now_s += STEP_S
        return self._now_s

    def sleep(self, seconds: float) -> None:
        # Time moves in whole steps: any sleep takes at least one (a wait's last, rounding-
        # sized remainder would otherwise never end).
        end = self._now_s + max(seconds, STEP_S) - 1e-9
        while self._now_s < end:
            self.robot.step(self.advance())


@dataclass
class Rig:
    """Simulator + controller + spies."""

    model: RobotModel
    robot: SimulatedRobot
    controller: BusController
    pty: CountingPty
    spies: dict[str, can.BusABC]
    sim_buses: dict[str, can.BusABC]
    clock: LockstepClock
    seen: dict[str, list[CanFrame]] = field(default_factory=dict)

    def now(self) -> float:
        """The rig's (virtual) time [s]."""
        return self.clock.now()

    def run(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Tick the controller, then step the simulator, every 1 ms of rig time for
        ``seconds`` (or until ``until()``)."""
        ctl, clock = self.controller, self.clock
        end = clock.now() + seconds - 1e-9
        while True:
            now = clock.advance()
            ctl.tick(now)
            self.robot.step(now)
            self.collect()
            if until is not None and until():
                return True
            if now >= end:
                return until is None

    def collect(self) -> None:
        """Move every frame the spies saw into :attr:`seen`."""
        for name, spy in self.spies.items():
            while (message := spy.recv(0)) is not None:
                self.seen.setdefault(name, []).append(
                    CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id)
                )

    def close(self) -> None:
        """Stop everything."""
        if self.controller.lifecycle.value != 'finalized':
            self.controller.shutdown()
        self.robot.stop()
        for bus in (*self.spies.values(), *self.sim_buses.values()):
            bus.shutdown()
        self.pty.close()


def make_rig(
    model: RobotModel,
    *,
    absent_buses: Iterable[str] = (),
    allow_missing: Iterable[str] = (),
    safety: SafetyConfig | None = None,
    sim_config: SimConfig | None = None,
    write_epos4_pdo_layout: bool = True,
) -> Rig:
    """Start the simulator and build (not configure) a controller on the same channels."""
    tag = f'phil-rig-{random.getrandbits(40):x}'
    channels = {name: f'{tag}-{name}' for name in model.hardware.can_buses}
    sim_buses = {
        name: can.Bus(interface='virtual', channel=channel)
        for name, channel in channels.items()
        if name not in set(absent_buses)
    }
    spies = {
        name: can.Bus(interface='virtual', channel=channel) for name, channel in channels.items()
    }
    pty = CountingPty()
    line = SerialLine(pty)
    clock = LockstepClock(line)
    robot = clock.robot = SimulatedRobot(model, sim_buses, pty, clock=clock, config=sim_config)
    serial = {'dxl': replace(model.hardware.serial_buses['dxl'], port=pty.slave_path)}
    config = controller_config_from_model(
        model, serial_buses=serial, timing=FAST_TIMING, safety=safety, allow_missing=allow_missing
    )
    config = replace(config, write_epos4_pdo_layout=write_epos4_pdo_layout)
    warnings: list[str] = []

    def open_transports() -> Transports:
        transports = Transports()
        for name, channel in channels.items():
            transports.can[name] = CanTransport(
                name, can.Bus(interface='virtual', channel=channel)
            )
        transports.serial['dxl'] = line.attach(
            SerialTransport('dxl', open_serial_port(serial['dxl'], warnings.append))
        )
        return transports

    controller = BusController(config, open_transports, clock=clock)
    return Rig(model, robot, controller, pty, spies, sim_buses, clock=clock)
