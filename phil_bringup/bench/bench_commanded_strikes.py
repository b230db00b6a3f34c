"""The simulator's impact detector fed the commanded motion of every project score (no graph).

Each score is played through a PlaySession from the ready pose; the chunks are read like the
bus loop reads them (cubic Hermite) at 0.2 ms and handed to the device simulator's
ImpactDetector, which sees the kit as pads, clashes included. Errors are detected minus
commanded time, per instrument, as in bench_hit_timing: what the whole-graph bench measures on
top of this is the simulated arm's dynamics. A stroke missed here is missed by the motion
itself (e.g. the stick crossing another instrument's pad on its way). One JSON line per score
and one over all.

Usage: python phil_bringup/bench/bench_commanded_strikes.py
"""

from __future__ import annotations

import json

import numpy as np

from phil_bringup.plots.stats import hit_timing
from phil_control.core.play import PlayRobot, PlaySession, sample_hermite
from phil_control.core.score import load_play_list
from phil_control.score_player.config import default_play_list
from phil_description.core import default_robot_model
from phil_hardware.sim.impacts import ImpactDetector

SAMPLE_S = 0.0002
POLL_S = 0.25


def commanded_motion(robot: PlayRobot, play_list, play_id: str):
    """(times, positions, velocities, commanded hits) of one whole play."""
    session = PlaySession(robot, play_list)
    now = 0.0
    chunks = session.start(play_id, now_s=now, current_positions_rad=robot.ready_rad)
    while not session.finished(now):
        now += POLL_S
        chunks += session.poll(now)
    if session.aborted is not None:
        raise RuntimeError(f'{play_id}: {session.aborted}')

    def joined(field: str) -> np.ndarray:
        first = getattr(chunks[0], field)[:1]
        return np.concatenate([first] + [getattr(chunk, field)[1:] for chunk in chunks])

    return (
        joined('times_s'),
        joined('positions_rad'),
        joined('velocities_rad_s'),
        session.commanded_hits,
    )


def main() -> None:
    model = default_robot_model(sim=True)
    robot = PlayRobot.from_model(model)
    play_list = load_play_list(default_play_list())
    every = ([], [], [], [])
    for play_id in play_list.entries:
        times, positions, velocities, hits = commanded_motion(robot, play_list, play_id)
        grid = np.arange(times[0], times[-1], SAMPLE_S)
        impacts = ImpactDetector(model).feed(
            grid, sample_hermite(times, positions, velocities, grid)
        )
        parts = (
            [hit.instrument for hit in hits],
            [hit.command_time_s for hit in hits],
            [impact.instrument for impact in impacts],
            [impact.time_s for impact in impacts],
        )
        report = hit_timing(parts[0], np.array(parts[1]), parts[2], np.array(parts[3]))
        print(
            json.dumps({'bench': 'commanded_strikes', 'score': play_id, **report.in_ms(3)}),
            flush=True,
        )
        offset = (max(every[1]) + 60.0) if every[1] else 0.0  # plays one after another
        for bucket, values, shift in zip(every, parts, (None, offset, None, offset), strict=True):
            bucket.extend(values if shift is None else [value + shift for value in values])
    report = hit_timing(every[0], np.array(every[1]), every[2], np.array(every[3]))
    print(
        json.dumps({'bench': 'commanded_strikes', 'score': 'all', **report.in_ms(3)}), flush=True
    )


if __name__ == '__main__':
    main()
