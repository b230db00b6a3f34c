"""The play core's types as score_player messages.

Core times are seconds of the node's `TimeBase` (``phil_control.conversions``); every stamp goes
through it, so chunks, hit events and the commanded state are on one clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from sensor_msgs.msg import JointState

from phil_control.conversions import TimeBase, chunk_to_msg
from phil_control.core.play import MotionChunk, PlayProgress, ScheduledHit, timing_stats
from phil_control.core.score import Hand
from phil_msgs.action import Hit, Play
from phil_msgs.msg import HitEvent, TimingSummary, TrajectoryChunk

LIMBS = {
    Hand.RIGHT: HitEvent.LIMB_RIGHT_HAND,
    Hand.LEFT: HitEvent.LIMB_LEFT_HAND,
    Hand.KICK: HitEvent.LIMB_RIGHT_FOOT,
}


def chunk_msg(
    chunk: MotionChunk, joint_names: Sequence[str], timebase: TimeBase
) -> TrajectoryChunk:
    """A play chunk as ``TrajectoryChunk`` (header.stamp = absolute start, all 13 joints)."""
    return chunk_to_msg(chunk.trajectory_chunk(joint_names), timebase)


def state_positions(state: JointState, joint_names: Sequence[str]) -> np.ndarray:
    """Positions of a commanded-state message in ``joint_names`` order, rad.

    Raises:
        ValueError: A joint is missing or its position is not finite.
    """
    values = dict(zip(state.name, state.position, strict=False))
    bad = [name for name in joint_names if not math.isfinite(values.get(name, math.nan))]
    if bad:
        raise ValueError(f'commanded_state has no finite position for {", ".join(bad)}')
    return np.array([values[name] for name in joint_names], dtype=float)


def hit_event_msg(hit: ScheduledHit, timebase: TimeBase) -> HitEvent:
    """A commanded hit as ``HitEvent`` (SOURCE_COMMANDED; the kick is the right foot)."""
    return HitEvent(
        source=HitEvent.SOURCE_COMMANDED,
        instrument=hit.instrument,
        instrument_id=hit.hit.instrument_id,
        limb=LIMBS[hit.hit.hand],
        velocity=hit.hit.velocity,
        play_id=hit.play_id,
        bar=max(hit.hit.bar, 0),
        score_time_s=hit.hit.score_time_s,
        command_time=timebase.stamp(hit.command_time_s),
    )


def play_feedback(progress: PlayProgress) -> Play.Feedback:
    """``Play.Feedback`` of a progress snapshot."""
    return Play.Feedback(
        play_id=progress.play_id,
        bar=max(progress.bar, 0),
        total_bars=max(progress.total_bars, 0),
        speed=progress.speed,
        elapsed_s=progress.elapsed_s,
        score_time_s=progress.score_time_s,
        hits_played=progress.hits_played,
    )


def hit_feedback(now_s: float, start_s: float, end_s: float | None) -> Hit.Feedback:
    """``Hit.Feedback``: share of the HIT motion [start_s, end_s] done at ``now_s``."""
    span = (end_s if end_s is not None else now_s) - start_s
    return Hit.Feedback(progress=min(1.0, max(0.0, (now_s - start_s) / span)) if span > 0 else 0.0)


def timing_summary(
    hits: Sequence[ScheduledHit], wall_time_at: Callable[[float], float]
) -> TimingSummary:
    """Commanded hit instants against the score: error = command time - wall time of the
    hit's score time on the play's clock (speed changes included), source 'commanded'."""
    expected = [hit.hit.score_time_s for hit in hits]
    errors = [hit.command_time_s - wall_time_at(hit.hit.score_time_s) for hit in hits]
    stats = timing_stats(errors, expected)
    if stats.hits == 0:
        return TimingSummary(source='commanded', hits=0)
    return TimingSummary(
        source='commanded',
        hits=stats.hits,
        mean_error_s=stats.mean_error_s,
        p99_abs_error_s=stats.p99_abs_error_s,
        max_abs_error_s=stats.max_abs_error_s,
        drift_s=stats.drift_s,
    )


def play_result(
    hits: Sequence[ScheduledHit], wall_time_at: Callable[[float], float] | None
) -> Play.Result:
    """Counts of a finished play: hits, bars (distinct bars with a hit), first-to-last-hit
    duration and the timing summary; success and reason are left to the caller."""
    result = Play.Result(hits_played=len(hits))
    result.bars_played = len({(hit.play_id, hit.hit.bar) for hit in hits})
    if hits:
        result.duration_s = hits[-1].command_time_s - hits[0].command_time_s
    if wall_time_at is not None:
        result.timing = timing_summary(hits, wall_time_at)
    else:
        result.timing = TimingSummary(source='commanded')
    return result
