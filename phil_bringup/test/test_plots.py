"""Run logs and `phil plot`: the writers the nodes use, loading a run folder, the pure timing
statistics, the figures, and the command's reporting of skipped and malformed inputs."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from phil_bringup.cli.main import main as phil_main
from phil_bringup.plots import cli as plots_cli
from phil_bringup.plots.figures import render_run
from phil_bringup.plots.joint_figures import joint_groups
from phil_bringup.plots.runlog import RunLogError, load_run, write_ticks_trace
from phil_bringup.plots.stats import (
    format_timing,
    hit_timing,
    lateness_summary,
    match_nearest,
    tracking_stats,
)
from phil_control.conversions import TimeBase, chunk_to_msg
from phil_control.core.motion import Chunk
from phil_control.core.play.chunk import ScheduledHit
from phil_control.core.play.common import CommandedHit
from phil_control.core.score.instruments import Hand
from phil_control.score_player.hit_log import HitLog
from phil_control.tcp.command_log import CommandCsvLog
from phil_control.tcp.handler import CommandLogEntry
from phil_control.trajectory_generator.trajectory_log import (
    LoggingPublisher,
    TrajectoryCsvLog,
    logging_publisher,
)
from phil_description.core import default_robot_model
from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog
from phil_hardware.sim.impacts import Impact, Limb

NAMES = default_robot_model().joint_names
T0 = 1000.0  # robot-clock start of the synthetic run, s
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
FIGURES = ('joints.png', 'tracking_error.png', 'jitter.png', 'hit_timing.png')
INSTRUMENT_IDS = {'bass': 0, 'snare': 1, 'closed hihat': 5, 'ride': 6}
# Commanded hits (instrument, hand, time after T0) and the detected impacts' offsets, s.
HITS = [
    ('snare', Hand.RIGHT, 0.50, 0.002),
    ('snare', Hand.RIGHT, 0.75, 0.004),
    ('snare', Hand.RIGHT, 1.00, 0.006),
    ('snare', Hand.RIGHT, 1.25, 0.008),
    ('bass', Hand.KICK, 0.50, -0.001),
    ('bass', Hand.KICK, 1.00, -0.003),
    ('bass', Hand.KICK, 1.50, 0.002),
    ('closed hihat', Hand.LEFT, 0.60, 0.010),
    ('closed hihat', Hand.LEFT, 1.10, 0.080),  # outside the 50 ms window: missed + extra
]
EXTRA_IMPACTS = [
    ('ride', Limb.RIGHT_HAND, 0.90),  # no commanded ride hit: extra
    ('snare', Limb.RIGHT_HAND, 50.0),
]  # far outside the hits' span: ignored
LIMBS = {Hand.RIGHT: Limb.RIGHT_HAND, Hand.LEFT: Limb.LEFT_HAND, Hand.KICK: Limb.RIGHT_FOOT}


# ------------------------------------------------------------------------ synthetic run folder
def motor_snapshot(time_s: float) -> SimpleNamespace:
    phase = np.arange(len(NAMES)) * 0.4
    desired = 0.3 * np.sin(2 * math.pi * 0.5 * (time_s - T0) + phase)
    actual = 0.3 * np.sin(2 * math.pi * 0.5 * (time_s - T0 - 0.01) + phase)  # 10 ms lag
    return SimpleNamespace(
        time_s=time_s,
        joint_names=NAMES,
        targets_rad=tuple(desired),
        positions_rad=tuple(actual),
        torques_mnm=(math.nan,) * 7 + (12.5,) * 4 + (math.nan,) * 2,
        currents_a=(0.8,) * len(NAMES),
        modes=(2,) * 7 + (1,) * 6,
        target_velocities_rad_s=(0.0,) * len(NAMES),
    )


def tick_snapshot(time_s: float, k: int) -> SimpleNamespace:
    return SimpleNamespace(
        time_s=time_s,
        tick_p50_s=20e-6 + 1e-6 * (k % 3),
        tick_p99_s=80e-6,
        tick_max_s=150e-6 + 1e-5 * (k % 5),
        overruns=k // 300,
        missed_ticks=k // 300,
    )


def write_run(folder: Path) -> Path:
    """A small but realistic run folder, written with the nodes' own writers."""
    motors = MotorCsvLog(folder / 'motors.csv')
    ticks = TickCsvLog(folder / 'ticks.csv')
    for k in range(400):  # 2 s at 200 Hz
        motors.write(motor_snapshot(T0 + k * 0.005), 0.0)
        ticks.write(tick_snapshot(T0 + k * 0.005, k))
    motors.close()
    ticks.close()

    rng = np.random.default_rng(1)
    write_ticks_trace(folder / 'ticks_trace.csv', rng.lognormal(math.log(20e-6), 0.5, 4000))

    timebase = TimeBase(round(T0 * 1e9))
    trajectory = TrajectoryCsvLog(folder / 'trajectory.csv', NAMES)
    for start in (0.0, 0.5, 1.0, 1.5):
        times = np.arange(0.0, 0.5, 0.02)
        positions = 0.3 * np.sin(
            2 * math.pi * 0.5 * (start + times)[:, None] + np.arange(len(NAMES)) * 0.4
        )
        trajectory.write_msg(chunk_to_msg(Chunk(NAMES, start, times, positions, None), timebase))
    trajectory.close()

    hits = HitLog(folder)
    scheduled = [
        ScheduledHit(CommandedHit(INSTRUMENT_IDS[name], hand, 5, at, 1 + int(at), i), 'rock', at)
        for i, (name, hand, at, _) in enumerate(HITS)
    ]
    hits.write(round((T0 + 2.0) * 1e9), scheduled, timebase)
    hits.close()

    impacts = [
        Impact(
            name,
            INSTRUMENT_IDS[name],
            LIMBS[hand],
            T0 + at + offset,
            2.0,
            (0.1, 0.4, -0.2) if hand is not Hand.KICK else None,
        )
        for name, hand, at, offset in HITS
    ]
    impacts += [
        Impact(name, INSTRUMENT_IDS[name], limb, T0 + at, 1.5, (0.3, 0.5, 0.0))
        for name, limb, at in EXTRA_IMPACTS
    ]
    with (folder / 'impacts.jsonl').open('w', encoding='utf-8') as file:
        for impact in impacts:  # the device simulator's record
            file.write(json.dumps({**impact.as_dict(), 'wall_time_s': 1.7e9}) + '\n')

    commands = CommandCsvLog(folder / 'commands.csv')
    commands(CommandLogEntry(1.7e9, 1, 'START', 'START', True, ''))
    commands(CommandLogEntry(1.7e9 + 1, 1, 'PLAY|rock', 'PLAY', True, 'playing, bar 1'))
    commands.close()
    return folder


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp('run'))


@pytest.fixture(scope='module')
def rendered(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp('plots')
    return out, render_run(load_run(run_dir), out)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f'{path} is not a PNG'
    return struct.unpack('>II', data[16:24])


def corrupt_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = text + '\n'
    path.write_text(''.join(lines))


# ------------------------------------------------------------------------------------ writers
def test_writers_produce_the_upstream_like_headers_and_rows(run_dir):
    motors = (run_dir / 'motors.csv').read_text().splitlines()
    assert motors[0] == 't,id,mode,desired,actual,err,current_or_torque,desired_velocity'
    assert len(motors) == 1 + 400 * len(NAMES)
    ticks = (run_dir / 'ticks.csv').read_text().splitlines()
    assert ticks[0] == 't,tick_p50_s,tick_p99_s,tick_max_s,overruns,missed_ticks'
    assert len(ticks) == 1 + 2  # about once a second over 2 s
    trajectory = (run_dir / 'trajectory.csv').read_text().splitlines()
    assert trajectory[0] == 't,' + ','.join(f'joint {i}' for i in range(13))
    assert len(trajectory) == 1 + 4 * 25
    assert float(trajectory[1].split(',')[0]) == pytest.approx(T0)
    assert float(trajectory[27].split(',')[0]) == pytest.approx(T0 + 0.52)


def test_trajectory_log_maps_stamps_to_the_monotonic_clock_and_blanks_absent_joints(tmp_path):
    sent = []
    publisher = logging_publisher(
        SimpleNamespace(publish=sent.append, topic='x'),
        str(tmp_path),
        NAMES,
        stamp_clock_ns=lambda: 5 * 10**9 + time.monotonic_ns(),
    )
    assert isinstance(publisher, LoggingPublisher) and publisher.topic == 'x'
    subset = ('head_yaw', 'waist')
    msg = chunk_to_msg(
        Chunk(subset, 7.0, np.array([0.0, 0.1]), np.array([[0.1, 0.2], [0.3, 0.4]]), None),
        TimeBase(0),
    )
    publisher.publish(msg)
    assert sent == [msg]
    run = load_run(tmp_path)
    assert run.trajectory.t == pytest.approx([2.0, 2.1], abs=1e-3)  # 7 s ROS - 5 s offset
    row = run.trajectory.positions[1]
    assert row[NAMES.index('head_yaw')] == pytest.approx(0.3)
    assert row[NAMES.index('waist')] == pytest.approx(0.4)
    assert np.isnan(row[NAMES.index('right_elbow')])
    assert logging_publisher(publisher, '', NAMES) is publisher  # '' = logging off
    with pytest.raises(ValueError, match='unknown joints'):
        TrajectoryCsvLog(tmp_path / 'other.csv', NAMES).write_points([0.0], [[1.0]], ['nose'])


def test_trajectory_generator_logs_published_chunks(tmp_path):
    pytest.importorskip('rclpy')
    from rclpy.parameter import Parameter

    from phil_control.trajectory_generator.node import TrajectoryGenerator
    from phil_msgs.srv import Trigger
    from phil_ros.testing import ros_test_context

    with ros_test_context(domains=(101, 200)) as context:
        node = TrajectoryGenerator(
            context=context, parameter_overrides=[Parameter('log_dir', value=str(tmp_path))]
        )
        now = time.monotonic()
        assert node._on_halt(None, Trigger.Response()).accepted  # publishes one chunk
        node.destroy_node()
    trajectory = load_run(tmp_path).trajectory
    assert len(trajectory) >= 1
    # Robot (monotonic) clock although the node stamps on the ROS clock; lead 0.1 s.
    assert trajectory.t[0] == pytest.approx(now + 0.1, abs=0.05)
    assert np.isfinite(trajectory.positions[0]).all()


# ------------------------------------------------------------------------- pure statistics
def test_matching_takes_the_nearest_unused_impact_within_the_window():
    pairs = match_nearest([1.0, 1.1, 2.0, 3.0], [2.03, 1.02, 1.09, 3.2, 1.0999])
    assert pairs == [(0, 1), (1, 4), (2, 0)]  # 3.0 missed (0.2 s away); 1.09 left over
    assert match_nearest([0.0], [0.05]) == [(0, 0)]  # the window is inclusive
    assert match_nearest([0.0], [-0.02, 0.02]) == [(0, 0)]  # tie: the earlier one
    assert match_nearest([], [1.0]) == [] and match_nearest([1.0], []) == []
    with pytest.raises(ValueError):
        match_nearest([math.nan], [1.0])


def test_timing_statistics_equal_hand_computed_values():
    report = hit_timing(
        [h[0] for h in HITS],
        [T0 + h[2] for h in HITS],
        [h[0] for h in HITS] + [e[0] for e in EXTRA_IMPACTS],
        [T0 + h[2] + h[3] for h in HITS] + [T0 + e[2] for e in EXTRA_IMPACTS],
    )
    by_name = {timing.instrument: timing for timing in report.instruments}
    assert list(by_name) == ['bass', 'snare', 'closed hihat', 'ride']  # HIT-table order
    snare, bass, hihat, ride = (by_name[n] for n in ('snare', 'bass', 'closed hihat', 'ride'))
    assert (snare.commanded, snare.detected, snare.matched, snare.missed, snare.extra) == (
        4,
        4,
        4,
        0,
        0,
    )
    assert snare.stats.mean_error_s == pytest.approx(0.005)
    assert snare.stats.p99_abs_error_s == pytest.approx(0.00794)  # 6 + 0.97 * (8 - 6) ms
    assert snare.stats.max_abs_error_s == pytest.approx(0.008)
    assert snare.stats.drift_s == pytest.approx(0.006)  # 8 ms/s slope over 0.75 s
    assert bass.stats.mean_error_s == pytest.approx(-0.002 / 3)
    assert bass.stats.p99_abs_error_s == pytest.approx(0.00298)  # 2 + 0.98 * (3 - 2) ms
    assert bass.stats.max_abs_error_s == pytest.approx(0.003)
    assert (hihat.matched, hihat.missed, hihat.extra) == (1, 1, 1)
    assert hihat.errors_s == pytest.approx([0.010])
    assert (ride.commanded, ride.detected, ride.extra) == (0, 1, 1)
    assert math.isnan(ride.stats.mean_error_s)
    total = report.total
    assert (total.commanded, total.detected, total.matched, total.missed, total.extra) == (
        9,
        10,
        8,
        1,
        2,
    )  # the snare impact 49 s after the last hit is not counted
    assert total.stats.mean_error_s == pytest.approx(0.0035)
    assert total.stats.max_abs_error_s == pytest.approx(0.010)
    data = report.as_dict()
    assert data['instruments']['ride']['mean_error_s'] is None
    json.dumps(data, allow_nan=False)
    text = format_timing(report)
    assert 'snare' in text and '+5.00' in text and '7.94' in text
    in_ms = report.in_ms()  # the benchmarks' JSON lines
    assert in_ms['instruments']['snare']['p99_abs_error_ms'] == 7.94
    assert in_ms['instruments']['ride']['mean_error_ms'] is None
    assert in_ms['all']['detected_share'] == round(8 / 9, 3) and 'mean_error_s' not in in_ms['all']


def test_tracking_and_lateness_statistics():
    rms, largest = tracking_stats([1.0, 2.0, math.nan, 4.0], [1.0, 1.0, 0.0, 2.0])
    assert rms == pytest.approx(math.sqrt(5 / 3)) and largest == pytest.approx(2.0)
    assert all(math.isnan(v) for v in tracking_stats([math.nan], [0.0]))
    summary = lateness_summary(np.arange(1, 101) * 1e-6)
    assert summary['count'] == 100 and summary['max_s'] == pytest.approx(100e-6)
    assert summary['p50_s'] == pytest.approx(50.5e-6)
    assert summary['p99_s'] == pytest.approx(99.01e-6)


def test_joint_groups_cover_every_joint_once():
    groups = joint_groups(NAMES)
    assert [title for title, _, _ in groups] == [
        'Right arm',
        'Left arm',
        'Waist and head',
        'Pedals',
    ]
    assert sorted(i for _, indices, _ in groups for i in indices) == list(range(13))
    assert joint_groups(('a', 'b'))[0][0] == 'Other'


# ------------------------------------------------------------------------------------ figures
def test_every_figure_is_a_sensible_png(rendered):
    out, outputs = rendered
    assert [o.name for o in outputs if not o.written] == []
    for name in FIGURES:
        path = out / name
        width, height = png_size(path)
        assert 600 <= width <= 2600 and 400 <= height <= 1600, (name, width, height)
        assert path.stat().st_size > 20_000, name


def test_timing_files_hold_the_statistics(rendered):
    out, _ = rendered
    data = json.loads((out / 'timing.json').read_text())
    assert data['window_s'] == 0.05
    snare = data['instruments']['snare']
    assert snare['matched'] == 4
    assert snare['mean_error_s'] == pytest.approx(0.005, abs=1e-9)
    assert snare['p99_abs_error_s'] == pytest.approx(0.00794, abs=1e-9)
    assert snare['max_abs_error_s'] == pytest.approx(0.008, abs=1e-9)
    assert data['all']['missed'] == 1 and data['all']['extra'] == 2
    text = (out / 'timing.txt').read_text()
    assert text.splitlines()[0].startswith('hit timing') and 'closed hihat' in text


def test_run_log_loads_every_file(run_dir):
    run = load_run(run_dir)
    assert run.motors.joint_ids == list(range(13))
    t, desired, actual = run.motors.joint(4)
    assert len(t) == 400 and t[0] == pytest.approx(T0)
    assert run.ticks.p99_s == pytest.approx([80e-6] * 2)
    assert len(run.ticks_trace) == 4000
    assert run.hits.instrument[0] == 'snare' and run.hits.hand[4] == 'kick'
    assert run.hits.command_time_s[0] == pytest.approx(T0 + 0.5)
    assert run.impacts.limb[0] == 'right_hand' and len(run.impacts) == 11
    assert run.commands.opcode == ('START', 'PLAY')
    assert run.start_s == pytest.approx(T0)
    assert run.errors == {} and run.warnings == []


def test_joint_names_come_from_the_robot_model(run_dir):
    run = load_run(run_dir)
    assert run.joint_names == tuple(default_robot_model().joint_names)
    assert len(run.joint_names) == len(run.motors.joint_ids) == run.trajectory.positions.shape[1]
    named = load_run(run_dir, joint_names=[f'j{i}' for i in range(13)])  # given names win
    assert named.joint_names == tuple(f'j{i}' for i in range(13))


@pytest.mark.parametrize('broken', ['model', 'import'])
def test_no_loadable_robot_model_is_an_error_not_a_guess(run_dir, monkeypatch, broken):
    import phil_description.core as core

    if broken == 'model':

        def fail(sim: bool = False):
            raise core.DescriptionError('phil.urdf.xacro', '', 'file not found')

        monkeypatch.setattr(core, 'default_robot_model', fail)
        reason = r'the robot model did not load \(phil\.urdf\.xacro: file not found\)'
    else:
        monkeypatch.setitem(sys.modules, 'phil_description.core', None)
        reason = r'phil_description cannot be imported \(.*phil_description\.core.*\)'
    for strict in (True, False):
        with pytest.raises(
            RunLogError, match=f'no joint names: {reason}; the logs name joints by index only'
        ) as caught:
            load_run(run_dir, strict=strict)
        assert caught.value.path == run_dir and caught.value.line is None
    names = tuple(NAMES)
    assert load_run(run_dir, joint_names=names).joint_names == names  # no model needed


# ------------------------------------------------------------------------ malformed / missing
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
