"""The whole graph on a busy machine: all scores and TCP commands, with CPU hogs and without.

On the robot the controller shares its computer with speech recognition, a language model and
text-to-speech: a busy CPU is the normal condition. The hog is one busy-looping process per CPU
at normal priority (what a time-sharing neighbour does). For each condition the graph is started
fresh against the simulators, STARTed and READYed like the brain, sent ``--moves`` wrist MOVEs
(TCP command -> first frame, as ``bench_command_latency``), then plays every play-list score to
its end (hit timing from the simulator's impacts, as ``bench_hit_timing``), and QUITs.

One JSON line per condition: hit timing (p99, max, drift, share detected), TCP command -> first
frame (p50/p99), faults latched, commands lost (a MOVE whose motion never reached the bus, a
PLAY refused or not ending in IDLE), bus-loop overruns, and CPU seconds per process. A last
line gives the ratios loaded / idle of hit timing p99 (goal <= 1.5) and command latency p99
(goal <= 2), and whether nothing faulted or was lost.

Usage: python phil_bringup/bench/bench_under_load.py [--scores rock,funk] [--moves 40]
       [--hogs N] [--composed] [--param NODE.NAME=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_command_latency import JOINT, measure_latencies
from bench_cpu import process_cpu_s
from bench_hit_timing import play

from phil_bringup.plots import runlog
from phil_bringup.plots.stats import hit_timing
from phil_bringup.testing.graph import FrameCapture, RunningGraph
from phil_control.core.score import load_play_list
from phil_control.score_player.config import default_play_list
from phil_description.core import default_robot_model
from phil_hardware.core.codecs import epos4
from phil_hardware.core.cpu_load import CpuHog
from phil_hardware.rt.tick_stats import percentiles

LATCHED = ('FAULT', 'ESTOP')
GOAL_HIT_P99_RATIO = 1.5
GOAL_LATENCY_P99_RATIO = 2.0


def play_every_score(graph: RunningGraph, ids: list[str]) -> dict[str, str]:
    """Each score's final state ('refused: ...' when PLAY was refused)."""
    outcomes = {}
    for play_id in ids:
        try:
            outcomes[play_id] = play(graph, play_id, 1.0)
        except RuntimeError as refused:
            outcomes[play_id] = f'refused: {refused}'
        print(f'[bench] {play_id}: {outcomes[play_id]}', file=sys.stderr)
    return outcomes


def run_condition(
    ids: list[str], moves: int, launcher_args: tuple[str, ...], keep_logs: Path | None = None
) -> dict:
    """Start a graph, send the MOVEs, play the scores, QUIT; the condition's figures (the
    run's logs copied to ``keep_logs`` when given)."""
    motor = default_robot_model(sim=True).joint(JOINT).motor
    resolution_rad = 0.5 * epos4.counts_to_position_rad(1, motor.gear_ratio)
    with tempfile.TemporaryDirectory() as folder:
        graph = RunningGraph(Path(folder), launcher_args).start()
        capture = FrameCapture(graph.channels, send_times=True, buses=[int(motor.bus[3:])])
        try:
            graph.start_robot()
            graph.wait_state('IDLE', 60.0)
            time.sleep(4.0)  # START's move to home
            cpu_before, start_s = process_cpu_s(graph), time.monotonic()
            latencies_ms = measure_latencies(graph, capture, motor, resolution_rad, moves)
            outcomes = play_every_score(graph, ids)
            cpu_after, elapsed_s = process_cpu_s(graph), time.monotonic() - start_s
            final_state = graph.status()[1]
            graph.line('QUIT')
            graph.wait_exit(120.0)
        finally:
            capture.close()
            graph.stop()
        hits = runlog.load_hits(graph.log_dir / 'hits.csv')
        impacts = runlog.load_impacts(graph.log_dir / 'impacts.jsonl')
        ticks = runlog.load_ticks(graph.log_dir / 'ticks.csv')
        if keep_logs is not None:
            shutil.copytree(graph.log_dir, keep_logs, dirs_exist_ok=True)
    timing = hit_timing(hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s)
    p50_ms, p99_ms = (
        percentiles(np.asarray(latencies_ms), (50.0, 99.0)) if latencies_ms else (None, None)
    )
    played = list(outcomes.values())
    return {
        'hit_timing': timing.in_ms()['all'],
        'hit_p99_by_instrument_ms': {
            name: item['p99_abs_error_ms'] for name, item in timing.in_ms()['instruments'].items()
        },
        'command_latency': {
            'commands': moves,
            'p50_ms': None if p50_ms is None else round(p50_ms, 2),
            'p99_ms': None if p99_ms is None else round(p99_ms, 2),
        },
        # A latch ends the song it came in (or, before the first, the MOVEs) and stays.
        'faults_latched': sum(state in LATCHED for state in played) or int(final_state in LATCHED),
        'commands_lost': (moves - len(latencies_ms)) + sum(state != 'IDLE' for state in played),
        'songs': outcomes,
        'bus_loop_overruns': int(ticks.overruns[-1]) if len(ticks.overruns) else None,
        'cpu_s': {
            name: round(cpu_after[name] - cpu_before[name], 2)
            for name in cpu_before
            if name in cpu_after
        },
        'elapsed_s': round(elapsed_s, 1),
    }


def ratio(loaded: float | None, idle: float | None) -> float | None:
    return None if not loaded or not idle else round(loaded / idle, 3)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scores', default='', help='comma-separated play-list ids (all)')
    parser.add_argument('--moves', type=int, default=40, help='wrist MOVEs per condition')
    parser.add_argument(
        '--hogs', type=int, default=os.cpu_count() or 2, help='busy processes (one per CPU)'
    )
    parser.add_argument(
        '--composed', action='store_true', help='the command path in one process (launcher)'
    )
    parser.add_argument(
        '--param',
        metavar='NODE.NAME=VALUE',
        action='append',
        default=[],
        help="a parameter over its file, as the launcher's --param (repeatable), e.g. "
        'hardware.can_feedback_timeout_s=0.05 (the robot value)',
    )
    parser.add_argument(
        '--keep-logs',
        type=Path,
        metavar='DIR',
        help="copy each condition's run logs to DIR/<condition> (hits.csv, impacts.jsonl, ...)",
    )
    return parser.parse_args()


def main() -> int:
    args = parse_arguments()
    play_list = load_play_list(default_play_list())
    ids = [name for name in args.scores.split(',') if name] or list(play_list.entries)
    launcher_args = ('--composed',) if args.composed else ()
    launcher_args += tuple(f'--param={value}' for value in args.param)
    rows = {}
    for condition in ('loaded', 'idle'):
        hogs = args.hogs if condition == 'loaded' else 0
        print(f'[bench] {condition}: {hogs} CPU hog(s)', file=sys.stderr)
        with CpuHog(hogs):
            keep = args.keep_logs / condition if args.keep_logs else None
            rows[condition] = run_condition(ids, args.moves, launcher_args, keep)
        line = {'bench': 'under_load', 'condition': condition, 'hogs': hogs, **rows[condition]}
        print(json.dumps(line), flush=True)
    loaded, idle = rows['loaded'], rows['idle']
    hit_ratio = ratio(
        loaded['hit_timing']['p99_abs_error_ms'], idle['hit_timing']['p99_abs_error_ms']
    )
    latency_ratio = ratio(loaded['command_latency']['p99_ms'], idle['command_latency']['p99_ms'])
    clean = all(r['faults_latched'] == 0 and r['commands_lost'] == 0 for r in rows.values())
    met = (
        clean
        and hit_ratio is not None
        and hit_ratio <= GOAL_HIT_P99_RATIO
        and latency_ratio is not None
        and latency_ratio <= GOAL_LATENCY_P99_RATIO
    )
    summary = {
        'bench': 'under_load',
        'metric': 'ratio loaded / idle',
        'hit_p99': hit_ratio,
        'goal_hit_p99': GOAL_HIT_P99_RATIO,
        'command_latency_p99': latency_ratio,
        'goal_command_latency_p99': GOAL_LATENCY_P99_RATIO,
        'no_fault_no_loss': clean,
        'met': met,
    }
    print(json.dumps(summary), flush=True)
    return 0 if clean else 1


if __name__ == '__main__':
    start = time.monotonic()
    status = main()
    print(f'[bench] {time.monotonic() - start:.0f} s', file=sys.stderr)
    sys.exit(status)
