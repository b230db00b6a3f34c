"""TCP START -> the first sample of START's home motion on the wire (the whole graph, simulated).

Each run starts a fresh graph (launcher + device simulators), waits until it answers
GET_STATUS in STANDBY, sends START from a client that behaves like upstream's (one write, no
acknowledgement) and times the first right-wrist target frame (EPOS4 RPDO on its simulated CAN
bus, at the bus loop's own send time) that leaves the pose the drives were enabled at by more
than one encoder count: the home motion moves that wrist 90 -> 70 deg. Also the time until a
READY sent right after START was carried out (GET_STATUS says IDLE). JSON lines, one per run
and a summary (goal: p99 <= 200 ms).

Usage: python phil_bringup/bench/bench_start.py [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from phil_bringup.testing.graph import FrameCapture, RunningGraph
from phil_bringup.testing.reference_client import ReferenceClient
from phil_description.core import default_robot_model
from phil_hardware.core.codecs import epos4
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.rt.tick_stats import percentiles

JOINT = 'right_wrist'
GOAL_P99_MS = 200.0


def first_departure_s(capture: FrameCapture, node_id: int, gear: float,
                      resolution_rad: float) -> float | None:
    """Send time of the first wrist target frame away from the first one (None: none yet)."""
    held = None
    for sent_s, arbitration_id, data, extended in list(capture.frames):
        if extended or arbitration_id != 0x300 + node_id:
            continue
        position = epos4.decode_rpdo(CanFrame(arbitration_id, data, extended),
                                     gear_ratio=gear).position_rad
        if held is None:
            held = position
        elif abs(position - held) > resolution_rad:
            return sent_s
    return None


def one_run(folder: Path, motor, resolution_rad: float) -> dict:
    with RunningGraph(folder) as graph:
        capture = FrameCapture(graph.channels, send_times=True, buses=[int(motor.bus[3:])])
        try:
            client = ReferenceClient(graph.tcp_port, gaps_s=(0.0, 0.0))
            sent_s = time.monotonic()
            client.send('START')
            client.send('READY')
            deadline = sent_s + 60.0
            moved_s = None
            while moved_s is None and time.monotonic() < deadline:
                time.sleep(0.01)
                moved_s = first_departure_s(capture, motor.device_id, motor.gear_ratio,
                                            resolution_rad)
            idle = client.wait_state('IDLE', 30.0)
            ready_s = time.monotonic() - sent_s if idle[1] == 'IDLE' else None
            client.send('QUIT')
            graph.wait_exit(60.0)
        finally:
            capture.close()
    return {'start_to_first_sample_ms': None if moved_s is None else
            round((moved_s - sent_s) * 1e3, 1),
            'start_to_ready_done_s': None if ready_s is None else round(ready_s, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=10)
    args = parser.parse_args()
    motor = default_robot_model(sim=True).joint(JOINT).motor
    resolution_rad = 0.5 * epos4.counts_to_position_rad(1, motor.gear_ratio)
    samples_ms = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            figures = one_run(Path(folder), motor, resolution_rad)
        print(json.dumps({'benchmark': 'start_to_first_sample', 'run': run + 1, **figures}),
              flush=True)
        if figures['start_to_first_sample_ms'] is not None:
            samples_ms.append(figures['start_to_first_sample_ms'])
    p50, p99 = percentiles(np.asarray(samples_ms or [np.nan]), (50.0, 99.0))
    print(json.dumps({'benchmark': 'start_to_first_sample', 'runs': args.runs,
                      'measured': len(samples_ms), 'p50_ms': round(p50, 1),
                      'p99_ms': round(p99, 1), 'max_ms': max(samples_ms, default=None),
                      'goal_p99_ms': GOAL_P99_MS}), flush=True)


if __name__ == '__main__':
    main()
