"""TCP ESTOP -> the bus loop latched, with every other node of the graph healthy, stopped
(SIGSTOP), busy (another client floods the planner) or dead (SIGKILL); and how soon a dead or
stopped node of the motion path latches a FAULT, and how soon QUIT ends a graph after a crash.

One graph against the simulators plays a song; the first ESTOP comes mid-song. Each ESTOP's
latch time is the bus loop's own (``estop_seen_s`` in its shared block: when it saw the ESTOP
word change, CLOCK_MONOTONIC), read from outside the graph, minus the time the line was sent.
Conditions run in an order that leaves the graph usable for the next one: stopped nodes are
continued after their samples, kills come last. JSON lines, one per condition (goal: p99 <= 20
ms everywhere), then the fault and QUIT figures.

Usage: python phil_bringup/bench/bench_estop.py [--count 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

from phil_bringup.testing.graph import BusLoopView, RunningGraph

GOAL_P99_MS = 20.0
STOPPABLE = ('score_player', 'trajectory_generator', 'behavior_planner', 'hardware',
             'description_publisher')
# Killed in this order; the hardware last: without it there is nothing left to latch.
KILLABLE = ('description_publisher', 'score_player', 'trajectory_generator', 'behavior_planner')
MOTION_PATH = ('score_player', 'trajectory_generator', 'behavior_planner', 'hardware')


def quantiles(samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {'count': len(ordered), 'p50_ms': at(0.5), 'p99_ms': at(0.99),
            'max_ms': round(ordered[-1], 2)}


def measure_estops(graph: RunningGraph, view: BusLoopView, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        seen = view.snapshot().estop_seen
        sent_s = time.monotonic()
        reply = graph.line('ESTOP')
        if not reply.startswith('OK|ESTOP'):
            raise RuntimeError(f'ESTOP refused: {reply}')
        latched = view.wait(lambda s, seen=seen: s.estop_seen != seen, 5.0)
        if latched is None:
            raise RuntimeError('the bus loop did not latch within 5 s')
        samples.append((latched.estop_seen_s - sent_s) * 1e3)
        time.sleep(random.uniform(0.02, 0.08))
    return samples


def fault_latched_after(view: BusLoopView, node: str, since_s: float) -> float | None:
    """Seconds from ``since_s`` to the bus loop's fault naming ``node`` (None: none came)."""
    held = view.wait(lambda s: any(node in f.reason for f in s.faults), 5.0)
    if held is None:
        return None
    return min(f.time_s for f in held.faults if node in f.reason) - since_s


class Flood:
    """A second client pipelining commands at the planner as fast as it answers."""

    def __init__(self, port: int) -> None:
        self._socket = socket.create_connection(('127.0.0.1', port))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._socket.settimeout(1.0)
        while not self._stop.is_set():
            try:
                self._socket.sendall(b'LOOK|10|5\nGET_STATUS\nMOVE|waist|5\n' * 20)
                self._socket.recv(65536)
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self._socket.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, default=50)
    args = parser.parse_args()
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        graph = RunningGraph(Path(folder)).start()
        view = BusLoopView(graph.pid_of('hardware'))
        try:
            graph.line('START')
            graph.line_until_ok('READY', 60.0)
            graph.wait_state('IDLE', 30.0)
            graph.line('PLAY|rock')
            graph.wait_state('PLAYING', 10.0)
            time.sleep(8.0)  # DRUM START and a few bars: the first ESTOP comes mid-song
            conditions: list[tuple[str, list[float]]] = [
                ('healthy', measure_estops(graph, view, args.count))]
            fault_s: dict[str, float | None] = {}
            for node in STOPPABLE:
                pid = graph.pid_of(node)
                stopped_s = time.monotonic()
                os.kill(pid, signal.SIGSTOP)
                try:
                    if node in MOTION_PATH:
                        fault_s[f'stopped:{node}'] = fault_latched_after(view, node if node !=
                                                                         'hardware' else
                                                                         'hardware node',
                                                                         stopped_s)
                    conditions.append((f'stopped:{node}',
                                       measure_estops(graph, view, args.count)))
                finally:
                    os.kill(pid, signal.SIGCONT)
                time.sleep(1.0)   # heartbeats are back
            flood = Flood(graph.tcp_port)
            try:
                conditions.append(('busy:planner_flooded',
                                   measure_estops(graph, view, args.count)))
            finally:
                flood.close()
            for node in KILLABLE:
                killed_s = time.monotonic()
                os.kill(graph.pid_of(node), signal.SIGKILL)
                if node in MOTION_PATH:
                    fault_s[f'dead:{node}'] = fault_latched_after(view, node, killed_s)
                conditions.append((f'dead:{node}', measure_estops(graph, view, args.count)))
            for name, samples in conditions:
                lines.append({'benchmark': 'tcp_estop_to_bus_loop_latch', 'condition': name,
                              **quantiles(samples), 'goal_p99_ms': GOAL_P99_MS})
            for name, seconds in fault_s.items():
                lines.append({'benchmark': 'node_down_to_fault_latched', 'condition': name,
                              'latency_ms': None if seconds is None else round(seconds * 1e3, 1),
                              'goal_ms': 500.0})
            quit_s = time.monotonic()
            graph.line('QUIT')
            code = graph.wait_exit(60.0)
            lines.append({'benchmark': 'quit_after_crash_to_exit',
                          'killed': list(KILLABLE), 'seconds': round(time.monotonic() - quit_s, 2),
                          'exit_code': code, 'goal_s': 15.0})
        finally:
            view.close()
            graph.stop()
    for line in lines:
        print(json.dumps(line))


if __name__ == '__main__':
    main()
