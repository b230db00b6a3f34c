"""Start-up time of the run command: launcher start -> the robot answers GET_STATUS over TCP.

Starts the whole graph against the simulators several times (each run with its own ROS
domain, buses and port), times launcher start to the first `STATUS|STANDBY` reply, stops it
with Ctrl-C. The first run after a build is the cold one (files not yet in the page cache);
the others are warm. One JSON line per run and a summary (goals: 60 s cold, 10 s warm).

Usage: python phil_bringup/bench/bench_startup.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from phil_bringup.testing.graph import RunningGraph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    times_s = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            graph = RunningGraph(Path(folder))
            start = time.monotonic()
            try:
                graph.start()
                times_s.append(time.monotonic() - start)
                code = graph.interrupt(60.0)
            finally:
                graph.stop()
        print(
            json.dumps(
                {
                    'bench': 'startup',
                    'run': run + 1,
                    'to_get_status_s': round(times_s[-1], 2),
                    'ctrl_c_exit_code': code,
                }
            ),
            flush=True,
        )
    print(
        json.dumps(
            {
                'bench': 'startup',
                'first_s': round(times_s[0], 2),
                'warm_median_s': round(statistics.median(times_s[1:] or times_s), 2),
                'goal_cold_s': 60.0,
                'goal_warm_s': 10.0,
            }
        ),
        flush=True,
    )


if __name__ == '__main__':
    main()
