"""Load a run folder: the CSV and JSONL logs the nodes write under their ``log_dir``.

Every time is on the robot clock (CLOCK_MONOTONIC seconds) unless noted.

========================  =====================================================================
``motors.csv``            hardware: ``t,id,mode,desired,actual,err,current_or_torque,
                          desired_velocity``, one row per joint per state sample (~200 Hz), rad
``ticks.csv``             hardware: ``t,tick_p50_s,tick_p99_s,tick_max_s,overruns,missed_ticks``
                          about once a second (window statistics of the bus-loop tick lateness)
``ticks_trace.csv``       optional per-tick lateness (``lateness_s``, optional ``t``), e.g. from
                          ``BusLoopClient.trace()`` via :func:`write_ticks_trace`
``trajectory.csv``        trajectory_generator: ``t,joint 0,...,joint 12``, commanded points, rad
``hits.csv``              score_player: ``t,play_id,bar,instrument,hand,velocity,score_time_s,
                          command_time_s``, one row per commanded hit
``impacts.jsonl``         device simulator: one JSON object per detected impact (``instrument``,
                          ``time_s``, ``limb``, ...)
``commands.csv``          tcp_bridge: ``t,client,opcode,result,line,reason`` (t: wall clock)
========================  =====================================================================

The logs name joints by index only (``motors.csv`` ``id`` i, ``trajectory.csv`` ``joint i``):
their names come from the robot model (the URDF), the one source of joint names; when it cannot
be loaded, :func:`load_run` raises :class:`RunLogError` unless it is given the names.

Missing files are fine (that log is None). A malformed line raises :class:`RunLogError` naming
the file and the line; a last line cut short by a crash (no final newline) is dropped with a
warning instead. ``load_run(..., strict=False)`` records such errors per file instead of raising.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from phil_bringup.plots.csvread import RunLogError, csv_header, read_csv, read_text
from phil_bringup.plots.logtypes import (
    CommandLog,
    HitLog,
    ImpactLog,
    MotorLog,
    TickTrace,
    TickWindows,
    TrajectoryLog,
)
from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog

FILES = {
    'motors': 'motors.csv',
    'ticks': 'ticks.csv',
    'ticks_trace': 'ticks_trace.csv',
    'trajectory': 'trajectory.csv',
    'hits': 'hits.csv',
    'impacts': 'impacts.jsonl',
    'commands': 'commands.csv',
}
EPOCH_THRESHOLD_S = 1e8


@dataclass
class RunLog:
    """Everything found in one run folder (None = file absent or, non-strict, unreadable);
    ``joint_names[i]`` names ``id`` i / ``joint i`` of the logs."""

    folder: Path
    joint_names: tuple[str, ...]
    motors: MotorLog | None = None
    ticks: TickWindows | None = None
    ticks_trace: TickTrace | None = None
    trajectory: TrajectoryLog | None = None
    hits: HitLog | None = None
    impacts: ImpactLog | None = None
    commands: CommandLog | None = None
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def why_missing(self, name: str) -> str:
        """Why log ``name`` is None: its error, or that its file is absent or empty."""
        if name in self.errors:
            return self.errors[name]
        if (self.folder / FILES[name]).is_file():
            return f'{FILES[name]} has no rows'
        return f'no {FILES[name]}'

    def get(self, name: str):
        """Log ``name`` if it is present and has rows, else None."""
        value = getattr(self, name)
        return value if value is not None and len(value) else None

    @property
    def start_s(self) -> float:
        """Earliest robot-clock time of the run (0 when nothing is timed)."""
        firsts = [
            float(np.nanmin(log.t))
            for log in (self.motors, self.trajectory, self.ticks)
            if log is not None and len(log)
        ]
        if self.hits is not None and len(self.hits):
            firsts.append(float(np.nanmin(self.hits.command_time_s)))
        firsts = [t for t in firsts if math.isfinite(t)]
        return min(firsts) if firsts else 0.0


def load_motors(path: Path, warnings: list[str] | None = None) -> MotorLog:
    """``motors.csv`` (``MotorCsvLog``: its header names the columns)."""
    names = tuple(MotorCsvLog.HEADER)
    columns = read_csv(
        path,
        names,
        optional=('mode', 'err', 'current_or_torque', 'desired_velocity'),
        warnings=warnings,
    )
    ids = columns['id']
    bad = np.flatnonzero(~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0))
    if bad.size:
        raise RunLogError(
            path, int(columns['_line'][bad[0]]), f'column id: {ids[bad[0]]:g} is not a joint index'
        )
    return MotorLog(
        **{name: columns[name] for name in names[:1]},
        id=ids.astype(int),
        **{name: columns[name] for name in names[2:]},
    )


def load_ticks(path: Path, warnings: list[str] | None = None) -> TickWindows:
    """``ticks.csv`` (``TickCsvLog``: its header names the columns)."""
    c = read_csv(path, tuple(TickCsvLog.HEADER), warnings=warnings)
    return TickWindows(
        c['t'], c['tick_p50_s'], c['tick_p99_s'], c['tick_max_s'], c['overruns'], c['missed_ticks']
    )


def load_ticks_trace(path: Path, warnings: list[str] | None = None) -> TickTrace:
    """``ticks_trace.csv``: column ``lateness_s``, optionally ``t``."""
    c = read_csv(path, ('lateness_s', 't'), optional=('t',), warnings=warnings)
    return TickTrace(c['lateness_s'], c['t'])


def write_ticks_trace(
    path: Path, lateness_s: Sequence[float], times_s: Sequence[float] | None = None
) -> Path:
    """Write ``ticks_trace.csv`` (e.g. ``BusLoopClient.trace()`` at the end of a run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open('w', newline='', encoding='utf-8') as file:
        writer = csv.writer(file)
        if times_s is None:
            writer.writerow(['lateness_s'])
            writer.writerows([f'{value:.9f}'] for value in lateness_s)
        else:
            writer.writerow(['t', 'lateness_s'])
            writer.writerows(
                [f'{t:.6f}', f'{value:.9f}'] for t, value in zip(times_s, lateness_s, strict=True)
            )
    return path


def load_trajectory(
    path: Path, joint_count: int, warnings: list[str] | None = None
) -> TrajectoryLog:
    """``trajectory.csv`` (``phil_control.trajectory_generator.trajectory_log``); blank cells
    are NaN."""
    header = csv_header(path)
    joints = [name for name in header if name.startswith('joint ')]
    expected = [f'joint {i}' for i in range(len(joints))]
    if joints != expected:
        raise RunLogError(
            path,
            1,
            f'joint columns must be {", ".join(expected[:2])}, ..., got {", ".join(joints)}',
        )
    c = read_csv(path, ('t', *joints), blank_as_nan=True, warnings=warnings)
    positions = np.full((len(c['t']), max(joint_count, len(joints))), math.nan)
    for index, name in enumerate(joints):
        positions[:, index] = c[name]
    return TrajectoryLog(c['t'], positions)


def load_hits(path: Path, warnings: list[str] | None = None) -> HitLog:
    """``hits.csv`` (``phil_control.score_player.hit_log.HitLog``)."""
    c = read_csv(
        path,
        ('t', 'bar', 'velocity', 'score_time_s', 'command_time_s'),
        ('play_id', 'instrument', 'hand'),
        warnings=warnings,
    )
    return HitLog(
        c['t'],
        c['play_id'],
        c['bar'],
        tuple(i.strip() for i in c['instrument']),
        tuple(h.strip() for h in c['hand']),
        c['velocity'],
        c['score_time_s'],
        c['command_time_s'],
    )


def load_impacts(path: Path, warnings: list[str] | None = None) -> ImpactLog:
    """``impacts.jsonl`` (device simulator ``--impacts-jsonl``): one JSON object a line with at
    least ``instrument`` (text) and ``time_s`` (number); blank lines are skipped."""
    content = read_text(path)
    lines = content.splitlines()
    times, instruments, limbs, speeds = [], [], [], []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise ValueError(f'expected a JSON object, got {type(record).__name__}')
            instrument, time_s = record.get('instrument'), record.get('time_s')
            if not isinstance(instrument, str) or not instrument:
                raise ValueError('"instrument" must be a non-empty string')
            if (
                isinstance(time_s, bool)
                or not isinstance(time_s, (int, float))
                or not math.isfinite(time_s)
            ):
                raise ValueError(f'"time_s" must be a finite number, got {time_s!r}')
            speed = record.get('speed', math.nan)
            speed = float(speed) if isinstance(speed, (int, float)) else math.nan
        except ValueError as error:  # json.JSONDecodeError is a ValueError
            if number == len(lines) and not content.endswith('\n'):
                if warnings is not None:
                    warnings.append(f'{path}:{number}: last line cut off ({error}); ignored')
                continue
            raise RunLogError(path, number, str(error)) from None
        times.append(float(time_s))
        instruments.append(instrument)
        limbs.append(str(record.get('limb', '')))
        speeds.append(speed)
    return ImpactLog(
        np.array(times, dtype=float),
        tuple(instruments),
        tuple(limbs),
        np.array(speeds, dtype=float),
    )


def load_commands(path: Path, warnings: list[str] | None = None) -> CommandLog:
    """``commands.csv`` (tcp_bridge ``CommandCsvLog``)."""
    c = read_csv(path, ('t',), ('client', 'opcode', 'result', 'line', 'reason'), warnings=warnings)
    return CommandLog(c['t'], c['client'], c['opcode'], c['result'], c['line'], c['reason'])


def default_joint_names(folder: Path) -> tuple[str, ...]:
    """The robot model's joint order (``id`` i / ``joint i`` is ``joint_names[i]``).

    Args:
        folder: The run folder, named by the error.

    Raises:
        RunLogError: The robot model (URDF) cannot be loaded; the logs themselves name joints
            by index only, so there is nothing else to take the names from.
    """
    try:
        from phil_description.core import DescriptionError, default_robot_model
    except ImportError as error:
        reason = f'phil_description cannot be imported ({error})'
    else:
        try:
            return tuple(default_robot_model().joint_names)
        except (DescriptionError, ImportError, OSError) as error:
            reason = f'the robot model did not load ({error})'
    raise RunLogError(
        folder,
        None,
        f'no joint names: {reason}; the logs name joints by index '
        f'only (motors.csv id, trajectory.csv "joint i"), pass '
        f'joint_names to load_run',
    ) from None


def load_run(
    folder: Path | str, strict: bool = True, joint_names: Sequence[str] | None = None
) -> RunLog:
    """Load every log of a run folder.

    Args:
        folder: The run folder (a node's ``log_dir``).
        strict: Raise on the first unreadable file; otherwise record it in ``errors`` (by log
            name) and leave that log None.
        joint_names: Names of ``id`` / ``joint i``; default the robot model's (the URDF).

    Raises:
        FileNotFoundError: ``folder`` is not a directory.
        RunLogError: (strict) a file is malformed, naming the file and the line; (strict or
            not) ``joint_names`` is None and the robot model cannot be loaded.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f'run folder {folder} does not exist')
    names = tuple(joint_names) if joint_names is not None else default_joint_names(folder)
    run = RunLog(folder, names)
    loaders = {
        'motors': load_motors,
        'ticks': load_ticks,
        'ticks_trace': load_ticks_trace,
        'trajectory': lambda path, warnings: load_trajectory(path, len(names), warnings),
        'hits': load_hits,
        'impacts': load_impacts,
        'commands': load_commands,
    }
    for name, loader in loaders.items():
        path = folder / FILES[name]
        if not path.is_file():
            continue
        try:
            setattr(run, name, loader(path, run.warnings))
        except (RunLogError, OSError) as error:
            if strict:
                raise
            run.errors[name] = str(error)
    run.warnings.extend(clock_warnings(run))
    return run


def clock_warnings(run: RunLog) -> list[str]:
    """Robot-clock logs whose times look like wall-clock (epoch) seconds while others do not:
    CLOCK_MONOTONIC counts from boot, so 1e8 s (3 years) separates the two."""
    times = {
        'motors.csv': run.motors.t if run.motors is not None else None,
        'ticks.csv': run.ticks.t if run.ticks is not None else None,
        'trajectory.csv': run.trajectory.t if run.trajectory is not None else None,
        'hits.csv': run.hits.command_time_s if run.hits is not None else None,
        'impacts.jsonl': run.impacts.time_s if run.impacts is not None else None,
    }
    epoch = {
        name: bool(np.nanmedian(t) > EPOCH_THRESHOLD_S)
        for name, t in times.items()
        if t is not None and len(t) and np.isfinite(t).any()
    }
    if all(epoch.values()) or not any(epoch.values()):
        return []
    return [
        f'{name}: times look like wall-clock seconds, the other logs are on the robot '
        f'(monotonic) clock; they will not line up (a node with stamp_clock: ros?)'
        for name, wall in epoch.items()
        if wall
    ]
