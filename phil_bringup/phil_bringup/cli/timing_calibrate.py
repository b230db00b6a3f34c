"""`phil timing-calibrate RUN`: when did the calibration run's strokes actually sound, and which
``motion_lead_s`` / ``pedal_lead_s`` cancel the delay.

The run folder holds the score player's ``hits.csv`` of a ``PLAY|calibration``. What sounded
comes from one of:

* ``--record-midi PORT``: plays ``PLAY|calibration`` itself (the robot must be IDLE, READY
  done) and records the e-drum module's notes until the play ends (python-rtmidi; the pads from
  ``--note-map``, default ``config/midi_drum_map.yaml``); they are kept in
  ``RUN/midi_events.jsonl``;
* ``--midi-events FILE``: such a recording (JSON lines ``{"time_s", "note", "velocity"}``);
* ``--wav FILE``: a microphone recording; its first sample's time on the robot's clock
  (CLOCK_MONOTONIC) from ``--wav-start-s`` or ``FILE.json`` (``{"start_time_s": ...}``).

Writes ``RUN/timing_calibration.yaml`` (or ``--out``), ``RUN/calibration_timing.txt`` and
``.png``, and prints the per-instrument table. Exit 0, 1 when the measurement does not give a
usable calibration, 2 on a bad argument or file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from phil_bringup.cli.tcp_client import DEFAULT_HOST, DEFAULT_PORT, send_lines
from phil_bringup.core.strike_timing import (
    assign_to_strokes,
    calibrate,
    detect_onsets,
    midi_strikes,
)
from phil_bringup.plots import runlog
from phil_bringup.plots.figures import hit_timing_figure
from phil_bringup.plots.stats import format_timing
from phil_bringup.process_commands import config_path
from phil_control.core.play.timing_calibration import CalibrationError

PLAY_ID = 'calibration'
NOTE_MAP = 'midi_drum_map.yaml'
PLAY_TIMEOUT_S = 180.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('run', type=Path, help="run folder with the score player's hits.csv")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument('--record-midi', metavar='PORT', help='play and record this MIDI input')
    source.add_argument('--midi-events', type=Path, metavar='FILE', help='recorded MIDI notes')
    source.add_argument('--wav', type=Path, metavar='FILE', help='a microphone recording')
    parser.add_argument('--wav-start-s', type=float, default=None, help="the WAV's start time")
    parser.add_argument('--play-id', default=PLAY_ID, help='the calibration play (hits.csv)')
    parser.add_argument('--note-map', type=Path, default=None, help='MIDI note -> instrument')
    parser.add_argument(
        '--run-motion-lead-s',
        type=float,
        default=None,
        help="motion_lead_s the run played with (default: from the run's score_player.log)",
    )
    parser.add_argument(
        '--run-pedal-lead-s',
        type=float,
        default=None,
        help="pedal_lead_s the run played with (default: from the run's score_player.log)",
    )
    parser.add_argument('--out', type=Path, default=None, help='the calibration file to write')
    parser.add_argument('--host', default=DEFAULT_HOST)
    parser.add_argument('--port', type=int, default=DEFAULT_PORT)


def timing_calibrate(args: argparse.Namespace) -> int:
    try:
        if args.record_midi:
            record_midi_during_play(args)
        hits = runlog.load_hits(args.run / 'hits.csv')
        keep = np.array([play == args.play_id for play in hits.play_id], dtype=bool)
        if not keep.any():
            raise ValueError(f'{args.run / "hits.csv"}: no strokes of play {args.play_id!r}')
        instruments = tuple(i for i, k in zip(hits.instrument, keep, strict=True) if k)
        strokes_s = hits.command_time_s[keep]
        motion_lead_s, pedal_lead_s = run_leads(args)
        times, sounded, source = _sounds(args, strokes_s, instruments)
        report, calibration = calibrate(
            instruments, strokes_s, sounded, times, motion_lead_s, pedal_lead_s, source
        )
        out = args.out or args.run / 'timing_calibration.yaml'
        out.write_text(calibration.as_yaml(), encoding='utf-8')
        table = format_timing(report).replace('detected impact', 'sound')
        (args.run / 'calibration_timing.txt').write_text(table, encoding='utf-8')
        hit_timing_figure(report, args.run / 'calibration_timing.png')
    except CalibrationError as error:
        print(f'phil timing-calibrate: {error}', file=sys.stderr)
        return 1
    except (OSError, ValueError, runlog.RunLogError) as error:
        print(f'phil timing-calibrate: {error}', file=sys.stderr)
        return 2
    print(table, end='')
    print(
        f'motion_lead_s {calibration.motion_lead_s * 1e3:.2f} ms, pedal_lead_s '
        f'{calibration.pedal_lead_s * 1e3:+.2f} ms -> {out}\n'
        f'use it: --param score_player.timing_calibration={out.resolve()}'
    )
    return 0


#: The leads in the score player's start-up line: "motion lead 2.00 ms, pedals +0.80 ms".
_LEADS_LINE = re.compile(r'motion lead (-?[0-9.]+) ms, pedals ([-+]?[0-9.]+) ms')


def run_leads(args: argparse.Namespace) -> tuple[float, float]:
    """The leads the run played with: given, or from the score player's log in the run.

    Raises:
        ValueError: Neither given nor in the log (naming what to pass).
    """
    if args.run_motion_lead_s is not None and args.run_pedal_lead_s is not None:
        return args.run_motion_lead_s, args.run_pedal_lead_s
    log = args.run / 'score_player.log'
    found = _LEADS_LINE.findall(log.read_text(errors='replace')) if log.is_file() else []
    if not found:
        raise ValueError(
            f'the leads the run played with are not in {log}: pass --run-motion-lead-s and '
            '--run-pedal-lead-s'
        )
    motion_ms, pedal_ms = (float(value) for value in found[-1])
    motion = args.run_motion_lead_s if args.run_motion_lead_s is not None else motion_ms / 1e3
    pedal = args.run_pedal_lead_s if args.run_pedal_lead_s is not None else pedal_ms / 1e3
    return motion, pedal


def _sounds(args, strokes_s, instruments) -> tuple[np.ndarray, tuple[str, ...], str]:
    """Times and instruments of what sounded, and a description of the source."""
    if args.wav is not None:
        start_s = args.wav_start_s if args.wav_start_s is not None else _wav_start_s(args.wav)
        rate_hz, samples = read_wav_mono(args.wav)
        onsets = detect_onsets(samples, rate_hz, start_s)
        times, sounded = assign_to_strokes(onsets, strokes_s, instruments)
        return times, sounded, f'wav {args.wav.name}: {len(onsets)} onsets'
    events_path = args.midi_events or args.run / 'midi_events.jsonl'
    note_map = load_note_map(args.note_map or config_path(NOTE_MAP))
    times, sounded, unknown = midi_strikes(read_midi_events(events_path), note_map)
    if unknown:
        print(f'notes not in the note map (left out): {sorted(set(unknown))}', file=sys.stderr)
    return times, sounded, f'midi {events_path.name}: {len(times)} notes'


def _wav_start_s(wav: Path) -> float:
    sidecar = wav.with_name(wav.name + '.json')
    if not sidecar.is_file():
        raise ValueError(
            f'{wav}: its start time on the robot clock is needed: --wav-start-s or '
            f'{sidecar.name} with {{"start_time_s": ...}}'
        )
    try:
        return float(json.loads(sidecar.read_text())['start_time_s'])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f'{sidecar}: needs {{"start_time_s": <seconds>}} ({error})') from None


def read_wav_mono(wav: Path) -> tuple[int, np.ndarray]:
    """The sample rate and the recording as one float channel around 0 (8-bit WAVs are
    unsigned).

    Raises:
        ValueError: Naming the file when it is not a WAV scipy reads.
    """
    from scipy.io import wavfile

    try:
        rate_hz, samples = wavfile.read(wav)
    except ValueError as error:
        raise ValueError(f'{wav}: not a readable WAV ({error})') from None
    mono = samples.astype(float) if samples.ndim == 1 else samples.astype(float).mean(axis=1)
    return rate_hz, mono - 128.0 if samples.dtype == np.uint8 else mono


def read_midi_events(path: Path) -> list[tuple[float, int, int]]:
    """``(time_s, note, velocity)`` of every line of a MIDI events file.

    Raises:
        ValueError: Naming the file and line that is not such an object.
    """
    events = []
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            events.append((float(event['time_s']), int(event['note']), int(event['velocity'])))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f'{path}:{number}: expected {{"time_s", "note", "velocity"}}: {error}'
            ) from None
    return events


def load_note_map(path: Path) -> dict[int, str]:
    """``note: instrument`` pairs.

    Raises:
        ValueError: Naming the file and the entry that is not a note number and a name.
    """
    try:
        document = yaml.safe_load(path.read_text(encoding='utf-8'))
    except yaml.YAMLError as error:
        raise ValueError(f'{path}: {error}') from None
    if not isinstance(document, dict):
        raise ValueError(f'{path}: expected a mapping of MIDI notes to instruments')
    for note, name in document.items():
        if not (isinstance(note, int) and 0 <= note <= 127 and isinstance(name, str)):
            raise ValueError(f'{path}: {note!r}: {name!r} is not a MIDI note and an instrument')
    return dict(document)


def record_midi_during_play(args: argparse.Namespace) -> None:
    """Open the MIDI input, play the calibration score over TCP, record until it ended, and
    keep the notes in ``RUN/midi_events.jsonl``.

    Raises:
        ValueError: No such MIDI input (the ports there are listed), or the play was refused.
    """
    if args.host not in ('127.0.0.1', 'localhost', '::1'):
        raise ValueError(
            f"--record-midi stamps the notes with this machine's clock: run it on the robot "
            f'(not against {args.host})'
        )
    try:
        import rtmidi
    except ImportError as error:
        raise ValueError(f'--record-midi needs python-rtmidi ({error})') from None
    try:
        midi = rtmidi.MidiIn()
    except Exception as error:  # rtmidi's SystemError: no ALSA sequencer on this machine
        raise ValueError(f'no MIDI input on this machine: {error}') from None
    ports = midi.get_ports()
    if args.record_midi not in ports:
        raise ValueError(f'no MIDI input {args.record_midi!r}; inputs: {ports or "none"}')
    events = []

    def note_on(message, _data) -> None:
        data, _delta = message
        if len(data) == 3 and data[0] & 0xF0 == 0x90:
            events.append({'time_s': time.monotonic(), 'note': data[1], 'velocity': data[2]})

    midi.open_port(ports.index(args.record_midi))
    midi.set_callback(note_on)
    try:
        play_and_wait(args.play_id, args.host, args.port)
    finally:
        midi.close_port()
    lines = ''.join(json.dumps(event) + '\n' for event in events)
    (args.run / 'midi_events.jsonl').write_text(lines, encoding='utf-8')


def play_and_wait(play_id: str, host: str, port: int) -> None:
    """``PLAY|play_id``, then wait until the robot is IDLE again (GET_STATUS every 0.2 s)."""
    [reply] = send_lines([f'PLAY|{play_id}'], host, port)
    if reply != 'OK|PLAY':
        raise ValueError(f'PLAY|{play_id} refused: {reply}')
    deadline, started = time.monotonic() + PLAY_TIMEOUT_S, False
    while time.monotonic() < deadline:
        state = send_lines(['GET_STATUS'], host, port)[0].split('|')[1]
        started = started or state == 'PLAYING'
        if started and state == 'IDLE':
            return
        if state in ('ESTOP', 'FAULT'):
            raise ValueError(f'PLAY|{play_id} ended in {state}: no calibration')
        time.sleep(0.2)
    raise ValueError(f'PLAY|{play_id} did not end within {PLAY_TIMEOUT_S:.0f} s')
