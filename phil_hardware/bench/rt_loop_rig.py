"""The probing rig of ``bench_rt_loop``: the device simulator it runs against, the trajectory
chunks it sends (every joint moves, the right wrist steps), and the sniffer that sees when a
step's first frame went out on the bus."""

from __future__ import annotations

import math
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from phil_description.core import CanBusParams
from phil_description.core.trajectory import Chunk
from phil_hardware.core.codecs import epos4
from phil_hardware.core.transport import open_can_bus
from phil_hardware.core.transport.can_bus import CanTransport

PROBE_STEP_RAD = math.radians(0.5)
SWAY_RAD = math.radians(2.0)  # every other joint's motion around its held target


class Sniffer:
    """Watches can3 for the right wrist's target RPDO; records when each arrived (wall
    clock, taken as the frame is read: the sniffer waits in ``select``)."""

    def __init__(self, params: CanBusParams, node_id: int) -> None:
        self.bus = CanTransport('sniffer', open_can_bus(params))
        self.cob = epos4.RPDO_TARGET_POSITION_BASE + node_id
        self.frames: list[tuple[float, int]] = []  # (wall-clock receive time, counts)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        received: list = []
        descriptor = self.bus.fileno()
        while not self._stop.is_set():
            if not select.select([descriptor], [], [], 0.05)[0]:
                continue
            received.clear()
            self.bus.drain(received, 256)
            now = time.time()
            for frame in received:
                if frame.arbitration_id == self.cob:
                    counts = int.from_bytes(frame.data[:4], 'little', signed=True)
                    self.frames.append((now, counts))

    def first_change_after(self, wall_time_s: float, old_counts: int) -> float | None:
        for stamp, counts in list(self.frames):
            if stamp >= wall_time_s and abs(counts - old_counts) > 100:
                return stamp
        return None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1.0)
        self.bus.close()


def start_simulator(base: int, link: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'phil_hardware.sim',
            '--can-channel-base',
            f'ff11::7068:{base:x}',
            '--dxl-port',
            str(link),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line or 'ready' in line:
            break
    return process


def probe_chunk(snapshot, wrist, sign: float, limits_rad) -> tuple[Chunk, int]:
    """Every joint moves, as while playing: a small step of the right wrist that starts now
    (its first frame is easy to spot) and a slow sway of the others around their targets.
    The chunk and the wrist's counts before it."""
    held = np.array(snapshot.targets_rad)
    times = np.linspace(0.0, 0.45, 46)
    sway = SWAY_RAD * np.sin(np.pi * times / 0.45)
    positions = held + np.outer(sign * sway, np.ones(held.size))
    positions = np.clip(positions, *limits_rad)
    positions[:, wrist.index] = held[wrist.index] + sign * PROBE_STEP_RAD
    before = epos4.position_rad_to_counts(wrist.motor.joint_to_motor_rad(held[wrist.index]))
    return Chunk(snapshot.joint_names, time.monotonic(), times, positions), before


def probe_latencies(sniffer: Sniffer, probes: list[tuple[float, int]]) -> list[float]:
    """Send to first frame with the new target [s], per probe seen within 0.4 s."""
    latencies = []
    for sent_wall, before in probes:
        seen = sniffer.first_change_after(sent_wall, before)
        if seen is not None and seen - sent_wall < 0.4:
            latencies.append(seen - sent_wall)
    return latencies
