"""Synthetic measurements of a calibration run for the tests of ``phil timing-calibrate``: a
microphone recording and an e-drum module's MIDI notes, made from strike times (e.g. the
simulator's detected impacts) with a known delay per instrument.

Each strike in the recording is a burst with a 0.1 ms attack and a decay, whose timbre
depends on the instrument (a drum's tone, a cymbal's noise), over a noise floor; the MIDI notes
arrive with a little jitter, as a module's do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

RATE_HZ = 48_000
ATTACK_S = 0.0001
CYMBALS = ('hihat', 'ride', 'crash')


def synthesize_recording(
    times_s: Sequence[float],
    instruments: Sequence[str],
    delays_s: Mapping[str, float],
    *,
    start_time_s: float,
    rate_hz: int = RATE_HZ,
    noise: float = 0.002,
    seed: int = 0,
) -> np.ndarray:
    """int16 samples from ``start_time_s`` to 1 s after the last strike; each strike of
    ``instruments[i]`` sounds at ``times_s[i] + delays_s[instrument]``."""
    rng = np.random.default_rng(seed)
    sounds = [t + delays_s[name] for t, name in zip(times_s, instruments, strict=True)]
    length = int((max(sounds) - start_time_s + 1.0) * rate_hz)
    signal = rng.normal(0.0, noise, length)
    tail = np.arange(int(0.25 * rate_hz)) / rate_hz
    for time_s, name in zip(sounds, instruments, strict=True):
        onset = (time_s - start_time_s) * rate_hz
        first = int(np.ceil(onset))
        t = tail + (first - onset) / rate_hz  # time since the exact onset
        cymbal = any(word in name for word in CYMBALS)
        decay_s = 0.12 if cymbal else 0.05
        tone = (
            rng.normal(0.0, 0.35, len(t))
            if cymbal
            else np.sin(2 * np.pi * (60.0 + 40.0 * (sum(map(ord, name)) % 5)) * t + 0.3)
        )
        amplitude = 0.6 * np.minimum(t / ATTACK_S, 1.0) * np.exp(-t / decay_s)
        end = min(first + len(t), length)
        signal[first:end] += (amplitude * tone)[: end - first]
    return np.clip(signal * 32767, -32768, 32767).astype(np.int16)


def fake_midi_events(
    times_s: Sequence[float],
    instruments: Sequence[str],
    delays_s: Mapping[str, float],
    note_of: Mapping[str, int],
    *,
    jitter_s: float = 0.0003,
    seed: int = 0,
) -> list[dict]:
    """Note-on events (``time_s``, ``note``, ``velocity``) as the recorder keeps them, each
    with its note-off."""
    rng = np.random.default_rng(seed)
    events = []
    for time_s, name in zip(times_s, instruments, strict=True):
        at = float(time_s + delays_s[name] + rng.uniform(-jitter_s, jitter_s))
        events.append({'time_s': at, 'note': note_of[name], 'velocity': 90})
        events.append({'time_s': at + 0.05, 'note': note_of[name], 'velocity': 0})
    return sorted(events, key=lambda event: event['time_s'])
