"""Whole-score feasibility: a PLAY is refused before anything moves when any of its motion
could not be carried out.

The play is generated once from DRUM START to DRUM END, ahead of time and on its own (nothing
is sent; the same generator, speed and start pose, so the same motion as the real play at that
speed), and every chunk is checked as the trajectory generator will check it (joint limits,
speeds: ``core.motion.validation.check_chunk``). The first chunk that fails, or a window the
generator cannot make (no IK solution, a soft limit), is reported with the bar, line and beat
of its score row. Generating the whole score costs about 4 ms per second of music here, which
also proves that generation keeps far ahead of the music (it runs window by window while
playing). A speed raised while playing is checked again by the velocity guard of the playback.
"""

from __future__ import annotations

import math

from phil_control.core.motion.validation import JointTable, check_chunk
from phil_control.core.play.chunk import PlayAborted
from phil_control.core.play.playback import Playback
from phil_control.core.play.timeline import PlaySource


class ScoreInfeasible(PlayAborted):
    """A score whose motion cannot be carried out; raised before anything moves."""

    def __init__(
        self, reason: str, bar: int | None, source: PlaySource, score_time_s: float | None
    ) -> None:
        super().__init__(reason, bar, source.play_id, score_time_s or 0.0)
        self.args = (
            f'{source.play_id}: refused before anything moved: '
            f'{_row(source, bar, score_time_s)}: {reason}',
        )


def check_feasible(play: Playback, source: PlaySource, table: JointTable) -> None:
    """Generate ``play`` (a fresh playback of ``source``, never sent) to its end and check it.

    Raises:
        ScoreInfeasible: The first chunk or window that cannot be carried out.
    """
    chunks = [*play.drum_start(), *play.fill(math.inf, 0.0)]
    for chunk in chunks:
        problem = check_chunk(table, chunk.trajectory_chunk(table.names))
        if problem is not None:
            raise ScoreInfeasible(str(problem), chunk.bar, source, chunk.score_end_s)
    aborted = play.aborted
    if aborted is not None:
        raise ScoreInfeasible(aborted.reason, aborted.bar, source, aborted.score_time_s)


def _row(source: PlaySource, bar: int | None, score_time_s: float | None) -> str:
    """'bar 3, line 17 (beat 0.005)': the score row a window moves to; 'the start pose'."""
    if bar is None or score_time_s is None:
        return 'the move to the start pose'
    rows = [event for event in source.score.events if event.bar == bar]
    if not rows:
        return f'bar {bar}'
    row = min(rows, key=lambda event: abs(event.time_s - score_time_s))
    return f'bar {bar}, line {row.line_number} (beat {row.beat_units:g})'
