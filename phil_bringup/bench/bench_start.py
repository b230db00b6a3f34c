"""TCP START -> the first sample of START's home motion on the wire (the whole graph, simulated).

Runs START from STANDBY ``--runs`` times, a fresh graph (launcher + device simulators) every
``--per-graph`` runs. A client that behaves like upstream's (one write, no acknowledgement)
sends START and, right after it, READY; the time is that of the first right-wrist target
frame (EPOS4 RPDO on its simulated CAN bus, at the bus loop's own send time) that leaves the
pose the drive was enabled at by more than one encoder count: the home motion moves that wrist
90 -> 70 deg. Also the time until READY was carried out (GET_STATUS says IDLE). Between runs
in one graph the robot goes back to STANDBY as after a lost torque: ESTOP, the hardware
deactivated (a request signed with the graph key, as the planner's), RESET. JSON lines, one
per run and a summary (goal: p99 <= 200 ms).

Usage: python phil_bringup/bench/bench_start.py [--runs 100] [--per-graph 10]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from phil_bringup.testing.graph import FrameCapture, RunningGraph
from phil_bringup.testing.reference_client import ReferenceClient
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GRAPH_KEY_ENV, GraphKey
from phil_hardware.core.codecs import epos4
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.rt.tick_stats import percentiles
from phil_msgs.srv import HardwareRequest
from phil_ros.graph_safety import signed_request

JOINT = 'right_wrist'
GOAL_P99_MS = 200.0
STATE_TIMEOUT_S = 30.0


def first_departure_s(
    capture: FrameCapture, node_id: int, gear: float, resolution_rad: float, after_s: float
) -> float | None:
    """Send time of the first wrist target frame after ``after_s`` that leaves the first one
    sent after it (None: none yet)."""
    held = None
    for sent_s, arbitration_id, data, extended in list(capture.frames):
        if sent_s < after_s or extended or arbitration_id != 0x300 + node_id:
            continue
        position = epos4.decode_rpdo(
            CanFrame(arbitration_id, data, extended), gear_ratio=gear
        ).position_rad
        if held is None:
            held = position
        elif abs(position - held) > resolution_rad:
            return sent_s
    return None


class HardwareRequests:
    """Signed /hardware/request calls in the graph's domain (this process holds the key)."""

    def __init__(self, domain_id: int, key: GraphKey) -> None:
        self._key = key
        self._context = Context()
        rclpy.init(context=self._context, domain_id=domain_id)
        self._node = rclpy.create_node('bench_start', context=self._context)
        self._client = self._node.create_client(HardwareRequest, '/hardware/request')
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)

    def call(self, name: str, timeout_s: float = 10.0):
        """The response; None when none came (a first call may lose its answer while the
        server has not yet matched this client)."""
        if not self._client.wait_for_service(timeout_sec=timeout_s):
            return None
        future = self._client.call_async(
            signed_request(self._key, HardwareRequest.Request(request=name))
        )
        self._executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        return future.result() if future.done() else None

    def close(self) -> None:
        self._executor.shutdown()
        self._node.destroy_node()
        rclpy.try_shutdown(context=self._context)


def back_to_standby(client: ReferenceClient, hardware: HardwareRequests) -> bool:
    """ESTOP, deactivate, RESET: STANDBY again (START needed), as after a lost torque."""
    client.send('ESTOP')
    if client.wait_state('ESTOP', STATE_TIMEOUT_S)[1] != 'ESTOP':
        return False
    response = hardware.call('deactivate')
    if response is None or not response.accepted:
        return False
    client.send('RESET')
    return client.wait_state('STANDBY', STATE_TIMEOUT_S)[1] == 'STANDBY'


def one_start(
    client: ReferenceClient, capture: FrameCapture, motor, resolution_rad: float
) -> dict:
    sent_s = time.monotonic()
    client.send('START')
    client.send('READY')
    deadline = sent_s + 60.0
    moved_s = None
    while moved_s is None and time.monotonic() < deadline:
        time.sleep(0.005)
        moved_s = first_departure_s(
            capture, motor.device_id, motor.gear_ratio, resolution_rad, sent_s
        )
    idle = client.wait_state('IDLE', STATE_TIMEOUT_S)
    ready_s = time.monotonic() - sent_s if idle[1] == 'IDLE' else None
    return {
        'start_to_first_sample_ms': None
        if moved_s is None
        else round((moved_s - sent_s) * 1e3, 1),
        'start_to_ready_done_s': None if ready_s is None else round(ready_s, 2),
    }


def one_graph(folder: Path, secret: str, starts: int, motor, resolution_rad: float):
    """``starts`` START runs in one fresh graph (the first right after it came up)."""
    graph = RunningGraph(folder)
    graph.env[GRAPH_KEY_ENV] = secret
    key = GraphKey(secret)
    with graph:
        capture = FrameCapture(graph.channels, send_times=True, buses=[int(motor.bus[3:])])
        hardware = HardwareRequests(int(graph.env['ROS_DOMAIN_ID']), key)
        client = ReferenceClient(graph.tcp_port, gaps_s=(0.0, 0.0))
        try:
            for run in range(starts):
                if run and not back_to_standby(client, hardware):
                    yield {'error': 'could not get back to STANDBY'}
                    break
                yield {
                    'fresh_graph': run == 0,
                    **one_start(client, capture, motor, resolution_rad),
                }
            client.send('QUIT')
            graph.wait_exit(60.0)
        finally:
            client.close()
            hardware.close()
            capture.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=100)
    parser.add_argument('--per-graph', type=int, default=10)
    args = parser.parse_args()
    motor = default_robot_model(sim=True).joint(JOINT).motor
    resolution_rad = 0.5 * epos4.counts_to_position_rad(1, motor.gear_ratio)
    secret = os.environ.get(GRAPH_KEY_ENV) or GraphKey.generate()
    samples_ms, fresh_ms, run = [], [], 0
    while run < args.runs:
        with tempfile.TemporaryDirectory() as folder:
            starts = min(args.per_graph, args.runs - run)
            for figures in one_graph(Path(folder), secret, starts, motor, resolution_rad):
                run += 1
                print(
                    json.dumps({'benchmark': 'start_to_first_sample', 'run': run, **figures}),
                    flush=True,
                )
                sample = figures.get('start_to_first_sample_ms')
                if sample is not None:
                    samples_ms.append(sample)
                    if figures['fresh_graph']:
                        fresh_ms.append(sample)
    p50, p99 = percentiles(np.asarray(samples_ms or [np.nan]), (50.0, 99.0))
    print(
        json.dumps(
            {
                'benchmark': 'start_to_first_sample',
                'runs': args.runs,
                'measured': len(samples_ms),
                'p50_ms': round(p50, 1),
                'p99_ms': round(p99, 1),
                'max_ms': max(samples_ms, default=None),
                'fresh_graph_max_ms': max(fresh_ms, default=None),
                'goal_p99_ms': GOAL_P99_MS,
            }
        ),
        flush=True,
    )


if __name__ == '__main__':
    main()
