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

:func:`render_run` writes what the run's logs allow and says why it skipped the rest. The
per-joint figures are drawn in :mod:`phil_bringup.plots.joint_figures`, the jitter figure in
:mod:`phil_bringup.plots.jitter_figure`; the hit timing figure and the summaries here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phil_bringup.plots.canvas import new_figure, save_png
from phil_bringup.plots.jitter_figure import jitter_figure
from phil_bringup.plots.joint_figures import joints_figure, tracking_error_figure
from phil_bringup.plots.runlog import RunLog
from phil_bringup.plots.stats import DEFAULT_WINDOW_S, TimingReport, format_timing, hit_timing


@dataclass(frozen=True)
class Output:
    """One output file: written (``path``) or skipped (``reason``)."""

    name: str
    path: Path | None = None
    reason: str = ''

    @property
    def written(self) -> bool:
        return self.path is not None


def timing_report(run: RunLog, window_s: float = DEFAULT_WINDOW_S) -> TimingReport:
    """Hit timing of a run with hits and impacts."""
    hits, impacts = run.hits, run.impacts
    return hit_timing(
        hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s, window_s
    )


def hit_timing_figure(report: TimingReport, path: Path) -> Path:
    """Strip and box plot of the timing error per instrument."""
    timings = report.instruments
    figure = new_figure(max(6.0, 1.7 * len(timings) + 1.5), 5.5)
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
    return save_png(figure, path)


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
