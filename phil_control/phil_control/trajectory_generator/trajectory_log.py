"""``trajectory.csv``: every commanded trajectory point, like upstream's TrajectoryGenerator log.

Header ``t,joint 0,...,joint 12`` (upstream); one row per point of every chunk the
trajectory_generator publishes, written when the chunk is published (generation time, as
upstream), in publishing order. ``t`` is the point's absolute time on the robot clock
(CLOCK_MONOTONIC seconds, the clock of ``motors.csv``, ``hits.csv`` and ``impacts.jsonl``); the
joint columns are positions in rad in the robot model's joint order. A joint a chunk does not
carry is left blank. Chunks with ``replace`` supersede earlier rows from their start on, as on
the robot: the file is the record of what was sent, not a de-duplicated trajectory.

ROS-free: messages are read by attribute (``phil_msgs/TrajectoryChunk`` layout).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from phil_description.core.capped_log import CappedCsvLog

FILE_NAME = 'trajectory.csv'
_NS_PER_S = 1_000_000_000


class TrajectoryCsvLog:
    """Writes ``trajectory.csv`` (flushed after every chunk, so a crash loses nothing; rotated
    to ``trajectory.csv.1`` past 20 MB, `CappedCsvLog`).

    Args:
        path: The file; its folder is created. An existing file is overwritten.
        joint_names: Column order (``joint i`` is ``joint_names[i]``).
    """

    def __init__(self, path: Path, joint_names: Sequence[str]) -> None:
        self.path = path
        self.joint_names = tuple(joint_names)
        self._column = {name: index for index, name in enumerate(self.joint_names)}
        self._log = CappedCsvLog(
            path, ['t', *(f'joint {i}' for i in range(len(self.joint_names)))]
        )

    def write_points(
        self,
        times_s: ArrayLike,
        positions_rad: ArrayLike,
        joint_names: Sequence[str] | None = None,
    ) -> None:
        """Append points.

        Args:
            times_s: (N,) absolute robot-clock times, s.
            positions_rad: (N, J) positions, rad, columns in ``joint_names`` order.
            joint_names: The J joints of ``positions_rad``; None = the log's joints.

        Raises:
            ValueError: On an unknown joint or mismatched shapes.
        """
        times = np.asarray(times_s, dtype=float).reshape(-1)
        names = self.joint_names if joint_names is None else tuple(joint_names)
        positions = np.asarray(positions_rad, dtype=float).reshape(len(times), len(names))
        unknown = [name for name in names if name not in self._column]
        if unknown:
            raise ValueError(f'trajectory log: unknown joints {unknown}')
        columns = [self._column[name] for name in names]
        rows = []
        for time_s, point in zip(times, positions, strict=True):
            cells = [''] * len(self.joint_names)
            for column, value in zip(columns, point, strict=True):
                cells[column] = f'{value:.6f}'
            rows.append([f'{time_s:.6f}', *cells])
        self._log.writerows(rows)  # one chunk never split over two files

    def write_msg(self, msg, stamp_offset_ns: int = 0) -> None:
        """Append the points of a ``TrajectoryChunk`` message.

        Args:
            msg: ``phil_msgs/TrajectoryChunk`` (or anything shaped like it).
            stamp_offset_ns: Stamp clock minus CLOCK_MONOTONIC, ns (0 for monotonic stamps).
        """
        trajectory = msg.trajectory
        stamp = trajectory.header.stamp
        start_ns = stamp.sec * _NS_PER_S + stamp.nanosec - stamp_offset_ns
        points = trajectory.points
        times = [
            (start_ns + p.time_from_start.sec * _NS_PER_S + p.time_from_start.nanosec) / _NS_PER_S
            for p in points
        ]
        positions = [list(p.positions) for p in points]
        self.write_points(
            times,
            np.array(positions, dtype=float).reshape(len(points), len(trajectory.joint_names)),
            trajectory.joint_names,
        )

    def close(self) -> None:
        """Close the file (later writes are ignored)."""
        self._log.close()


class LoggingPublisher:
    """A chunk publisher that also logs what it publishes; everything else is delegated.

    Args:
        publisher: The rclpy publisher of ``TrajectoryChunk``.
        log: Where the points go.
        stamp_clock_ns: The clock the chunk stamps are on, to map them onto CLOCK_MONOTONIC
            (offset measured at every chunk, so a stepped system clock is followed); None when
            the stamps are CLOCK_MONOTONIC already.
    """

    def __init__(
        self, publisher, log: TrajectoryCsvLog, stamp_clock_ns: Callable[[], int] | None = None
    ) -> None:
        self.publisher = publisher
        self.log = log
        self._stamp_clock_ns = stamp_clock_ns
        self.log_errors = 0
        self.last_log_error = ''

    def publish(self, msg) -> None:
        """Publish, then log (a logging failure never stops the publishing)."""
        self.publisher.publish(msg)
        offset = 0
        if self._stamp_clock_ns is not None:
            offset = self._stamp_clock_ns() - time.monotonic_ns()
        try:
            self.log.write_msg(msg, offset)
        except (OSError, ValueError) as error:
            self.log_errors += 1
            self.last_log_error = str(error)

    def __getattr__(self, name: str):
        return getattr(self.publisher, name)


def logging_publisher(
    publisher,
    log_dir: str,
    joint_names: Sequence[str],
    stamp_clock_ns: Callable[[], int] | None = None,
):
    """``publisher`` itself when ``log_dir`` is '' (logging off), else a ``LoggingPublisher``
    writing ``<log_dir>/trajectory.csv``."""
    if not log_dir:
        return publisher
    return LoggingPublisher(
        publisher, TrajectoryCsvLog(Path(log_dir) / FILE_NAME, joint_names), stamp_clock_ns
    )
