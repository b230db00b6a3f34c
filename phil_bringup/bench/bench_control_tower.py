"""The control tower page never delays the robot: the same graph measured without a page and
then with one open and animating in headless Chromium (``--pages``), and ESTOP from the page
against ESTOP over TCP and through ``/phil/estop`` (what ``phil estop`` calls).

One graph against the simulators (START, READY). Per condition: ``--moves`` wrist MOVEs over
TCP (send -> first frame on the bus, as ``bench_command_latency``) and one play of ``--score``
(detected impact - commanded hit, as ``bench_hit_timing``). Then ``--estops`` ESTOPs from each
route while a song plays (send -> the bus loop latched, as ``bench_estop``). JSON lines:
``control_tower`` per condition, the ratios page / no page (goal: within the noise of these
VMs, p99 ratios <= 1.5), and one line per ESTOP route (goal: the page's p99 no worse than
``phil estop``'s).

Usage: python phil_bringup/bench/bench_control_tower.py [--moves 40] [--estops 30]
       [--score rock] [--pages 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_command_latency import JOINT, measure_latencies
from bench_estop import measure_estops
from bench_hit_timing import play

from phil_bringup.plots import runlog
from phil_bringup.plots.stats import hit_timing
from phil_bringup.testing.browser import browser_missing, headless_chromium
from phil_bringup.testing.graph import FrameCapture, RunningGraph, free_tcp_port
from phil_bringup.testing.tower_client import TowerConnection
from phil_description.core import default_robot_model
from phil_hardware.core.codecs import epos4
from phil_hardware.rt.tick_stats import percentiles


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--moves', type=int, default=40)
    parser.add_argument('--estops', type=int, default=30)
    parser.add_argument('--score', default='rock')
    parser.add_argument('--pages', type=int, default=1, help='browser tabs open on the page')
    return parser.parse_args()


def condition(graph, capture, motor, resolution_rad, args, label: str) -> dict:
    """MOVEs then one song; the figures and the song's time span."""
    latencies = measure_latencies(graph, capture, motor, resolution_rad, args.moves)
    started = time.monotonic()  # the robot clock of hits.csv and impacts.jsonl
    state = play(graph, args.score, 1.0)
    p50, p99 = percentiles(np.asarray(latencies), (50.0, 99.0))
    return {
        'bench': 'control_tower',
        'condition': label,
        'command_p50_ms': round(p50, 2),
        'command_p99_ms': round(p99, 2),
        'moves_measured': len(latencies),
        'song_state': state,
        'span': (started, time.monotonic()),
    }


def add_hit_timing(row: dict, hits, impacts) -> None:
    start, end = row.pop('span')
    mine = (hits.command_time_s >= start) & (hits.command_time_s <= end)
    near = (impacts.time_s >= start) & (impacts.time_s <= end + 0.5)
    names = [hits.instrument[i] for i in np.nonzero(mine)[0]]
    found = [impacts.instrument[i] for i in np.nonzero(near)[0]]
    report = hit_timing(names, hits.command_time_s[mine], found, impacts.time_s[near]).in_ms()
    row['hit_p99_ms'] = report['all']['p99_abs_error_ms']
    row['hit_mean_ms'] = report['all']['mean_error_ms']
    row['hits_detected_share'] = report['all']['detected_share']


def estop_routes(graph: RunningGraph, page: TowerConnection, count: int) -> list[dict]:
    """ESTOP by TCP, by the page and by /phil/estop (``phil estop``), mid-song."""
    from phil_bringup.cli.ros_client import PhilClient
    from phil_msgs import srv

    view = graph.bus_loop()
    graph.line('PLAY|rock')
    graph.wait_state('PLAYING', 10.0)
    time.sleep(6.0)
    os.environ['ROS_DOMAIN_ID'] = graph.env['ROS_DOMAIN_ID']
    lines = []
    with PhilClient() as client:

        def service(_line: str) -> str:
            response = client.call(srv.Trigger, '/phil/estop', srv.Trigger.Request())
            return 'OK|ESTOP' if response.accepted else f'ERR|ESTOP|{response.reason}'

        for route, send in (('tcp', graph.line), ('page', page.line), ('phil estop', service)):
            figures = measure_estops(graph, view, count, send)
            lines.append({'bench': 'control_tower_estop', 'route': route, **figures})
    return lines


def main() -> int:
    args = parse_arguments()
    missing = browser_missing()
    if missing:
        print(json.dumps({'bench': 'control_tower', 'skipped': missing}))
        return 0
    motor = default_robot_model(sim=True).joint(JOINT).motor
    resolution_rad = 0.5 * epos4.counts_to_position_rad(1, motor.gear_ratio)
    port = free_tcp_port()
    rows, estops = [], []
    with tempfile.TemporaryDirectory() as folder:
        graph = RunningGraph(Path(folder), ('--tower-port', str(port))).start()
        capture = FrameCapture(graph.channels, send_times=True, buses=[int(motor.bus[3:])])
        browsers = []
        try:
            graph.start_robot()
            graph.wait_state('IDLE', 30.0)
            time.sleep(4.0)
            rows.append(condition(graph, capture, motor, resolution_rad, args, 'no page'))
            for _ in range(args.pages):
                browsers.append(headless_chromium())
                browsers[-1].get(f'http://127.0.0.1:{port}/')
            time.sleep(3.0)  # the pages load and draw
            rows.append(condition(graph, capture, motor, resolution_rad, args, 'page open'))
            page = TowerConnection(f'ws://127.0.0.1:{port}/ws')
            try:
                estops = estop_routes(graph, page, args.estops)
            finally:
                page.close()
            graph.line('QUIT')
            graph.wait_exit(60.0)
        finally:
            for browser in browsers:
                browser.quit()
            capture.close()
            graph.stop()
        hits = runlog.load_hits(graph.log_dir / 'hits.csv')
        impacts = runlog.load_impacts(graph.log_dir / 'impacts.jsonl')
    for row in rows:
        add_hit_timing(row, hits, impacts)
        print(json.dumps(row), flush=True)
    quiet, open_ = rows
    print(
        json.dumps(
            {
                'bench': 'control_tower',
                'condition': 'page open / no page',
                'pages': args.pages,
                'command_p99_ratio': round(open_['command_p99_ms'] / quiet['command_p99_ms'], 2),
                'hit_p99_ratio': round(open_['hit_p99_ms'] / quiet['hit_p99_ms'], 2),
                'goal_ratio': 1.5,
            }
        )
    )
    for line in estops:
        print(json.dumps(line), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
