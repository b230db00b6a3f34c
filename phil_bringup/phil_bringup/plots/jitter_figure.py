"""The bus-loop jitter figure, ``jitter.png``: a per-tick lateness histogram
(``ticks_trace.csv``) and the per-window p50/p99/max over time (``ticks.csv``), in us on log
axes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter, LogFormatter

from phil_bringup.plots.canvas import new_figure, save_png
from phil_bringup.plots.runlog import RunLog
from phil_bringup.plots.stats import lateness_summary

PLAIN = FuncFormatter(lambda value, _: f'{value:g}')  # 20, 100 rather than 2x10^1, 10^2


def jitter_figure(run: RunLog, path: Path) -> Path:
    """Tick lateness: per-tick histogram (``ticks_trace.csv``) and window statistics over
    time (``ticks.csv``)."""
    trace, ticks = run.get('ticks_trace'), run.get('ticks')
    panels = [
        p
        for p in ('histogram' if trace is not None else '', 'series' if ticks is not None else '')
        if p
    ]
    figure = new_figure(7.5 * len(panels), 4.8)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    figure.suptitle('Bus-loop tick lateness (wake-up after the deadline)')
    for ax, panel in zip(axes, panels, strict=True):
        ax.grid(True, which='both', alpha=0.3)
        if panel == 'histogram':
            _lateness_histogram(ax, trace.lateness_s)
        else:
            _lateness_series(ax, ticks, run.start_s)
    return save_png(figure, path)


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
