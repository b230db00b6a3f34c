"""Run logs and `phil plot`: a synthetic run folder written with the writers the nodes use,
those writers, loading a run folder, and the figures. The pure statistics are tested in
test_plots_statistics, bad inputs and the command's reporting in test_plots_command; both use
the run folder and hits defined here."""

from __future__ import annotations

import json
import math
import struct
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from phil_bringup.plots.figures import render_run
from phil_bringup.plots.runlog import RunLogError, load_run, write_ticks_trace
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
