"""When the strikes of a calibration run actually sounded, and the leads that follow from it.

Two measurements, both stamped on the robot's clock (CLOCK_MONOTONIC, the clock of
``hits.csv``):

* an e-drum module's MIDI notes (``midi_strikes``; the pad of each note from a note map), or
* a microphone recording (``detect_onsets``; every onset is given the instrument of the
  commanded stroke it is nearest to, ``assign_to_strokes``: the calibration score strikes one
  instrument at a time, 0.6 s apart, so the nearest stroke is the one that sounded).

``calibrate`` matches them to the commanded strokes per instrument (the statistics of
``phil plot``'s hit timing) and turns the arms' and the pedals' mean latencies into the
``motion_lead_s`` and ``pedal_lead_s`` the score player applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from phil_bringup.plots.stats import TimingReport, hit_timing
from phil_control.core.play import check_motion_lead_s, check_pedal_lead_s
from phil_control.core.play.timing_calibration import CalibrationError, TimingCalibration

#: Instruments struck by a pedal (their drives are the pedal EPOS4s).
PEDAL_INSTRUMENTS = frozenset({'bass'})
#: How far a sound may be from its commanded stroke and still be matched to it, s.
MATCH_WINDOW_S = 0.15
#: How far an instrument's latency may differ from the typical one (a recording), s.
ASSIGN_SPREAD_S = 0.03
#: Onset detection, on the loudness of 1 ms blocks (the largest |sample| in each): an event
#: starts in a block louder than this many times the noise floor (the median block) and than
#: ``RISE`` times every block of the ``RISE_WINDOW_S`` before it, so a drum's decaying ring,
#: however loud, starts nothing. Its onset is the first sample, from the block before, that
#: reaches ``ONSET_FRACTION`` of the event's peak (over the next ``PEAK_WINDOW_S``).
BLOCK_S = 0.001
THRESHOLD_OVER_FLOOR = 10.0
RISE = 4.0
RISE_WINDOW_S = 0.005
ONSET_FRACTION = 0.2
PEAK_WINDOW_S = 0.01
REFRACTORY_S = 0.05


def detect_onsets(samples: ArrayLike, rate_hz: float, start_time_s: float = 0.0) -> np.ndarray:
    """Onset times of the strikes in a recording, s (``start_time_s`` is the first sample's).

    Raises:
        ValueError: A recording shorter than a block, or a non-positive rate.
    """
    signal = np.abs(np.asarray(samples, dtype=float).reshape(-1))
    block = int(round(BLOCK_S * rate_hz)) if rate_hz > 0 else 0
    if block < 1 or len(signal) < block:
        raise ValueError('a recording needs a positive sample rate and at least 1 ms of samples')
    loudness = signal[: len(signal) // block * block].reshape(-1, block).max(axis=1)
    # Digital silence has no noise floor: then a thousandth of the loudest block is one.
    floor = max(float(np.median(loudness)), 1e-3 * float(loudness.max()), 1e-12)
    before = int(round(RISE_WINDOW_S / BLOCK_S))
    history = np.concatenate([np.full(before, np.inf), loudness])
    recent = np.lib.stride_tricks.sliding_window_view(history[:-1], before).max(axis=1)
    rising = (loudness > THRESHOLD_OVER_FLOOR * floor) & (loudness > RISE * recent)
    onsets, quiet_until = [], -1
    for index in np.flatnonzero(rising):
        if index < quiet_until:
            continue
        start = max(index - 1, 0) * block
        event = signal[start : (index + 1) * block + int(PEAK_WINDOW_S * rate_hz)]
        reached = np.flatnonzero(event >= ONSET_FRACTION * float(event.max()))
        onsets.append(start_time_s + (start + int(reached[0])) / rate_hz)
        quiet_until = index + int(round(REFRACTORY_S / BLOCK_S))
    return np.array(onsets, dtype=float)


def midi_strikes(
    events: Iterable[tuple[float, int, int]], note_map: Mapping[int, str]
) -> tuple[np.ndarray, tuple[str, ...], list[int]]:
    """The struck pads of note-on events ``(time_s, note, velocity)``: times, instruments, and
    the notes the map does not name (left out). A velocity of 0 is a note-off."""
    times, instruments, unknown = [], [], []
    for time_s, note, velocity in events:
        if velocity <= 0:
            continue
        if note not in note_map:
            unknown.append(note)
            continue
        times.append(float(time_s))
        instruments.append(note_map[note])
    return np.array(times, dtype=float), tuple(instruments), unknown


def assign_to_strokes(
    onset_times_s: ArrayLike,
    stroke_times_s: ArrayLike,
    stroke_instruments: tuple[str, ...],
    window_s: float = MATCH_WINDOW_S,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Give each commanded stroke the onset that is its sound, with the stroke's instrument.

    A recording also holds sounds that are no stroke (a stick grazing a cymbal on its way, a
    door): first the typical latency is taken (the median of every onset's distance to its
    nearest stroke within ``window_s``); then each stroke, in time order, takes the unused
    onset nearest to it plus that latency, within ``ASSIGN_SPREAD_S``. Onsets left over are
    left out.
    """
    onsets = np.sort(np.asarray(onset_times_s, dtype=float).reshape(-1))
    strokes = np.asarray(stroke_times_s, dtype=float).reshape(-1)
    if not len(strokes) or not len(onsets):
        return np.empty(0), ()
    nearest = strokes[np.abs(onsets[:, None] - strokes[None, :]).argmin(axis=1)]
    close = np.abs(onsets - nearest) <= window_s
    if not close.any():
        return np.empty(0), ()
    latency_s = float(np.median((onsets - nearest)[close]))
    used = np.zeros(len(onsets), dtype=bool)
    kept, instruments = [], []
    for index in np.argsort(strokes, kind='stable'):
        distance = np.abs(onsets - (strokes[index] + latency_s))
        distance[used] = np.inf
        best = int(distance.argmin())
        if distance[best] <= ASSIGN_SPREAD_S:
            used[best] = True
            kept.append(onsets[best])
            instruments.append(stroke_instruments[index])
    return np.array(kept, dtype=float), tuple(instruments)


def calibrate(
    stroke_instruments: tuple[str, ...],
    stroke_times_s: ArrayLike,
    sound_instruments: tuple[str, ...],
    sound_times_s: ArrayLike,
    run_motion_lead_s: float,
    run_pedal_lead_s: float,
    source: str,
) -> tuple[TimingReport, TimingCalibration]:
    """The latency of every instrument (sound - commanded stroke) and the leads that cancel
    it: ``motion_lead_s`` = the run's + the arms' mean latency, ``pedal_lead_s`` = the run's +
    the pedals' mean latency - the arms'.

    Raises:
        CalibrationError: Nothing matched for the arms, or a lead outside what the score
            player accepts (a recording that does not belong to the run, or a wrong start time).
    """
    report = hit_timing(
        stroke_instruments, stroke_times_s, sound_instruments, sound_times_s, MATCH_WINDOW_S
    )
    arms = [i for i in report.instruments if i.instrument not in PEDAL_INSTRUMENTS and i.matched]
    pedals = [i for i in report.instruments if i.instrument in PEDAL_INSTRUMENTS and i.matched]
    if not arms:
        raise CalibrationError(
            f'{source}: no sound matched a commanded arm stroke within '
            f'{MATCH_WINDOW_S * 1e3:.0f} ms: is it the recording of this run, with its start time?'
        )
    arm_latency = float(np.mean(np.concatenate([i.errors_s for i in arms])))
    motion_lead_s = run_motion_lead_s + arm_latency
    pedal_lead_s = run_pedal_lead_s
    if pedals:
        pedal_latency = float(np.mean(np.concatenate([i.errors_s for i in pedals])))
        pedal_lead_s += pedal_latency - arm_latency
    try:
        check_motion_lead_s(motion_lead_s)
        check_pedal_lead_s(pedal_lead_s)
    except ValueError as error:
        raise CalibrationError(f'{source}: the measured latencies give {error}') from None
    measured = {
        timing.instrument: {
            'latency_s': float(timing.stats.mean_error_s),
            'p99_abs_error_s': float(timing.stats.p99_abs_error_s),
            'drift_s': float(timing.stats.drift_s),
            'strokes': int(timing.matched),
        }
        for timing in report.instruments
        if timing.matched
    }
    return report, TimingCalibration(motion_lead_s, pedal_lead_s, measured, source)
