"""The run figures (PNG, matplotlib Agg; no display needed) and the timing summary files.

=====================  ==========================================================================
``joints.png``         desired vs measured position per joint [deg] (``motors.csv``; the planned
                       points of ``trajectory.csv`` when there is no ``motors.csv``), vertical
                       lines at the commanded hits (``hits.csv``) coloured by limb
``tracking_error.png`` desired - measured per joint [deg], RMS and max in each legend
``jitter.png``         bus-loop tick lateness [us, log]: histogram of ``ticks_trace.csv`` and the
                       per-window p50/p99/max of ``ticks.csv`` over time
``hit_timing.png``     detected impact - commanded hit per instrument [ms] (box and points)
``timing.txt``         the same statistics as a table; ``timing.json`` as data
=====================  ==========================================================================

:func:`render_run` writes what the run's logs allow and says why it skipped the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogFormatter

from phil_bringup.plots.runlog import RunLog
from phil_bringup.plots.stats import (
    DEFAULT_WINDOW_S,
    TimingReport,
    format_timing,
    hit_timing,
    lateness_summary,
    tracking_stats,
)

DPI = 100
PLAIN = FuncFormatter(lambda value, _: f'{value:g}')  # 20, 100 rather than 2x10^1, 10^2
HAND_COLORS = {'right': '#d62728', 'left': '#1f77b4', 'kick': '#2ca02c'}
OTHER_HAND_COLOR = '#7f7f7f'
DESIRED_STYLE = {'color': '#ff7f0e', 'linestyle': '--', 'linewidth': 1.0}
MEASURED_STYLE = {'color': '#222222', 'linestyle': '-', 'linewidth': 1.0}
# Panel columns of the per-joint figures and the hits drawn in them (None = every hit).
GROUPS = (
    (
        'Right arm',
        ('right_shoulder_1', 'right_shoulder_2', 'right_elbow', 'right_wrist'),
        ('right',),
    ),
    ('Left arm', ('left_shoulder_1', 'left_shoulder_2', 'left_elbow', 'left_wrist'), ('left',)),
    ('Waist and head', ('waist', 'head_yaw', 'head_pitch'), None),
    ('Pedals', ('right_pedal', 'left_pedal'), ('kick',)),
)


@dataclass(frozen=True)
class Output:
    """One output file: written (``path``) or skipped (``reason``)."""

    name: str
    path: Path | None = None
    reason: str = ''

    @property
    def written(self) -> bool:
        return self.path is not None


def joint_groups(joint_names: tuple[str, ...]) -> list[tuple[str, list[int], tuple | None]]:
    """(title, joint indices, hands drawn) per panel column; unknown joints go to 'Other'."""
    groups, placed = [], set()
    for title, names, hands in GROUPS:
        indices = [joint_names.index(name) for name in names if name in joint_names]
        if indices:
            groups.append((title, indices, hands))
            placed.update(indices)
    rest = [index for index in range(len(joint_names)) if index not in placed]
    for start in range(0, len(rest), 4):
        groups.append(('Other', rest[start : start + 4], None))
    return groups


def _new_figure(width_in: float, height_in: float, constrained: bool = True) -> Figure:
    figure = Figure(
        figsize=(width_in, height_in), dpi=DPI, layout='constrained' if constrained else None
    )
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, format='png')
    return path


def _joint_grid(run: RunLog, title: str):
    groups = joint_groups(run.joint_names)
    rows = max(len(indices) for _, indices, _ in groups)
    width, height = 4.2 * len(groups), 1.9 * rows + 1.3
    # A fixed layout: constrained layout costs seconds on a grid of this size.
    figure = _new_figure(width, height, constrained=False)
    figure.subplots_adjust(
        left=0.7 / width,
        right=1 - 0.15 / width,
        top=1 - 0.6 / height,
        bottom=0.85 / height,
        hspace=0.5,
        wspace=0.2,
    )
    axes = figure.subplots(rows, len(groups), sharex=True, squeeze=False)
    figure.suptitle(title)
    panels = []
    for column, (group, indices, hands) in enumerate(groups):
        for row in range(rows):
            ax = axes[row][column]
            if row >= len(indices):
                ax.set_visible(False)
                continue
            index = indices[row]
            name = run.joint_names[index] if index < len(run.joint_names) else f'joint {index}'
            ax.set_title(f'{group}: {name}' if row == 0 else name, fontsize=9, loc='left')
            ax.tick_params(labelsize=8)
            ax.grid(True, alpha=0.3)
            if column == 0:
                ax.set_ylabel('deg', fontsize=8)
            ax.set_xlabel(
                'time since run start [s]' if row == len(indices) - 1 else '', fontsize=8
            )
            if row == len(indices) - 1:
                ax.xaxis.set_tick_params(labelbottom=True)
            panels.append((ax, index, hands))
    return figure, panels


def _hit_lines(ax, run: RunLog, hands: tuple | None, start_s: float) -> set[str]:
    hits = run.get('hits')
    if hits is None:
        return set()
    drawn = set()
    hand_of = np.asarray(hits.hand, dtype=object)
    for hand in sorted(set(hits.hand)):
        if hands is not None and hand not in hands:
            continue
        times = hits.command_time_s[hand_of == hand] - start_s
        ax.vlines(
            times,
            0,
            1,
            transform=ax.get_xaxis_transform(),
            colors=HAND_COLORS.get(hand, OTHER_HAND_COLOR),
            linewidth=0.6,
            alpha=0.45,
            zorder=0,
        )
        drawn.add(hand)
    return drawn


def _hit_legend(hands: set[str]) -> list[Line2D]:
    return [
        Line2D(
            [],
            [],
            color=HAND_COLORS.get(hand, OTHER_HAND_COLOR),
            linewidth=1.5,
            label=f'commanded hit ({hand})',
        )
        for hand in sorted(hands)
    ]


def joints_figure(run: RunLog, path: Path) -> Path:
    """Desired vs measured per joint with the commanded hits."""
    motors, trajectory = run.get('motors'), run.get('trajectory')
    start = run.start_s
    source = 'motors.csv' if motors is not None else 'trajectory.csv (planned points)'
    figure, panels = _joint_grid(
        run,
        f'Joint positions: desired vs measured [deg] ({source}; '
        'vertical lines: commanded hits from hits.csv)',
    )
    hands_drawn: set[str] = set()
    for ax, index, hands in panels:
        hands_drawn |= _hit_lines(ax, run, hands, start)
        if motors is not None:
            t, desired, actual = motors.joint(index)
            ax.plot(t - start, np.degrees(desired), **DESIRED_STYLE)
            ax.plot(t - start, np.degrees(actual), **MEASURED_STYLE)
        elif index < trajectory.positions.shape[1]:
            ax.plot(
                trajectory.t - start,
                np.degrees(trajectory.positions[:, index]),
                marker='.',
                markersize=2,
                **DESIRED_STYLE,
            )
    handles = [Line2D([], [], label='desired (commanded)', **DESIRED_STYLE)]
    if motors is not None:
        handles.append(Line2D([], [], label='measured', **MEASURED_STYLE))
    handles += _hit_legend(hands_drawn)
    figure.legend(
        handles=handles, loc='lower center', ncols=len(handles), fontsize=9, frameon=False
    )
    return _save(figure, path)


def tracking_error_figure(run: RunLog, path: Path) -> Path:
    """Desired - measured per joint, RMS and max in the legends."""
    motors = run.get('motors')
    start = run.start_s
    figure, panels = _joint_grid(run, 'Tracking error: desired - measured [deg] (motors.csv)')
    for ax, index, _ in panels:
        t, desired, actual = motors.joint(index)
        error = np.degrees(desired - actual)
        rms, largest = tracking_stats(np.degrees(desired), np.degrees(actual))
        label = (
            'no samples' if not math.isfinite(rms) else f'RMS {rms:.3f} deg, max {largest:.3f} deg'
        )
        ax.axhline(0.0, color='black', linewidth=0.5)
        ax.plot(t - start, error, color='#9467bd', linewidth=0.8, label=label)
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.4 * (high - low))  # headroom: the legend stays off the data
        ax.legend(loc='upper right', fontsize=7, handlelength=1.0)
    return _save(figure, path)


def jitter_figure(run: RunLog, path: Path) -> Path:
    """Tick lateness: per-tick histogram (``ticks_trace.csv``) and window statistics over
    time (``ticks.csv``)."""
    trace, ticks = run.get('ticks_trace'), run.get('ticks')
    panels = [
        p
        for p in ('histogram' if trace is not None else '', 'series' if ticks is not None else '')
        if p
    ]
    figure = _new_figure(7.5 * len(panels), 4.8)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    figure.suptitle('Bus-loop tick lateness (wake-up after the deadline)')
    for ax, panel in zip(axes, panels, strict=True):
        ax.grid(True, which='both', alpha=0.3)
        if panel == 'histogram':
            _lateness_histogram(ax, trace.lateness_s)
        else:
            _lateness_series(ax, ticks, run.start_s)
    return _save(figure, path)


def _lateness_histogram(ax, lateness_s: np.ndarray) -> None:
    summary = lateness_summary(lateness_s)
    micro = np.asarray(lateness_s, dtype=float) * 1e6
    micro = micro[np.isfinite(micro)]
    positive = micro[micro > 0]
    # Log axis: on-time (or early) wake-ups are counted in the first bin.
    floor = max(0.8 * float(positive.min()), 0.01) if positive.size else 0.1
    at_floor = int((micro < floor).sum())
    micro = np.maximum(micro, floor)
    high = max(float(micro.max()) if micro.size else 1.0, floor * 10)
    bins = np.logspace(math.log10(floor), math.log10(high * 1.05), 60)
    ax.hist(
        micro,
        bins=bins,
        color='#1f77b4',
        alpha=0.8,
        label=f'{summary["count"]} ticks' + (f' ({at_floor} at <= 0 us)' if at_floor else ''),
    )
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.xaxis.set_major_formatter(PLAIN)
    for key, color in (('p50_s', '#2ca02c'), ('p99_s', '#ff7f0e'), ('max_s', '#d62728')):
        value = summary[key]
        if math.isfinite(value):
            ax.axvline(
                max(value * 1e6, floor),
                color=color,
                linewidth=1.2,
                label=f'{key[:-2]} {value * 1e6:.3g} us',
            )
    ax.set_xlabel('lateness [us] (log)')
    ax.set_ylabel('ticks (log)')
    ax.set_title('per-tick histogram (ticks_trace.csv)', fontsize=10)
    ax.legend(fontsize=8)


def _lateness_series(ax, ticks, start_s: float) -> None:
    t = ticks.t - start_s
    for values, label, color in (
        (ticks.p50_s, 'p50', '#2ca02c'),
        (ticks.p99_s, 'p99', '#ff7f0e'),
        (ticks.max_s, 'max', '#d62728'),
    ):
        micro = np.where(values > 0, values * 1e6, np.nan)
        finite = micro[np.isfinite(micro)]
        worst = f', worst {finite.max():.3g} us' if finite.size else ''
        ax.plot(
            t,
            micro,
            marker='.',
            markersize=3,
            linewidth=1.0,
            color=color,
            label=f'{label} per window{worst}',
        )
    ax.set_yscale('log')
    ax.yaxis.set_major_formatter(PLAIN)
    ax.yaxis.set_minor_formatter(LogFormatter(minor_thresholds=(1.5, 0.5)))  # short ranges
    overruns = np.nanmax(ticks.overruns) if np.isfinite(ticks.overruns).any() else 0
    missed = np.nanmax(ticks.missed_ticks) if np.isfinite(ticks.missed_ticks).any() else 0
    ax.set_title(
        f'window statistics over time (ticks.csv): {int(overruns)} overruns, '
        f'{int(missed)} missed ticks',
        fontsize=10,
    )
    ax.set_xlabel('time since run start [s]')
    ax.set_ylabel('lateness [us] (log)')
    ax.legend(fontsize=8)


def timing_report(run: RunLog, window_s: float = DEFAULT_WINDOW_S) -> TimingReport:
    """Hit timing of a run with hits and impacts."""
    hits, impacts = run.hits, run.impacts
    return hit_timing(
        hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s, window_s
    )


def hit_timing_figure(report: TimingReport, path: Path) -> Path:
    """Strip and box plot of the timing error per instrument."""
    timings = report.instruments
    figure = _new_figure(max(6.0, 1.7 * len(timings) + 1.5), 5.5)
    ax = figure.subplots()
    rng = np.random.default_rng(0)
    labels = []
    for position, timing in enumerate(timings, start=1):
        errors = timing.errors_s * 1e3
        s = timing.stats
        text = f'{timing.instrument}\n{timing.matched}/{timing.commanded} matched'
        if timing.matched:
            ax.boxplot(
                [errors],
                positions=[position],
                widths=0.5,
                showfliers=False,
                medianprops={'color': 'black'},
            )
            ax.scatter(
                position + rng.uniform(-0.18, 0.18, errors.size),
                errors,
                s=9,
                alpha=0.6,
                color='#1f77b4',
                zorder=3,
            )
            text += (
                f'\nmean {s.mean_error_s * 1e3:+.2f} ms'
                f'\np99 |e| {s.p99_abs_error_s * 1e3:.2f} ms'
                f'\nmax |e| {s.max_abs_error_s * 1e3:.2f} ms'
            )
        if timing.extra:
            text += f'\n{timing.extra} extra'
        labels.append(text)
    ax.set_xticks(range(1, len(timings) + 1), labels, fontsize=8)
    ax.set_xlim(0.4, len(timings) + 0.6)
    ax.axhline(0.0, color='black', linewidth=0.6)
    ax.grid(True, axis='y', alpha=0.3)
    ax.set_ylabel('detected impact - commanded hit [ms]')
    total = report.total
    s = total.stats
    summary = f'all: {total.matched}/{total.commanded} matched, {total.extra} extra' + (
        f', mean {s.mean_error_s * 1e3:+.2f} ms, p99 |e| {s.p99_abs_error_s * 1e3:.2f}'
        f' ms, max |e| {s.max_abs_error_s * 1e3:.2f} ms'
        if total.matched
        else ''
    )
    ax.set_title(
        f'Hit timing per instrument (impacts.jsonl vs hits.csv, window '
        f'+/-{report.window_s * 1e3:g} ms)\n{summary}',
        fontsize=10,
    )
    return _save(figure, path)


def render_run(run: RunLog, out: Path, window_s: float = DEFAULT_WINDOW_S) -> list[Output]:
    """Write every figure and summary the run's logs allow into ``out``.

    Returns:
        One :class:`Output` per file, written or skipped with the reason.
    """
    out = Path(out)
    outputs: list[Output] = []

    def attempt(name: str, missing: list[str], draw: Callable[[Path], Path]) -> None:
        if missing:
            outputs.append(Output(name, reason='; '.join(missing)))
        else:
            outputs.append(Output(name, draw(out / name)))

    def need(*names: str, any_of: bool = False) -> list[str]:
        reasons = [run.why_missing(name) for name in names if run.get(name) is None]
        if any_of and len(reasons) < len(names):
            return []
        return reasons

    attempt(
        'joints.png',
        need('motors', 'trajectory', any_of=True),
        lambda path: joints_figure(run, path),
    )
    attempt('tracking_error.png', need('motors'), lambda path: tracking_error_figure(run, path))
    attempt(
        'jitter.png',
        need('ticks_trace', 'ticks', any_of=True),
        lambda path: jitter_figure(run, path),
    )
    missing = need('hits', 'impacts')
    report = None if missing else timing_report(run, window_s)
    attempt('hit_timing.png', missing, lambda path: hit_timing_figure(report, path))
    attempt('timing.txt', missing, lambda path: _write_text(path, format_timing(report)))
    attempt(
        'timing.json',
        missing,
        lambda path: _write_text(path, json.dumps(report.as_dict(), indent=2) + '\n'),
    )
    return outputs


def _write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
    return path
