"""Rig for the controller-vs-simulator tests (no tests here): SimulatedRobot on python-can
virtual buses and a PTY, a BusController on the other end of the same channels, spy buses that see
every frame, and paced ticking (sleep-based, so the simulator thread gets the GIL)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import can

from phil_description.core import RobotModel, SerialBusParams
from phil_hardware.core.bus_controller import (
    BusController,
    SequenceTiming,
    Transports,
    controller_config_from_model,
)
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.safety import SafetyConfig
from phil_hardware.core.transport import CanTransport, SerialTransport, open_serial_port
from phil_hardware.sim import PtyPort, SimulatedRobot

FAST_TIMING = SequenceTiming(discovery_listen_s=0.15, origin_settle_s=0.05,
                             controlword_settle_s=0.02, sdo_timeout_s=0.3)
# Simulator and controller share one interpreter here; a GIL hand-over can delay feedback by
# tens of ms, so the in-process rig supervises with longer timeouts than the robot (50/100 ms).
RIG_SAFETY = SafetyConfig(can_feedback_timeout_s=0.25, serial_feedback_timeout_s=0.3)


@dataclass
class Rig:
    """Simulator + controller + spies."""

    model: RobotModel
    robot: SimulatedRobot
    controller: BusController
    pty: PtyPort
    spies: dict[str, can.BusABC]
    sim_buses: dict[str, can.BusABC]
    seen: dict[str, list[CanFrame]] = field(default_factory=dict)

    def run(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Tick the controller every 1 ms for ``seconds`` (or until ``until()``)."""
        ctl = self.controller
        start = time.monotonic()
        deadline = start
        while True:
            deadline += 0.001
            pause = deadline - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            ctl.tick(time.monotonic())
            self.collect()
            if until is not None and until():
                return True
            if time.monotonic() - start >= seconds:
                return until is None

    def collect(self) -> None:
        """Move every frame the spies saw into :attr:`seen`."""
        for name, spy in self.spies.items():
            while (message := spy.recv(0)) is not None:
                self.seen.setdefault(name, []).append(
                    CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id))

    def close(self) -> None:
        """Stop everything."""
        if self.controller.lifecycle.value != 'finalized':
            self.controller.shutdown()
        self.robot.stop()
        for bus in (*self.spies.values(), *self.sim_buses.values()):
            bus.shutdown()
        self.pty.close()


def make_rig(model: RobotModel, *, absent_buses: Iterable[str] = (),
             allow_missing: Iterable[str] = ()) -> Rig:
    """Start the simulator and build (not configure) a controller on the same channels."""
    tag = f'phil-rig-{random.getrandbits(40):x}'
    channels = {name: f'{tag}-{name}' for name in model.hardware.can_buses}
    sim_buses = {name: can.Bus(interface='virtual', channel=channel)
                 for name, channel in channels.items() if name not in set(absent_buses)}
    spies = {name: can.Bus(interface='virtual', channel=channel)
             for name, channel in channels.items()}
    pty = PtyPort()
    robot = SimulatedRobot(model, sim_buses, pty).start()
    serial = {'dxl': SerialBusParams('dxl', pty.slave_path, 4_500_000, 2.0, 1)}
    config = controller_config_from_model(model, serial_buses=serial, timing=FAST_TIMING,
                                          safety=RIG_SAFETY, allow_missing=allow_missing)
    warnings: list[str] = []

    def open_transports() -> Transports:
        transports = Transports()
        for name, channel in channels.items():
            transports.can[name] = CanTransport(name, can.Bus(interface='virtual',
                                                              channel=channel))
        transports.serial['dxl'] = SerialTransport('dxl', open_serial_port(serial['dxl'],
                                                                             warnings.append))
        return transports

    controller = BusController(config, open_transports)
    return Rig(model, robot, controller, pty, spies, sim_buses)
