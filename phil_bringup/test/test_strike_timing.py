"""Timing calibration from synthetic measurements with known delays: onsets found in a noisy
recording, MIDI notes mapped to pads, per-instrument latencies recovered within 0.5 ms, the
leads that cancel them, the calibration file the score player loads, and ``phil
timing-calibrate`` on a run folder (exit codes and messages on a wrong recording)."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
import yaml
from scipy.io import wavfile

from phil_bringup.core.strike_timing import (
    assign_to_strokes,
    calibrate,
    detect_onsets,
    midi_strikes,
)
from phil_bringup.testing.graph import run_phil
from phil_bringup.testing.synthetic_strikes import (
    RATE_HZ,
    fake_midi_events,
    synthesize_recording,
)
from phil_control.core.play.timing_calibration import (
    CalibrationError,
    load_timing_calibration,
)
from phil_control.score_player.config import PARAMETERS, Config
from phil_control.score_player.hit_log import HIT_LOG_COLUMNS

# A calibration run: each instrument alone, 4 strokes 0.6 s apart, 1.2 s between instruments.
ORDER = ('closed hihat', 'snare', 'bass', 'floor', 'mid', 'top', 'ride', 'right crash')
DELAYS_S = {
    'closed hihat': 0.0081,
    'snare': 0.0123,
    'bass': 0.0215,
    'floor': 0.0094,
    'mid': 0.0102,
    'top': 0.0137,
    'ride': 0.0069,
    'right crash': 0.0111,
}
NOTES = {'closed hihat': 42, 'snare': 38, 'bass': 36, 'floor': 43, 'mid': 47, 'top': 48,
         'ride': 51, 'right crash': 55}  # fmt: skip
START_S = 5000.0  # the robot clock (CLOCK_MONOTONIC) at the run's start


def _calibration_run(seed: int = 1):
    """Commanded stroke times and instruments, and when the sticks landed (the simulator's
    impacts: within a few ms of the command)."""
    rng = np.random.default_rng(seed)
    times, instruments, at = [], [], START_S + 2.4
    for name in ORDER:
        for _ in range(4):
            times.append(at)
            instruments.append(name)
            at += 0.6
        at += 0.6
    strokes = np.array(times)
    landed = strokes + rng.uniform(-0.002, 0.002, len(strokes))
    return strokes, tuple(instruments), landed


def _expected_latency(strokes, instruments, landed) -> dict[str, float]:
    names = np.array(instruments)
    return {
        name: float(np.mean(landed[names == name] - strokes[names == name])) + DELAYS_S[name]
        for name in ORDER
    }


def test_onsets_in_a_noisy_recording_are_found_within_a_fifth_of_a_millisecond():
    strokes, instruments, landed = _calibration_run()
    samples = synthesize_recording(landed, instruments, DELAYS_S, start_time_s=START_S)
    onsets = detect_onsets(samples, RATE_HZ, START_S)
    truth = landed + np.array([DELAYS_S[name] for name in instruments])
    assert len(onsets) == len(truth)
    # Late by the attack's first samples (a 0.1 ms rise to the peak), never early.
    assert (onsets - truth).min() > -2e-5 and (onsets - truth).max() < 2e-4


@pytest.mark.parametrize('source', ['wav', 'midi'])
def test_each_instruments_delay_is_recovered_within_half_a_millisecond(source):
    strokes, instruments, landed = _calibration_run()
    if source == 'wav':
        samples = synthesize_recording(landed, instruments, DELAYS_S, start_time_s=START_S)
        onsets = detect_onsets(samples, RATE_HZ, START_S)
        times, sounded = assign_to_strokes(onsets, strokes, instruments)
    else:
        events = fake_midi_events(landed, instruments, DELAYS_S, NOTES)
        times, sounded, unknown = midi_strikes(
            ((e['time_s'], e['note'], e['velocity']) for e in events),
            {v: k for k, v in NOTES.items()},
        )
        assert unknown == []
    report, calibration = calibrate(instruments, strokes, sounded, times, 0.002, 0.0, source)
    expected = _expected_latency(strokes, instruments, landed)
    for timing in report.instruments:
        assert timing.matched == 4 and timing.missed == timing.extra == 0
        assert abs(timing.stats.mean_error_s - expected[timing.instrument]) < 0.0005
    arms = np.mean([expected[n] for n in ORDER if n != 'bass'])
    assert calibration.motion_lead_s == pytest.approx(0.002 + arms, abs=0.0005)
    assert calibration.pedal_lead_s == pytest.approx(expected['bass'] - arms, abs=0.0005)
    assert calibration.measured['snare']['strokes'] == 4


def test_sounds_that_are_no_stroke_are_left_out_of_a_recording():
    """A stick grazing a cymbal 40 ms before a stroke, a door between two: the strokes keep
    their own sounds."""
    strokes, instruments, landed = _calibration_run()
    sounds = landed + np.array([DELAYS_S[name] for name in instruments])
    stray = np.array([strokes[5] - 0.040, strokes[20] + 0.3, strokes[30] - 0.025])
    times, assigned = assign_to_strokes(np.concatenate([sounds, stray]), strokes, instruments)
    assert assigned == instruments
    np.testing.assert_array_equal(times, np.sort(sounds))


def test_a_recording_of_another_run_gives_no_calibration():
    strokes, instruments, landed = _calibration_run()
    with pytest.raises(CalibrationError, match='no sound matched a commanded arm stroke'):
        calibrate(instruments, strokes, instruments, landed + 10.0, 0.0, 0.0, 'wav other.wav')


def test_the_score_player_takes_its_leads_from_the_calibration_file(tmp_path):
    strokes, instruments, landed = _calibration_run()
    _, calibration = calibrate(instruments, strokes, instruments, landed + 0.01, 0.0, 0.0, 'x')
    path = tmp_path / 'timing_calibration.yaml'
    path.write_text(calibration.as_yaml())
    loaded = load_timing_calibration(path)
    assert loaded.motion_lead_s == pytest.approx(calibration.motion_lead_s, abs=1e-6)
    values = {name: default for name, (default, _) in PARAMETERS.items()}
    config = Config.from_values({**values, 'timing_calibration': str(path)})
    assert config.motion_lead_s == loaded.motion_lead_s and config.timing_calibration == loaded
    path.write_text('motion_lead_s: 0.2\npedal_lead_s: 0.0\n')
    with pytest.raises(ValueError, match=r'timing_calibration: .*motion_lead_s must be in'):
        Config.from_values({**values, 'timing_calibration': str(path)})


def _run_folder(tmp_path, strokes, instruments):
    run = tmp_path / 'run'
    run.mkdir()
    rows = [','.join(HIT_LOG_COLUMNS)] + [
        f'{t:.6f},calibration,1,{name},right,5,0.0,{t:.6f}'
        for t, name in zip(strokes, instruments, strict=True)
    ]
    (run / 'hits.csv').write_text('\n'.join(rows) + '\n')
    return run


def test_the_runs_leads_come_from_its_score_player_log_and_bad_input_is_named(tmp_path):
    strokes, instruments, landed = _calibration_run()
    run = _run_folder(tmp_path, strokes, instruments)
    events = fake_midi_events(landed, instruments, DELAYS_S, NOTES)
    midi = run / 'midi_events.jsonl'
    midi.write_text(''.join(json.dumps(event) + '\n' for event in events))
    done = _calibrate_command(run, '--midi-events', midi)
    assert done.returncode == 2 and 'pass --run-motion-lead-s' in done.stderr
    (run / 'score_player.log').write_text(
        '[INFO] [1.0] [score_player]: ready: play list x, audio y, poll 0.02 s, lead one bar + '
        '0.5 s, motion lead 2.00 ms, pedals +0.80 ms\n'
    )
    done = _calibrate_command(run, '--midi-events', midi)
    assert done.returncode == 0, done.stderr
    calibration = load_timing_calibration(run / 'timing_calibration.yaml')
    expected = _expected_latency(strokes, instruments, landed)
    arms = np.mean([expected[n] for n in ORDER if n != 'bass'])
    assert calibration.motion_lead_s == pytest.approx(0.002 + arms, abs=0.0005)
    assert calibration.pedal_lead_s == pytest.approx(0.0008 + expected['bass'] - arms, abs=5e-4)
    midi.write_text(midi.read_text() + '{"time_s": 1.0, "note": 38}\n')
    done = _calibrate_command(run, '--midi-events', midi)
    assert done.returncode == 2 and f'midi_events.jsonl:{len(events) + 1}: expected' in done.stderr
    assert 'Traceback' not in done.stderr


def _calibrate_command(*args) -> subprocess.CompletedProcess:
    return run_phil('timing-calibrate', *args)


def test_the_command_writes_the_calibration_the_table_and_the_figure(tmp_path):
    strokes, instruments, landed = _calibration_run()
    run = _run_folder(tmp_path, strokes, instruments)
    wav = tmp_path / 'recording.wav'
    samples = synthesize_recording(landed, instruments, DELAYS_S, start_time_s=START_S)
    wavfile.write(wav, RATE_HZ, samples)
    leads = ('--run-motion-lead-s', 0, '--run-pedal-lead-s', 0)
    done = _calibrate_command(run, '--wav', wav, *leads)
    assert done.returncode == 2 and 'its start time on the robot clock is needed' in done.stderr
    (tmp_path / 'recording.wav.json').write_text(json.dumps({'start_time_s': START_S}))
    done = _calibrate_command(run, '--wav', wav, *leads)
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load((run / 'timing_calibration.yaml').read_text())
    expected = _expected_latency(strokes, instruments, landed)
    for name, measured in written['measured'].items():
        assert math.isclose(measured['latency_s'], expected[name], abs_tol=0.0005), name
    assert (run / 'calibration_timing.png').stat().st_size > 0
    assert 'score_player.timing_calibration=' in done.stdout
    # A recording started 20 s later than it says: nothing matches.
    (tmp_path / 'recording.wav.json').write_text(json.dumps({'start_time_s': START_S + 20}))
    done = _calibrate_command(run, '--wav', wav, *leads)
    assert done.returncode == 1 and 'no sound matched' in done.stderr
