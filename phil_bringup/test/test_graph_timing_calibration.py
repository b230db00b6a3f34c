"""Timing calibration through the whole graph: the robot plays the calibration score against
the simulators; a microphone recording and an e-drum module's notes are synthesised from the
simulator's detected impacts with a known delay per instrument; ``phil timing-calibrate``
recovers every instrument's latency (impact - command + its delay) within 0.5 ms from either,
and writes the calibration file the score player loads."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import yaml
from scipy.io import wavfile

from phil_bringup.plots import runlog
from phil_bringup.plots.stats import match_nearest
from phil_bringup.testing.graph import RunningGraph, run_phil
from phil_bringup.testing.synthetic_strikes import RATE_HZ, fake_midi_events, synthesize_recording
from phil_control.core.play.timing_calibration import load_timing_calibration

pytest.importorskip('rclpy')

pytestmark = pytest.mark.timeout(400)

DELAYS_S = {'closed hihat': 0.0081, 'snare': 0.0123, 'bass': 0.0215, 'floor': 0.0094,
            'mid': 0.0102, 'top': 0.0137, 'ride': 0.0069, 'right crash': 0.0111,
            'left crash': 0.0128}  # fmt: skip
NOTES = {'closed hihat': 42, 'snare': 38, 'bass': 36, 'floor': 43, 'mid': 47, 'top': 48,
         'ride': 51, 'right crash': 55, 'left crash': 49}  # fmt: skip


def _calibrate(run, *args) -> subprocess.CompletedProcess:
    return run_phil('timing-calibrate', run, *args)


def test_the_calibration_run_gives_back_every_instruments_delay(tmp_path):
    with RunningGraph(tmp_path) as robot:
        robot.start_robot()
        robot.wait_state('IDLE', 30.0)
        assert robot.line('PLAY|calibration') == 'OK|PLAY'
        robot.wait_state('PLAYING', 10.0)
        robot.wait_state('IDLE', 120.0)
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
    run = robot.log_dir
    hits = runlog.load_hits(run / 'hits.csv')
    impacts = runlog.load_impacts(run / 'impacts.jsonl')
    # The strokes that landed on their pad (the simulated stick may graze another on its way
    # or miss): their impacts are the sounds, each instrument's mean error plus its delay is
    # what the tool must find.
    times, names, expected = [], [], {}
    for name, delay_s in DELAYS_S.items():
        strokes = hits.command_time_s[np.array(hits.instrument) == name]
        landed = impacts.time_s[np.array(impacts.instrument) == name]
        pairs = match_nearest(strokes, landed, 0.15)
        if pairs:
            times += [landed[j] for _, j in pairs]
            names += [name] * len(pairs)
            expected[name] = float(np.mean([landed[j] - strokes[i] for i, j in pairs])) + delay_s
    assert len(expected) >= 7, expected
    times, names = np.array(times), tuple(names)

    start_s = float(times.min()) - 2.0
    wav = tmp_path / 'recording.wav'
    wavfile.write(wav, RATE_HZ, synthesize_recording(times, names, DELAYS_S, start_time_s=start_s))
    (tmp_path / 'recording.wav.json').write_text(json.dumps({'start_time_s': start_s}))
    events = fake_midi_events(times, names, DELAYS_S, NOTES)
    midi = tmp_path / 'midi_events.jsonl'
    midi.write_text(''.join(json.dumps(event) + '\n' for event in events))
    for source in (('--wav', str(wav)), ('--midi-events', str(midi))):
        out = tmp_path / f'calibration{source[0]}.yaml'
        done = _calibrate(run, *source, '--out', str(out))  # the run's leads: from its log
        assert done.returncode == 0, done.stdout + done.stderr
        measured = yaml.safe_load(out.read_text())['measured']
        for name, latency_s in expected.items():
            assert abs(measured[name]['latency_s'] - latency_s) < 0.0005, (source, name)
        calibration = load_timing_calibration(out)
        arms = np.mean([measured[n]['latency_s'] for n in expected if n != 'bass'])
        assert calibration.motion_lead_s > 0.002 and abs(calibration.pedal_lead_s) < 0.05
        assert arms > 0
        # Every sound was heard, and only those (a stroke that did not land made none).
        heard = {name: calibration.measured[name]['strokes'] for name in expected}
        assert heard == {name: names.count(name) for name in expected}, (source, heard)
