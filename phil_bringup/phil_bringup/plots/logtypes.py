"""The logs of a run folder as column arrays, one frozen type per file
(:mod:`phil_bringup.plots.runlog` reads them; its docstring lists the files and their columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MotorLog:
    """``motors.csv`` as flat columns (one entry per row); use :meth:`joint`."""

    t: np.ndarray
    id: np.ndarray
    mode: np.ndarray
    desired: np.ndarray
    actual: np.ndarray
    err: np.ndarray
    current_or_torque: np.ndarray
    desired_velocity: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    @property
    def joint_ids(self) -> list[int]:
        return sorted({int(i) for i in self.id})

    def joint(self, joint_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t, desired, actual) of one joint, rad, in file order."""
        mask = self.id == joint_id
        return self.t[mask], self.desired[mask], self.actual[mask]


@dataclass(frozen=True)
class TickWindows:
    """``ticks.csv``: lateness statistics per window, s; running overrun counters."""

    t: np.ndarray
    p50_s: np.ndarray
    p99_s: np.ndarray
    max_s: np.ndarray
    overruns: np.ndarray
    missed_ticks: np.ndarray

    def __len__(self) -> int:
        return len(self.t)


@dataclass(frozen=True)
class TickTrace:
    """``ticks_trace.csv``: lateness of every traced tick, s (``t`` empty when not logged)."""

    lateness_s: np.ndarray
    t: np.ndarray

    def __len__(self) -> int:
        return len(self.lateness_s)


@dataclass(frozen=True)
class TrajectoryLog:
    """``trajectory.csv``: (N,) times and (N, J) positions, rad (NaN = not in that chunk)."""

    t: np.ndarray
    positions: np.ndarray

    def __len__(self) -> int:
        return len(self.t)


@dataclass(frozen=True)
class HitLog:
    """``hits.csv``: commanded hits."""

    t: np.ndarray
    play_id: tuple[str, ...]
    bar: np.ndarray
    instrument: tuple[str, ...]
    hand: tuple[str, ...]
    velocity: np.ndarray
    score_time_s: np.ndarray
    command_time_s: np.ndarray

    def __len__(self) -> int:
        return len(self.t)


@dataclass(frozen=True)
class ImpactLog:
    """``impacts.jsonl``: detected impacts."""

    time_s: np.ndarray
    instrument: tuple[str, ...]
    limb: tuple[str, ...]
    speed: np.ndarray

    def __len__(self) -> int:
        return len(self.time_s)


@dataclass(frozen=True)
class CommandLog:
    """``commands.csv``: protocol lines received (t on the wall clock)."""

    t: np.ndarray
    client: tuple[str, ...]
    opcode: tuple[str, ...]
    result: tuple[str, ...]
    line: tuple[str, ...]
    reason: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.t)
