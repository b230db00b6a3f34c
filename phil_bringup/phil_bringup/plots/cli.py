"""``python -m phil_bringup.plots <run> [--out DIR] [--window-ms MS]`` (also ``phil plot``).

Loads the run folder (a ``log_dir`` of the nodes: motors.csv, ticks.csv, trajectory.csv,
hits.csv, impacts.jsonl, ...), writes the figures and the timing summary into ``--out``
(default ``<run>/plots``), prints one line per file written or skipped (with the reason), then
the timing table when there is one.

Exit status: 0 when everything the logs allow was written, 1 when nothing could be drawn or a
log file is malformed (the other figures are still written), 2 for a missing run folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from phil_bringup.plots import DEFAULT_WINDOW_S


def say(text: str, stream=None) -> None:
    """Write one line of the command's output."""
    stream = stream or sys.stdout
    stream.write(text + '\n')
    stream.flush()


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The command's arguments (shared with ``phil plot``)."""
    parser.add_argument('run', type=Path, help='run folder (the log_dir of a run)')
    parser.add_argument(
        '--out',
        type=Path,
        default=None,
        metavar='DIR',
        help='where the figures go (default: RUN/plots)',
    )
    parser.add_argument(
        '--window-ms',
        type=float,
        default=DEFAULT_WINDOW_S * 1e3,
        metavar='MS',
        help='hit/impact matching window (default %(default)g ms)',
    )
    return parser


def plot_run(
    run_dir: Path, out: Path | None = None, window_ms: float = DEFAULT_WINDOW_S * 1e3
) -> int:
    """Render a run folder; prints the report. Returns the exit status."""
    import matplotlib

    matplotlib.use('Agg')  # never a display, whatever MPLBACKEND says
    from phil_bringup.plots.figures import render_run
    from phil_bringup.plots.runlog import RunLogError, load_run

    if window_ms < 0:
        say(f'plot: --window-ms must be >= 0, got {window_ms}', sys.stderr)
        return 2
    try:
        run = load_run(run_dir, strict=False)
    except (FileNotFoundError, RunLogError) as error:  # no logs, or no robot model
        say(f'plot: {error}', sys.stderr)
        return 2
    out = out if out is not None else run_dir / 'plots'
    for warning in run.warnings:
        say(f'warning: {warning}', sys.stderr)
    for error in run.errors.values():
        say(f'error: {error}', sys.stderr)
    outputs = render_run(run, out, window_ms / 1e3)
    for output in outputs:
        if output.written:
            say(f'wrote   {output.path}')
        else:
            say(f'skipped {output.name}: {output.reason}')
    timing = out / 'timing.txt'
    if any(o.written and o.name == 'timing.txt' for o in outputs):
        say('\n' + timing.read_text(encoding='utf-8').rstrip('\n'))
    if run.errors or not any(output.written for output in outputs):
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    parser = add_arguments(
        argparse.ArgumentParser(
            prog='python -m phil_bringup.plots', description=__doc__.split('\n\n')[0]
        )
    )
    args = parser.parse_args(argv)
    return plot_run(args.run, args.out, args.window_ms)
