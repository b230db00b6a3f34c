"""The hardware node's CSV logs in a run folder (README, "Logs and plots"): ``motors.csv``
like upstream's and ``ticks.csv`` with the bus loop's timing. Snapshots come from the bus loop's
shared memory (``phil_hardware.rt``); nothing here blocks the loop. Both are size-capped and
rotated to ``<name>.1`` (`CappedCsvLog`)."""

from __future__ import annotations

import math
from pathlib import Path

from phil_description.core.capped_log import CappedCsvLog

#: motors.csv grows about 140 KB/s at 200 Hz (13 rows a sample): ~25 min a file.
MOTOR_LOG_MAX_BYTES = 200 * 1024 * 1024


class MotorCsvLog:
    """`motors.csv` like upstream's: one row per motor per state sample."""

    HEADER = [
        't',
        'id',
        'mode',
        'desired',
        'actual',
        'err',
        'current_or_torque',
        'desired_velocity',
    ]

    def __init__(self, path: Path, max_bytes: int = MOTOR_LOG_MAX_BYTES) -> None:
        # Buffered (flushed when the buffer fills and at close), as a 200 Hz log affords.
        self._log = CappedCsvLog(path, self.HEADER, max_bytes, flush=False)
        self._last_time = -math.inf

    def write(self, snapshot, start_s: float) -> None:
        if snapshot.time_s <= self._last_time:
            return
        self._last_time = snapshot.time_s
        t = f'{snapshot.time_s - start_s:.4f}'
        rows = []
        for index in range(len(snapshot.joint_names)):
            desired, actual = snapshot.targets_rad[index], snapshot.positions_rad[index]
            load = snapshot.torques_mnm[index]
            if not math.isfinite(load):
                load = snapshot.currents_a[index]
            rows.append(
                [
                    t,
                    index,
                    snapshot.modes[index],
                    f'{desired:.4f}',
                    f'{actual:.4f}',
                    f'{desired - actual:.4f}',
                    f'{load:.4f}',
                    f'{snapshot.target_velocities_rad_s[index]:.4f}',
                ]
            )
        self._log.writerows(rows)  # a sample's rows stay in one file

    def close(self) -> None:
        self._log.close()


class TickCsvLog:
    """`ticks.csv`: the bus loop's tick-lateness window statistics about once a second (t =
    robot monotonic seconds; lateness in s; overruns and missed_ticks are running totals)."""

    HEADER = ['t', 'tick_p50_s', 'tick_p99_s', 'tick_max_s', 'overruns', 'missed_ticks']

    def __init__(self, path: Path, period_s: float = 1.0) -> None:
        self._log = CappedCsvLog(path, self.HEADER)
        self._period_s = period_s
        self._next_s = -math.inf

    def write(self, snapshot) -> None:
        if snapshot.time_s < self._next_s:
            return
        self._next_s = snapshot.time_s + self._period_s
        self._log.writerow(
            [
                f'{snapshot.time_s:.4f}',
                f'{snapshot.tick_p50_s:.9f}',
                f'{snapshot.tick_p99_s:.9f}',
                f'{snapshot.tick_max_s:.9f}',
                snapshot.overruns,
                snapshot.missed_ticks,
            ]
        )

    def close(self) -> None:
        self._log.close()
