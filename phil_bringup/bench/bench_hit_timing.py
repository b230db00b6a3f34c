"""End-to-end hit timing of every play-list score through the whole graph (simulated robot).

Starts the graph (launcher + device simulators), STARTs and READYs it like the brain, then plays
each score of the play list in turn over TCP and QUITs. The simulator detects every stick-pad
and pedal impact from its own joint positions; each impact is matched (per instrument, nearest
within 50 ms) to the commanded hit in hits.csv. One JSON line per score with the error
(detected - commanded) mean / p99 / max / drift per instrument and in total, plus the share of
strokes detected, and a last line over all scores.

This measures the whole chain: score player -> trajectory generator -> hardware node -> bus
loop -> CAN / serial frames -> simulated drives -> simulated arm -> impact. It does not measure
audio latency or the real drive dynamics.

Usage: python phil_bringup/bench/bench_hit_timing.py [--scores rock,funk] [--speed 1.0]
       [--keep-logs DIR] [--composed]
(--composed: the command path's nodes in one process, the launcher's --composed.
--speed is sent as PLAY_CTRL|speed once each song plays.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from phil_bringup.plots import runlog
from phil_bringup.plots.logtypes import HitLog, ImpactLog
from phil_bringup.plots.stats import hit_timing
from phil_bringup.testing.graph import RunningGraph
from phil_control.core.score import load_play_list
from phil_control.score_player.config import default_play_list

PLAY_TIMEOUT_S = 600.0
SPAN_MARGIN_S = 0.5


def play(graph: RunningGraph, play_id: str, speed: float) -> str:
    """PLAY one score to its end; returns the final state."""
    reply = graph.line(f'PLAY|{play_id}')
    if not reply.startswith('OK|'):
        raise RuntimeError(f'PLAY|{play_id} refused: {reply}')
    graph.brain.wait_state({'PLAYING'}, 30.0)
    if speed != 1.0:  # the brain's way: PLAY_CTRL once the song runs (from DRUM START on)
        reply = graph.line(f'PLAY_CTRL|speed|{speed}')
        if not reply.startswith('OK|'):
            raise RuntimeError(f'PLAY_CTRL|speed|{speed} refused: {reply}')
    return graph.brain.wait_state({'IDLE', 'FAULT', 'ESTOP'}, PLAY_TIMEOUT_S)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--scores', default='', help='comma-separated play-list ids (all)')
    parser.add_argument('--speed', type=float, default=1.0)
    parser.add_argument(
        '--keep-logs',
        type=Path,
        default=None,
        metavar='DIR',
        help='run the graph in DIR and keep its logs (hits.csv, impacts.jsonl, '
        'motors.csv, ...) for `phil plot`',
    )
    parser.add_argument(
        '--composed', action='store_true', help='the command path in one process (launcher)'
    )
    return parser.parse_args()


def play_scores(
    folder: Path, ids: list[str], speed: float, composed: bool, launcher_args: tuple = ()
) -> tuple[dict[str, str], HitLog, ImpactLog]:
    """Run the graph in ``folder`` (with ``launcher_args``), play every score and QUIT; each
    score's final state, the commanded hits and the detected impacts."""
    graph = RunningGraph(folder, (*launcher_args, *(('--composed',) if composed else ()))).start()
    outcomes = {}
    try:
        graph.line('START')
        if not graph.line('READY').startswith('OK|'):
            raise RuntimeError('READY refused:\n' + graph.text())
        for play_id in ids:
            outcomes[play_id] = play(graph, play_id, speed)
            print(f'[bench] {play_id}: ended in {outcomes[play_id]}', file=sys.stderr)
        graph.line('QUIT')
        graph.wait_exit(90.0)
    finally:
        graph.stop()
    hits = runlog.load_hits(graph.log_dir / 'hits.csv')
    impacts = runlog.load_impacts(graph.log_dir / 'impacts.jsonl')
    return outcomes, hits, impacts


def report_scores(
    ids: list[str],
    outcomes: dict[str, str],
    hits: HitLog,
    impacts: ImpactLog,
    speed: float,
) -> tuple[list, list]:
    """Print one line per score; the (instruments, times) of the hits and of the impacts
    near them, per score that commanded any."""
    every_hit, every_impact = [], []
    for play_id in ids:
        mine = np.array([p == play_id for p in hits.play_id])
        times = hits.command_time_s[mine]
        if not len(times):
            print(
                json.dumps(
                    {
                        'bench': 'hit_timing',
                        'score': play_id,
                        'state': outcomes[play_id],
                        'error': 'no hits commanded',
                    }
                )
            )
            continue
        near = (impacts.time_s >= times.min() - SPAN_MARGIN_S) & (
            impacts.time_s <= times.max() + SPAN_MARGIN_S
        )
        names = [hits.instrument[i] for i in np.nonzero(mine)[0]]
        found = [impacts.instrument[i] for i in np.nonzero(near)[0]]
        every_hit.append((names, times))
        every_impact.append((found, impacts.time_s[near]))
        report = hit_timing(names, times, found, impacts.time_s[near])
        print(
            json.dumps(
                {
                    'bench': 'hit_timing',
                    'score': play_id,
                    'speed': speed,
                    'state': outcomes[play_id],
                    **report.in_ms(),
                }
            ),
            flush=True,
        )
    return every_hit, every_impact


def report_all(every_hit: list, every_impact: list, speed: float, composed: bool) -> None:
    """Print the line over all scores."""
    report = hit_timing(
        [n for names, _ in every_hit for n in names],
        np.concatenate([t for _, t in every_hit]),
        [n for names, _ in every_impact for n in names],
        np.concatenate([t for _, t in every_impact]),
    )
    print(
        json.dumps(
            {
                'bench': 'hit_timing',
                'score': 'all',
                'speed': speed,
                'composed': composed,
                'scores': len(every_hit),
                **report.in_ms(),
            }
        ),
        flush=True,
    )


def main() -> int:
    args = parse_arguments()
    play_list = load_play_list(default_play_list())
    ids = [name for name in args.scores.split(',') if name] or list(play_list.entries)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep_logs or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        outcomes, hits, impacts = play_scores(folder, ids, args.speed, args.composed)
    every_hit, every_impact = report_scores(ids, outcomes, hits, impacts, args.speed)
    if every_hit:
        report_all(every_hit, every_impact, args.speed, args.composed)
    return 0 if all(state == 'IDLE' for state in outcomes.values()) else 1


if __name__ == '__main__':
    start = time.monotonic()
    status = main()
    print(f'[bench] {time.monotonic() - start:.0f} s', file=sys.stderr)
    sys.exit(status)
