"""What a play session's current (or last) play has scheduled and reached: its hits, its
clock, its progress and when its DRUM END completes. `PlaySession` adds the commands.
"""

from __future__ import annotations

from phil_control.core.play.chunk import PlayAborted, PlayProgress, ScheduledHit
from phil_control.core.play.playback import Playback


class PlayStatus:
    """Queries of the current (or last) play, the base of `PlaySession`; only `due_hits`
    changes anything (it remembers which hits it returned)."""

    def __init__(self) -> None:
        """No play yet."""
        self._play: Playback | None = None
        self._reported = 0  # hits already returned by `due_hits`

    @property
    def aborted(self) -> PlayAborted | None:
        """Why the current (or last) play ended early; it has queued DRUM END to ready."""
        return self._play.aborted if self._play is not None else None

    @property
    def commanded_hits(self) -> tuple[ScheduledHit, ...]:
        """Every hit of the current (or last) play still scheduled, in time order."""
        return tuple(self._play.hits) if self._play is not None else ()

    def due_hits(self, now_s: float) -> list[ScheduledHit]:
        """Hits whose instant has passed since the last call (for /phil/hits)."""
        if self._play is None:
            return []
        hits = self._play.hits
        self._reported = min(self._reported, len(hits))
        due = [hit for hit in hits[self._reported :] if hit.command_time_s <= now_s]
        self._reported += len(due)
        return due

    @property
    def speed(self) -> float:
        """Requested playback speed (a window may run slower, see `guarded_windows`)."""
        return self._play.requested_speed if self._play is not None else 1.0

    @property
    def guarded_windows(self) -> int:
        """Windows the velocity guard played slower than requested (see `playback`)."""
        return self._play.guarded_windows if self._play is not None else 0

    def score_time_at(self, wall_s: float) -> float:
        """Score time at a wall time (negative during DRUM START), s.

        Raises:
            RuntimeError: No play was started.
        """
        play = self._require_play()
        return play.clock.score_at(wall_s - play.motion_lead_s)

    def wall_time_at(self, score_s: float) -> float:
        """Wall time of a score time, s (score time 0 = end of DRUM START; audio starts there).

        Raises:
            RuntimeError: No play was started.
        """
        play = self._require_play()
        return play.clock.wall_at(score_s) + play.motion_lead_s

    @property
    def end_time_s(self) -> float | None:
        """Wall time at which DRUM END completes (None while it is not queued yet)."""
        end = self._play.end if self._play is not None else None
        return end.end_time_s if end is not None else None

    def finished(self, now_s: float) -> bool:
        """True when no play is running at `now_s` (never started, or DRUM END completed)."""
        end = self.end_time_s
        return self._play is None or (end is not None and now_s >= end)

    def progress(self, now_s: float) -> PlayProgress:
        """Bar, speed, score time, elapsed time and hits played at `now_s`."""
        play = self._play
        if play is None:
            return PlayProgress('', 0, 0, 1.0, 0.0, 0.0, 0)
        score_s = max(self.score_time_at(now_s), 0.0)
        events = play.timeline.events
        reached = next((e for e in reversed(events) if e.time_s <= score_s), events[0])
        source = play.timeline.source_of(reached.index)
        played = [hit for hit in play.hits if hit.command_time_s <= now_s]
        elapsed = now_s - played[0].command_time_s if played else 0.0
        return PlayProgress(
            source.play_id,
            reached.bar,
            source.score.total_bars,
            play.clock.speed_at(score_s),
            score_s,
            elapsed,
            len(played),
        )

    def _require_play(self) -> Playback:
        if self._play is None:
            raise RuntimeError('no play has been started')
        return self._play
