"""Entry point of the bus-loop child process (started by :class:`BusLoopClient`).

Order matters: attach the shared block, build the controller, apply the real-time settings
(SCHED_FIFO, affinity, mlockall, frozen GC), report ready, then loop. Real-time settings that
are refused are reported once (stderr and the snapshot) and the loop runs best-effort.
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import Any

from phil_description.core.estop_word import EstopWord
from phil_hardware.core.bus_controller import BusController, ControllerConfig, Transports
from phil_hardware.core.realtime import apply_realtime
from phil_hardware.core.transport import (
    CanTransport,
    SerialTransport,
    open_can_bus,
    open_serial_port,
)

from .config import BusLoopConfig
from .loop import BusLoop
from .shm import SnapshotLayout, StateExchange


def snapshot_layout(config: BusLoopConfig) -> SnapshotLayout:
    """The shared-block layout both processes derive from the configuration."""
    controller = config.controller
    buses = (*controller.can_buses, *controller.serial_buses)
    return SnapshotLayout(len(controller.joints), buses, config.trace_capacity)


def open_transports(config: ControllerConfig, warn) -> Transports:
    """Open every configured bus (closing the opened ones again if one fails)."""
    transports = Transports()
    try:
        for name, params in config.can_buses.items():
            transports.can[name] = CanTransport(name, open_can_bus(params))
        for name, params in config.serial_buses.items():
            transports.serial[name] = SerialTransport(name, open_serial_port(params, warn))
    except BaseException:
        transports.close()
        raise
    return transports


def run(config: BusLoopConfig, conn: Any, shm_name: str) -> None:
    """Child-process main: runs the loop and exits with its code (0 = orderly shutdown)."""
    exchange = StateExchange(snapshot_layout(config), shm_name, create=False)
    estop_word = EstopWord.attach(config.estop_word)
    controller = BusController(
        config.controller, lambda: open_transports(config.controller, controller.warn)
    )
    report = apply_realtime(config.realtime)
    for warning in report.warnings:
        controller.warn(warning)
    if report.warnings:  # once, at start-up; the snapshot carries them too
        sys.stderr.write('phil bus loop: ' + '; '.join(report.warnings) + '\n')
        sys.stderr.flush()

    def refreeze() -> None:
        if config.realtime.freeze_gc:
            gc.collect()
            gc.freeze()

    loop = BusLoop(
        config, controller, exchange, conn, report, after_command=refreeze, estop_word=estop_word
    )
    # Only the node decides when the loop stops: a Ctrl-C meant for the node (a terminal sends
    # it to the whole process group) must not kill the loop mid-tick. SIGTERM (also what
    # multiprocessing sends a daemon child when the node's interpreter exits) stops it after
    # leaving the motors safe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: loop.request_terminate())
    try:
        conn.send(('ready', report.to_dict()))
        code = loop.run()
    finally:
        exchange.close()
        estop_word.close()
        conn.close()
    sys.exit(code)


__all__ = ['SerialTransport', 'open_transports', 'run', 'snapshot_layout']
