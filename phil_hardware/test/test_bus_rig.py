"""Rig for the controller-vs-simulator tests (no tests here): SimulatedRobot on python-can
virtual buses and a PTY, a BusController on the other end of the same channels, spy buses that see
every frame.

Controller and simulator run in lockstep on one virtual clock: each millisecond the controller
ticks, then the simulator serves what was sent and advances its physics to the same instant. The
steps are paced to the wall clock (never ahead of it, so the PTY's kernel hand-over always has
the time it had on an idle machine), but a busy machine only makes them come later: what the
rig computes does not depend on the load. (The real bus loop and the simulator as processes,
with real time, are the whole-graph tests' and the benchmarks'.)"""

from __future__ import annotations

import random
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


class LockstepClock:
    """Virtual time of controller and simulator (one :class:`~phil_hardware.core.clock.Clock`),
    advanced one paced millisecond at a time; a controller's ``sleep`` (its lifecycle waits)
    steps the simulator meanwhile."""

    def __init__(self) -> None:
        self._now_s = time.monotonic()
        self._wall_deadline_s = self._now_s
        self.robot: SimulatedRobot | None = None

    def now(self) -> float:
        return self._now_s

    def advance(self) -> float:
        """One millisecond later (not before the wall clock says so); the new time."""
        self._wall_deadline_s += STEP_S
        pause = self._wall_deadline_s - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            self._wall_deadline_s = time.monotonic()  # late: go on from now, no burst
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
    pty: PtyPort
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
    pty = PtyPort()
    clock = LockstepClock()
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
        transports.serial['dxl'] = SerialTransport(
            'dxl', open_serial_port(serial['dxl'], warnings.append)
        )
        return transports

    controller = BusController(config, open_transports, clock=clock)
    return Rig(model, robot, controller, pty, spies, sim_buses, clock=clock)
