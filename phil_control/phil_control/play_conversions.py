"""Translate the play core's types to score_player messages; parameters and the hit log.

Core times are seconds of the node's `TimeBase` (see ``ros_conversions``); every stamp goes
through it, so chunks, hit events and the commanded state are on one clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sensor_msgs.msg import JointState

from phil_control.core.play import (
    MotionChunk,
    PlayProgress,
    ScheduledHit,
    check_motion_lead_s,
    check_pedal_lead_s,
    timing_stats,
)
from phil_control.core.score import Hand
from phil_control.ros_conversions import STAMP_CLOCKS, TimeBase, chunk_to_msg
from phil_description.core.capped_log import CappedCsvLog
from phil_description.core.paths import installed_share_directory
from phil_msgs.action import Hit, Play
from phil_msgs.msg import HitEvent, TimingSummary, TrajectoryChunk

#: The workspace's scores folder when running from the source tree (``--symlink-install``).
SOURCE_SCORES_DIR = Path(__file__).resolve().parents[2] / 'scores'
PLAY_LIST_NAME = 'play_list.yaml'
#: Audio folder name next to the play list.
AUDIO_FOLDER = 'audio'
LIMBS = {
    Hand.RIGHT: HitEvent.LIMB_RIGHT_HAND,
    Hand.LEFT: HitEvent.LIMB_LEFT_HAND,
    Hand.KICK: HitEvent.LIMB_RIGHT_FOOT,
}
HIT_LOG_COLUMNS = (
    't',
    'play_id',
    'bar',
    'instrument',
    'hand',
    'velocity',
    'score_time_s',
    'command_time_s',
)

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'play_list': (
        '',
        "play list YAML; '' = scores/play_list.yaml installed with phil_control or of the "
        'source tree (if neither exists: no score can be played)',
    ),
    'audio_dir': ('', "folder of the audio tracks; '' = the folder 'audio' next to the play list"),
    'audio_command': (
        '',
        "audio player: '' = silent, 'auto' = paplay or aplay if installed, or a command line "
        "such as 'aplay -q' (the track path is appended)",
    ),
    'poll_period_s': (0.02, 'period of the generation / hits / feedback timer, s'),
    'lead_s': (0.5, 'windows are generated one bar plus this far ahead of now, s'),
    'margin_s': (0.1, 'earliest start of a new or replacing chunk after now, s'),
    'feedback_period_s': (0.1, 'action feedback period, s'),
    'motion_lead_s': (
        0.0,
        'the motion runs this far ahead of the music so the sticks land on the beat: the '
        "drives' delay in following their commands, s (0..0.05)",
    ),
    'pedal_lead_s': (
        0.0,
        'the pedals run this much further ahead than the arms: how much later the pedal drives '
        'follow than the arm drives, s (-0.05..0.05)',
    ),
    'log_dir': ('', "folder for hits.csv (one row per commanded hit); '' = no log"),
    'wrist_torque': (
        True,
        'wrists in torque mode (EPOS4 CST, kp/kd + gravity) while playing, as upstream; false '
        '= position mode (CSP) throughout',
    ),
    'stamp_clock': (
        'ros',
        'clock of every stamp: ros (the node clock, as the trajectory_generator) or monotonic',
    ),
}


def default_play_list() -> Path | None:
    """``scores/play_list.yaml`` installed in phil_control's share folder, else the one of the
    source tree (``--symlink-install``), else None."""
    candidates = [SOURCE_SCORES_DIR / PLAY_LIST_NAME]
    share = installed_share_directory('phil_control')
    if share is not None:
        candidates.insert(0, share / 'scores' / PLAY_LIST_NAME)
    return next((path for path in candidates if path.is_file()), None)


@dataclass(frozen=True)
class PlayerConfig:
    """Validated node parameters (names, defaults and units: `PARAMETERS`)."""

    play_list: Path | None
    audio_dir: Path
    audio_command: str
    poll_period_s: float
    lead_s: float
    margin_s: float
    feedback_period_s: float
    log_dir: Path | None
    stamp_clock: str
    wrist_torque: bool = True
    motion_lead_s: float = 0.0
    pedal_lead_s: float = 0.0

    @classmethod
    def from_parameters(cls, values: dict) -> PlayerConfig:
        """Build from parameter values.

        Raises:
            ValueError: Naming the first bad parameter (an explicit play list that does not
                exist, a non-positive period, an unknown clock).
        """
        for name in ('poll_period_s', 'feedback_period_s', 'margin_s'):
            if not (math.isfinite(values[name]) and values[name] > 0.0):
                raise ValueError(
                    f'parameter {name} must be positive and finite, got {values[name]}'
                )
        if not (math.isfinite(values['lead_s']) and values['lead_s'] >= 0.0):
            raise ValueError(f'parameter lead_s must be >= 0 and finite, got {values["lead_s"]}')
        if values['stamp_clock'] not in STAMP_CLOCKS:
            raise ValueError(
                f'parameter stamp_clock must be one of {", ".join(STAMP_CLOCKS)}, '
                f'got {values["stamp_clock"]!r}'
            )
        try:
            check_motion_lead_s(values['motion_lead_s'])
            check_pedal_lead_s(values['pedal_lead_s'])
        except ValueError as error:
            raise ValueError(f'parameter {error}') from None
        play_list = Path(values['play_list']) if values['play_list'] else default_play_list()
        if values['play_list'] and not play_list.is_file():
            raise ValueError(f'parameter play_list: no such file: {play_list}')
        scores_dir = play_list.parent if play_list is not None else SOURCE_SCORES_DIR
        return cls(
            play_list=play_list,
            audio_dir=Path(values['audio_dir'] or scores_dir / AUDIO_FOLDER),
            audio_command=values['audio_command'],
            poll_period_s=values['poll_period_s'],
            lead_s=values['lead_s'],
            margin_s=values['margin_s'],
            feedback_period_s=values['feedback_period_s'],
            log_dir=Path(values['log_dir']) if values['log_dir'] else None,
            stamp_clock=values['stamp_clock'],
            wrist_torque=bool(values['wrist_torque']),
            motion_lead_s=float(values['motion_lead_s']),
            pedal_lead_s=float(values['pedal_lead_s']),
        )


def stamp_clock(name: str, ros_clock) -> Callable[[], int]:
    """The ns clock of the ``stamp_clock`` parameter: CLOCK_MONOTONIC or the node's clock."""
    if name == 'monotonic':
        return time.monotonic_ns
    return lambda: ros_clock.now().nanoseconds


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


class HitLog:
    """``hits.csv``: one row per commanded hit, flushed after every batch; rotated to
    ``hits.csv.1`` past 20 MB (`CappedCsvLog`).

    Columns `HIT_LOG_COLUMNS`: t (robot-clock time the hit was reported, s), play id, bar,
    instrument, hand, velocity, score time (s), commanded instant (robot clock, s). Robot clock
    = CLOCK_MONOTONIC, the clock of the bus loop and of the simulator's impact log, whatever
    clock the node stamps its messages with.

    Args:
        folder: Created if missing; ``hits.csv`` in it is overwritten.

    Raises:
        OSError: The file cannot be created.
    """

    def __init__(self, folder: Path) -> None:
        self._log = CappedCsvLog(folder / 'hits.csv', HIT_LOG_COLUMNS)
        self.path = self._log.path

    def write(
        self,
        now_ns: int,
        hits: Sequence[ScheduledHit],
        timebase: TimeBase,
        to_monotonic_ns: int = 0,
    ) -> None:
        """Append the rows of ``hits`` reported at ``now_ns`` (the node's stamp clock, ns);
        ``to_monotonic_ns`` is added to every time to express it on the robot clock."""
        now_ns += to_monotonic_ns
        rows = []
        for hit in hits:
            commanded_ns = timebase.to_nanoseconds(hit.command_time_s) + to_monotonic_ns
            rows.append(
                (
                    f'{now_ns * 1e-9:.6f}',
                    hit.play_id,
                    hit.hit.bar,
                    hit.instrument,
                    hit.hit.hand.value,
                    hit.hit.velocity,
                    f'{hit.hit.score_time_s:.6f}',
                    f'{commanded_ns * 1e-9:.6f}',
                )
            )
        self._log.writerows(rows)

    def close(self) -> None:
        """Close the file."""
        self._log.close()
