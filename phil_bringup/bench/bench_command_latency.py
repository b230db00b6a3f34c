"""TCP command -> first frame of the resulting motion on the bus (the whole graph, simulated).

Starts the graph (launcher + device simulators), STARTs and READYs it, then sends MOVE commands
for the right wrist over TCP, each 0.3 s long, and times the first EPOS4 target-position frame
(0x307) on the simulated CAN bus whose target leaves the held value by at least one encoder
count, at the time the bus loop sent it (udp_multicast frames carry their CLOCK_MONOTONIC send
time). Prints one JSON line with
p50/p99/max over the commands (goal p99 <= 20 ms; upstream could wait ~1 s behind idle filler).

Usage: python phil_bringup/bench/bench_command_latency.py [--count 100] [--composed]
(--composed: the command path's nodes in one process, the launcher's --composed.)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from phil_bringup.testing.graph import FrameCapture, RunningGraph
from phil_description.core import default_robot_model
from phil_hardware.core.codecs import epos4
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.rt.tick_stats import percentiles

JOINT = 'right_wrist'


def wrist_targets_after(capture: FrameCapture, start_index: int, node_id: int, gear: float):
    for index in range(start_index, len(capture.frames)):
        received_s, arbitration_id, data, extended = capture.frames[index]
        if not extended and arbitration_id == 0x300 + node_id:
            command = epos4.decode_rpdo(CanFrame(arbitration_id, data, extended), gear_ratio=gear)
            yield received_s, command.position_rad


def last_wrist_target(capture: FrameCapture, end_index: int, node_id: int, gear: float):
    """The target of the newest wrist target frame before ``end_index`` (None if none)."""
    for index in range(end_index - 1, -1, -1):
        _, arbitration_id, data, extended = capture.frames[index]
        if not extended and arbitration_id == 0x300 + node_id:
            return epos4.decode_rpdo(
                CanFrame(arbitration_id, data, extended), gear_ratio=gear
            ).position_rad
    return None


def first_motion_s(
    capture: FrameCapture,
    mark: int,
    motor,
    held: float | None,
    resolution_rad: float,
    until_s: float,
) -> float | None:
    """Send time of the first wrist target frame from ``mark`` on that leaves ``held`` by more
    than ``resolution_rad``, waiting for it until ``until_s`` (None: none came)."""
    first = None
    while first is None and time.monotonic() < until_s:
        for received_s, position in wrist_targets_after(
            capture, mark, motor.device_id, motor.gear_ratio
        ):
            if held is not None and abs(position - held) > resolution_rad:
                first = received_s
                break
        time.sleep(0.001)
    return first


def measure_latencies(
    graph: RunningGraph, capture: FrameCapture, motor, resolution_rad: float, count: int
) -> list[float]:
    """``count`` wrist MOVEs, alternating between two angles: each one's latency [ms] from the
    send to its first frame (a MOVE whose motion was not seen within 2 s has none)."""
    latencies_ms = []
    angles = (60.0, 80.0)
    for index in range(count):
        target = angles[index % 2]
        mark = len(capture.frames)
        held = last_wrist_target(capture, mark, motor.device_id, motor.gear_ratio)
        sent_s = time.monotonic()
        reply = graph.line(f'MOVE|{JOINT}|{target}|0.3')
        if not reply.startswith('OK|'):
            raise RuntimeError(f'MOVE refused: {reply}')
        first = first_motion_s(capture, mark, motor, held, resolution_rad, sent_s + 2.0)
        if first is not None:
            latencies_ms.append((first - sent_s) * 1e3)
        time.sleep(0.45)  # let the 0.3 s move finish before the next command
    return latencies_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, default=100)
    parser.add_argument(
        '--composed', action='store_true', help='the command path in one process (launcher)'
    )
    args = parser.parse_args()
    motor = default_robot_model(sim=True).joint(JOINT).motor
    # Half an encoder count: a target one count away from the held one is the motion's start.
    resolution_rad = 0.5 * epos4.counts_to_position_rad(1, motor.gear_ratio)
    with tempfile.TemporaryDirectory() as folder:
        graph = RunningGraph(Path(folder), ('--composed',) if args.composed else ()).start()
        # The wrist's bus only, stamped with the bus loop's send times: this process's own
        # lag in reading the frames must not count.
        capture = FrameCapture(graph.channels, send_times=True, buses=[int(motor.bus[3:])])
        try:
            graph.line('START')
            graph.line('READY')
            graph.wait_state('IDLE', 30.0)
            time.sleep(4.0)  # START's 3 s move to home
            latencies_ms = measure_latencies(graph, capture, motor, resolution_rad, args.count)
            graph.line('QUIT')
            graph.wait_exit(60.0)
        finally:
            capture.close()
            graph.stop()
    p50_ms, p99_ms = percentiles(np.asarray(latencies_ms), (50.0, 99.0))
    print(
        json.dumps(
            {
                'benchmark': 'tcp_command_to_first_frame',
                'composed': args.composed,
                'commands': args.count,
                'measured': len(latencies_ms),
                'p50_ms': round(p50_ms, 2),
                'p99_ms': round(p99_ms, 2),
                'max_ms': round(max(latencies_ms), 2),
                'goal_p99_ms': 20.0,
            }
        )
    )


if __name__ == '__main__':
    main()
