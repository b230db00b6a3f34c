"""CPU per process of the whole graph (simulated robot), idle and while a song plays.

Starts the graph (launcher + device simulators; ``--composed``: the command path's nodes in one
process), STARTs and READYs it, then measures each started process's CPU time (its child
processes apart, as ``<name>.children``: the hardware node's bus loop) over a window with
the robot IDLE and over a window while ``rock`` plays. Prints one JSON line per window: the
share of one core per process and in total (the development VM has two).

Usage: python phil_bringup/bench/bench_cpu.py [--window-s 20] [--composed]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import tempfile
import time
from pathlib import Path

from phil_bringup.testing.graph import RunningGraph
from phil_hardware.core.cpu_load import cpu_seconds


def with_children(pid: int) -> list[int]:
    """``pid`` and every process below it (/proc children lists)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f'/proc/{current}/task').glob('*/children'):
            with contextlib.suppress(OSError):  # the task ended meanwhile
                pending += [int(child) for child in task.read_text().split()]
    return found


def process_cpu_s(graph: RunningGraph) -> dict[str, float]:
    """CPU seconds so far of each process the launcher started, and of its child processes
    as ``<name>.children`` where it has any (the hardware node's: its bus loop)."""
    started = re.findall(r' as (\w+) \(pid (\d+)\)', ''.join(graph.output))
    used = {}
    for name, pid in started:
        own, *children = with_children(int(pid))
        with contextlib.suppress(OSError):  # it ended meanwhile
            used[name] = cpu_seconds(own)
        below = 0.0
        for each in children:
            with contextlib.suppress(OSError):
                below += cpu_seconds(each)
        if children:
            used[f'{name}.children'] = below
    return used


def measure(graph: RunningGraph, window_s: float) -> dict[str, float]:
    before, start = process_cpu_s(graph), time.monotonic()
    time.sleep(window_s)
    after, elapsed = process_cpu_s(graph), time.monotonic() - start
    cores = {
        name: round((after[name] - before[name]) / elapsed, 3) for name in before if name in after
    }
    return {**cores, 'total': round(sum(cores.values()), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--window-s', type=float, default=20.0)
    parser.add_argument(
        '--composed', action='store_true', help='the command path in one process (launcher)'
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        graph = RunningGraph(Path(folder), ('--composed',) if args.composed else ()).start()
        try:
            graph.start_robot()
            graph.wait_state('IDLE', 30.0)
            time.sleep(2.0)
            windows = {'idle': measure(graph, args.window_s)}
            graph.line('PLAY|rock')
            graph.wait_state('PLAYING', 10.0)
            time.sleep(2.0)  # DRUM START
            windows['playing'] = measure(graph, args.window_s)
            graph.line('QUIT')
            graph.wait_exit(90.0)
        finally:
            graph.stop()
    for condition, cores in windows.items():
        print(
            json.dumps(
                {
                    'benchmark': 'cpu_per_process',
                    'composed': args.composed,
                    'condition': condition,
                    'window_s': args.window_s,
                    'cores': cores,
                }
            )
        )


if __name__ == '__main__':
    main()
