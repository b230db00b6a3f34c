"""``hits.csv``: the score_player's commanded hits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phil_control.conversions import TimeBase
from phil_control.core.play import ScheduledHit
from phil_description.core.capped_log import CappedCsvLog

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
