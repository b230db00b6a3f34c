"""`phil plot` and the run-log loader on bad inputs: a malformed or cut-off line, missing files,
a log on the wall clock; the command's timing table and its module entry point without a
display. The synthetic run folder is test_plots'."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_plots import HITS, T0, corrupt_line, png_size, write_run

from phil_bringup.cli.main import main as phil_main
from phil_bringup.plots import cli as plots_cli
from phil_bringup.plots.runlog import RunLogError, load_run, write_ticks_trace
from phil_control.conversions import TimeBase
from phil_control.core.play.chunk import ScheduledHit
from phil_control.core.play.common import CommandedHit
from phil_control.core.score.instruments import Hand
from phil_control.score_player.hit_log import HitLog
from phil_hardware.hardware.csv_logs import TickCsvLog


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp('run'))


def test_a_malformed_line_is_named_by_file_and_line(run_dir, tmp_path):
    run = Path(shutil.copytree(run_dir, tmp_path / 'run'))
    corrupt_line(run / 'motors.csv', 7, f'{T0:.4f},5,2,abc,0.1,0.1,0.0,0.0')
    with pytest.raises(RunLogError, match=r"motors\.csv:7: column desired: 'abc' is not a"):
        load_run(run)
    corrupt_line(run / 'motors.csv', 7, f'{T0:.4f},5,2')
    with pytest.raises(RunLogError, match=r'motors\.csv:7: expected 8 fields'):
        load_run(run)
    corrupt_line(run / 'impacts.jsonl', 3, '{"instrument": "snare", "time_s": "soon"}')
    (run / 'motors.csv').unlink()
    with pytest.raises(RunLogError, match=r'impacts\.jsonl:3: "time_s" must be a finite'):
        load_run(run)


def test_a_cut_off_last_line_is_dropped_with_a_warning(run_dir, tmp_path):
    run = Path(shutil.copytree(run_dir, tmp_path / 'run'))
    with (run / 'hits.csv').open('a') as file:
        file.write('1002.000000,rock,2,sna')
    with (run / 'impacts.jsonl').open('a') as file:
        file.write('{"instrument": "sn')
    loaded = load_run(run)
    assert len(loaded.hits) == len(HITS) and len(loaded.impacts) == 11
    assert len(loaded.warnings) == 2 and 'hits.csv:11: last line cut off' in loaded.warnings[0]


def test_plot_command_reports_malformed_files_and_draws_the_rest(run_dir, tmp_path, capsys):
    run = Path(shutil.copytree(run_dir, tmp_path / 'run'))
    corrupt_line(run / 'motors.csv', 12, 'garbage')
    for name in ('ticks_trace.csv', 'ticks.csv', 'impacts.jsonl'):
        (run / name).unlink()
    status = phil_main(['plot', str(run), '--out', str(tmp_path / 'out')])
    captured = capsys.readouterr()
    assert status == 1
    assert f'{run / "motors.csv"}:12: expected 8 fields' in captured.err
    lines = captured.out.splitlines()
    # joints.png falls back to trajectory.csv; the rest says why it is missing.
    assert f'wrote   {tmp_path / "out" / "joints.png"}' in lines
    assert any(
        line.startswith('skipped tracking_error.png: ') and 'motors.csv:12' in line
        for line in lines
    )
    assert 'skipped jitter.png: no ticks_trace.csv; no ticks.csv' in lines
    assert 'skipped hit_timing.png: no impacts.jsonl' in lines
    assert 'skipped timing.json: no impacts.jsonl' in lines
    png_size(tmp_path / 'out' / 'joints.png')


def test_missing_inputs_are_skipped_with_a_reason(tmp_path, capsys):
    run = tmp_path / 'run'
    run.mkdir()
    assert plots_cli.main([str(run)]) == 1  # nothing to draw
    out = capsys.readouterr().out.splitlines()
    assert 'skipped joints.png: no motors.csv; no trajectory.csv' in out
    assert 'skipped hit_timing.png: no hits.csv; no impacts.jsonl' in out
    assert not (run / 'plots').exists() or not any((run / 'plots').iterdir())
    TickCsvLog(run / 'ticks.csv').close()  # header only
    (run / 'hits.csv').write_text('')  # empty
    write_ticks_trace(run / 'ticks_trace.csv', [10e-6, 12e-6, 0.0, 40e-6])
    assert plots_cli.main([str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f'wrote   {run / "plots" / "jitter.png"}' in out
    assert 'skipped hit_timing.png: hits.csv has no rows; no impacts.jsonl' in out
    png_size(run / 'plots' / 'jitter.png')
    assert plots_cli.main([str(tmp_path / 'absent')]) == 2
    assert 'does not exist' in capsys.readouterr().err


def test_plot_prints_the_timing_table(run_dir, tmp_path, capsys):
    run = tmp_path / 'run'
    run.mkdir()
    for name in ('hits.csv', 'impacts.jsonl'):
        shutil.copy(run_dir / name, run / name)
    assert plots_cli.main([str(run), '--out', str(tmp_path / 'o'), '--window-ms', '100']) == 0
    out = capsys.readouterr().out
    assert 'matched within 100 ms' in out
    data = json.loads((tmp_path / 'o' / 'timing.json').read_text())
    assert data['instruments']['closed hihat']['matched'] == 2  # 80 ms is inside 100 ms


def test_a_log_on_the_wall_clock_is_flagged(run_dir, tmp_path):
    run = tmp_path / 'run'
    run.mkdir()
    shutil.copy(run_dir / 'motors.csv', run / 'motors.csv')
    hits = HitLog(run)
    hits.write(
        0,
        [ScheduledHit(CommandedHit(1, Hand.RIGHT, 5, 0.0, 1, 0), 'rock', 0.5)],
        TimeBase(1_700_000_000 * 10**9),
    )  # a score player stamping ROS (system) time
    hits.close()
    warnings = load_run(run).warnings
    assert len(warnings) == 1 and warnings[0].startswith('hits.csv: times look like wall-clock')


def test_module_entry_point_runs_without_a_display(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != 'DISPLAY'}
    env['MPLBACKEND'] = 'TkAgg'  # a GUI backend asked for: the command must still use Agg
    write_ticks_trace(tmp_path / 'ticks_trace.csv', [10e-6, 20e-6, 30e-6])
    result = subprocess.run(
        [sys.executable, '-m', 'phil_bringup.plots', str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert f'wrote   {tmp_path / "plots" / "jitter.png"}' in result.stdout.splitlines()
    png_size(tmp_path / 'plots' / 'jitter.png')
