"""Benchmark of play-motion synthesis on the project's scores.

Prints one JSON object per line:

* `play_bar_generation`: per score, the time to generate one bar of windows (IK, waist choice,
  all generators) against the bar's duration; the goal is a ratio below 1/50. `first_bar_ms`
  includes filling the waist-choice cache, `median_bar_ms` / `max_bar_ms` cover every bar.
* `play_hit_timing`: per score and speed, the generated trajectory is read the way a 1 kHz bus
  loop would (cubic Hermite between the chunk points, sampled at 1 ms with a phase that is not
  aligned to the points), the stick tips are computed with the URDF forward kinematics and the
  instant each tip crosses its pad's height downwards is compared with the commanded hit time.
  `velocity_guarded_windows` counts windows played slower than asked to stay within the URDF
  velocity limits (their hits are still compared with their actual commanded times).

Every score of `scores/play_list.yaml` is played by its play id.

Usage: `python phil_control/bench/bench_play.py [--speeds 1.0 1.5]`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from phil_control.core.play import (
    PlayRobot,
    PlaySession,
    WaistChooser,
    downward_crossing,
    generate_window,
    reset_pose,
    sample_hermite,
    timing_stats,
)
from phil_control.core.play.timeline import Timeline, resolve_source
from phil_control.core.score import PlayList, load_play_list
from phil_description.core import default_robot_model

SCORES = Path(__file__).resolve().parents[2] / 'scores'
SAMPLE_PERIOD_S = 0.001
SAMPLE_PHASE_S = 0.000_37
CROSSING_WINDOW_S = 0.05


def emit(record: dict) -> None:
    record.setdefault('python', platform.python_version())
    print(json.dumps(record), flush=True)


def bench_generation(robot: PlayRobot, play_list: PlayList, play_id: str) -> None:
    source = resolve_source(play_id, play_list)
    timeline = Timeline(source)
    chooser = WaistChooser(robot)
    _, state = reset_pose(robot, source.init_note_right, source.init_note_left, chooser)
    per_bar = defaultdict(float)
    durations = defaultdict(float)
    order = []
    for window in timeline.windows:
        start = time.perf_counter()
        _, state = generate_window(robot, window, state, 1.0, chooser)
        bar = window.target.bar
        if bar not in per_bar:
            order.append(bar)
        per_bar[bar] += time.perf_counter() - start
        durations[bar] += window.interval_s
    played = [bar for bar in order if durations[bar] > 0.0]
    ratios = [per_bar[bar] / durations[bar] for bar in played]
    bar_ms = [1e3 * per_bar[bar] for bar in played]
    emit(
        {
            'bench': 'play_bar_generation',
            'score': play_id,
            'bars': len(played),
            'bar_duration_s': round(statistics.median(durations[bar] for bar in played), 4),
            'first_bar_ms': round(bar_ms[0], 3),
            'median_bar_ms': round(statistics.median(bar_ms), 3),
            'max_bar_ms': round(max(bar_ms), 3),
            'max_ratio_to_bar': round(max(ratios), 5),
            'goal_ratio': 0.02,
            'meets_goal': max(ratios) < 0.02,
        }
    )


def bench_timing(robot: PlayRobot, model, play_list: PlayList, play_id: str, speed: float) -> None:
    session = PlaySession(robot, play_list)
    now = 0.0
    chunks = session.start(play_id, now_s=now, current_positions_rad=robot.ready_rad, speed=speed)
    while not session.finished(now):
        now += 0.05
        chunks += session.poll(now)
    # each chunk repeats its predecessor's last point first
    times = np.concatenate([chunks[0].times_s[:1]] + [c.times_s[1:] for c in chunks])
    positions = np.concatenate(
        [chunks[0].positions_rad[:1]] + [c.positions_rad[1:] for c in chunks]
    )
    velocities = np.concatenate(
        [chunks[0].velocities_rad_s[:1]] + [c.velocities_rad_s[1:] for c in chunks]
    )
    samples = np.arange(times[0], times[-1], SAMPLE_PERIOD_S) + SAMPLE_PHASE_S
    right_tips, left_tips = model.stick_tip_positions(
        sample_hermite(times, positions, velocities, samples)
    )
    errors, expected, missed = [], [], 0
    for scheduled in session.commanded_hits:
        hand = scheduled.hit.hand.value
        if hand == 'kick':
            continue
        tips = right_tips if hand == 'right' else left_tips
        pad_z = robot.target(hand, scheduled.hit.instrument_id).position_m[2]
        crossing = downward_crossing(
            samples, tips[:, 2], pad_z, scheduled.command_time_s, CROSSING_WINDOW_S
        )
        if crossing is None:
            missed += 1
            continue
        errors.append(crossing - scheduled.command_time_s)
        expected.append(scheduled.command_time_s)
    stats = timing_stats(errors, expected)
    emit(
        {
            'bench': 'play_hit_timing',
            'score': play_id,
            'speed': speed,
            'sample_period_ms': 1e3 * SAMPLE_PERIOD_S,
            'hits': stats.hits,
            'missed': missed,
            'mean_error_us': round(1e6 * stats.mean_error_s, 3),
            'p99_abs_error_us': round(1e6 * stats.p99_abs_error_s, 3),
            'max_abs_error_us': round(1e6 * stats.max_abs_error_s, 3),
            'drift_us': round(1e6 * stats.drift_s, 3),
            'velocity_guarded_windows': session.guarded_windows,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--speeds', type=float, nargs='+', default=[1.0, 1.5])
    args = parser.parse_args()
    model = default_robot_model()
    robot = PlayRobot.from_model(model)
    play_list = load_play_list(SCORES / 'play_list.yaml')
    for play_id in play_list:
        bench_generation(robot, play_list, play_id)
    for play_id in play_list:
        for speed in args.speeds:
            bench_timing(robot, model, play_list, play_id, speed)


if __name__ == '__main__':
    main()
