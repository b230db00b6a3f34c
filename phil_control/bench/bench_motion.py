"""Benchmark of the kinematics and motion-generation cores behind the trajectory_generator.

Prints one JSON object per line, each with the median, p99 and max time over ``--repeat`` runs
and the goal (every case well under 5 ms):

* ``ik_scalar``: one ``solve_arms`` call (snare, waist 0, wrists 10 deg);
* ``ik_batch_1000``: one ``solve_arms_batch`` call for 1000 random kit targets / waist angles;
* ``choose_waist``: one waist choice (1801-angle scan in one vectorised IK call);
* ``move_3s_plan_chunk``: plan a 3 s MOVE of every arm joint from the planner state and cut it
  into chunks (6 chunks of 0.5 s, 20 ms points);
* ``wave_plan_chunk``: the same for the full wave gesture (11 steps, 5.8 s);
* ``chunk_to_msg``: convert one 0.5 s chunk to phil_msgs/TrajectoryChunk (when ROS is present).

Usage: ``python phil_control/bench/bench_motion.py [--repeat 200]``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections.abc import Callable

import numpy as np

from phil_control.core.kinematics import choose_waist, solve_arms, solve_arms_batch
from phil_control.core.kinematics.model_adapter import arm_geometry, joint_limits
from phil_control.core.motion import (
    ChunkingConfig,
    GestureRequest,
    MotionPlanner,
    MoveRequest,
    PlannedMotion,
    chunk_trajectory,
)
from phil_description.core import default_robot_model

GOAL_MS = 5.0


def measure(name: str, action: Callable[[], object], repeat: int, **extra) -> None:
    """Time ``action`` ``repeat`` times (after one warm-up call) and print a JSON line."""
    action()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1e3)
    record = {
        'bench': name,
        'repeat': repeat,
        'median_ms': round(float(np.median(times)), 4),
        'p99_ms': round(float(np.percentile(times, 99)), 4),
        'max_ms': round(max(times), 4),
        'goal_ms': GOAL_MS,
        'python': platform.python_version(),
        **extra,
    }
    record['ok'] = record['p99_ms'] < GOAL_MS
    print(json.dumps(record), flush=True)


def measure_kinematics(model, repeat: int) -> None:
    """The IK cases: one scalar solve, a batch of 1000, one waist choice."""
    geometry, limits = arm_geometry(model), joint_limits(model)
    snare = model.kit.by_name('snare').strikes
    wrist = math.radians(10.0)
    measure(
        'ik_scalar',
        lambda: solve_arms(
            geometry,
            limits,
            snare['right'].position_m,
            snare['left'].position_m,
            0.0,
            wrist,
            wrist,
        ),
        repeat,
    )

    rng = np.random.default_rng(1951)
    strikes = [s for i in model.kit.instruments for s in i.strikes.values()]
    rights = np.array([strikes[k].position_m for k in rng.integers(len(strikes), size=1000)])
    lefts = np.array([strikes[k].position_m for k in rng.integers(len(strikes), size=1000)])
    waists = rng.uniform(-0.5, 0.5, 1000)
    measure(
        'ik_batch_1000',
        lambda: solve_arms_batch(geometry, limits, rights, lefts, waists, wrist, wrist),
        repeat,
        rows=1000,
    )
    measure(
        'choose_waist',
        lambda: choose_waist(
            geometry, limits, snare['right'].position_m, snare['left'].position_m, wrist, wrist
        ),
        repeat,
        scan_angles=1801,
    )


def measure_planning(model, repeat: int) -> None:
    """Planning and chunking a MOVE and a gesture; then, with ROS, one chunk's conversion."""
    config = ChunkingConfig()
    move = MoveRequest(
        {
            'right_shoulder_1': 2.0,
            'left_shoulder_1': 1.2,
            'right_shoulder_2': 0.3,
            'right_elbow': 1.0,
            'left_shoulder_2': 0.3,
            'left_elbow': 1.0,
            'right_wrist': 0.5,
            'left_wrist': 0.5,
        }
    )

    def plan_and_chunk(request) -> int:
        planner = MotionPlanner(model)
        planned = planner.submit(request, 0.0)
        assert isinstance(planned, PlannedMotion), planned
        return len(chunk_trajectory(planned.trajectory, config))

    measure(
        'move_3s_plan_chunk', lambda: plan_and_chunk(move), repeat, chunks=plan_and_chunk(move)
    )
    wave = GestureRequest('wave')
    measure('wave_plan_chunk', lambda: plan_and_chunk(wave), repeat, chunks=plan_and_chunk(wave))

    try:
        from phil_control.conversions import TimeBase, chunk_to_msg
    except ImportError:  # no ROS in this environment: the message conversion is skipped
        return
    planned = MotionPlanner(model).submit(move, 0.0)
    chunk = chunk_trajectory(planned.trajectory, config)[0]
    timebase = TimeBase(time.monotonic_ns())
    measure('chunk_to_msg', lambda: chunk_to_msg(chunk, timebase), repeat, points=26)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=200, help='timed runs per case')
    repeat = parser.parse_args().repeat

    model = default_robot_model()
    measure_kinematics(model, repeat)
    measure_planning(model, repeat)


if __name__ == '__main__':
    main()
