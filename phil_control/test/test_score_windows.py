"""Tests of sliding windows, sample counts with carry, and playback speed."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_control.core.score.model import ScoreEvent
from phil_control.core.score.parser import parse_score
from phil_control.core.score.windows import (
    CARRY_UNITS_PER_SAMPLE,
    LOOKAHEAD_BEAT_UNITS,
    SAMPLE_PERIOD_S,
    SampleCount,
    SpeedError,
    build_windows,
    count_samples,
    count_window_samples,
    make_dummy_event,
    normalize_speed,
    score_time_step_s,
    score_to_wall_time,
    wall_to_score_time,
)


def score_from_beats(beats, bpm=100.0):
    rows = [f'1\t{beat!r}\t1\t0\t5\t0\t0\t0' for beat in beats]
    return parse_score('\n'.join([f'bpm\t{bpm!r}', *rows, 'end']) + '\n')


def first_interval_indices(windows):
    return [(window.events[0].index, window.events[1].index) for window in windows]


def test_single_event_gives_one_tail_window_from_the_dummy():
    score = score_from_beats([1.0])
    (window,) = build_windows(score)
    assert window.is_tail
    assert window.events[0] == make_dummy_event(score.events[0])
    assert (window.start_s, window.end_s, window.interval_s) == (0.0, 1.0, 1.0)
    assert window.target is score.events[0]


def test_dummy_event_is_silent_at_time_zero():
    dummy = make_dummy_event()
    assert (dummy.index, dummy.time_s, dummy.beat_units, dummy.bpm) == (-1, 0.0, 0.0, 100.0)
    assert dummy.is_rest


def test_quarter_notes_emit_a_window_once_a_bar_of_lookahead_is_available():
    score = score_from_beats([0.6] * 6)
    windows = build_windows(score)
    assert len(windows) == 6
    assert [len(window.events) for window in windows] == [5, 5, 5, 4, 3, 2]
    assert [window.is_tail for window in windows] == [False, False, False, True, True, True]
    assert first_interval_indices(windows) == [(-1, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert windows[0].lookahead_beat_units == pytest.approx(2.4)


def test_at_most_one_window_per_appended_event():
    windows = build_windows(score_from_beats([2.4, 2.4, 0.6]))
    assert [len(window.events) for window in windows] == [2, 2, 2]
    assert [window.is_tail for window in windows] == [False, False, True]


@pytest.mark.parametrize('bpm', [50.0, 64.5, 160.0])
def test_window_boundaries_depend_on_beats_not_on_tempo(bpm):
    beats = [0.6, 0.3, 0.15, 0.15, 0.6, 1.2, 0.075, 0.6, 0.6]
    reference = build_windows(score_from_beats(beats))
    windows = build_windows(score_from_beats(beats, bpm))
    assert [len(w.events) for w in windows] == [len(w.events) for w in reference]


def test_empty_input_gives_no_windows():
    assert build_windows([]) == []


beat_lists = st.lists(
    st.sampled_from([0.0, 0.075, 0.15, 0.3, 0.45, 0.6, 1.0, 2.4]), min_size=1, max_size=60
)


@given(beat_lists, st.floats(40.0, 240.0))
def test_windows_tile_the_score_and_respect_the_lookahead(beats, bpm):
    score = score_from_beats(beats, bpm)
    windows = build_windows(score)
    assert len(windows) == len(score.events)
    assert [window.target for window in windows] == list(score.events)
    assert windows[0].start_s == 0.0
    for previous, current in itertools.pairwise(windows):
        assert current.start_s == previous.end_s
    assert sum(window.interval_s for window in windows) == pytest.approx(score.duration_s)
    tails = [window.is_tail for window in windows]
    assert tails == sorted(tails), 'tail windows come last'
    # Tail windows may still span >= 2.4 when one long beat qualified several starts at once.
    for window in windows:
        if not window.is_tail:
            span = (window.events[-1].time_s - window.events[0].time_s) * bpm / 100.0
            assert span >= LOOKAHEAD_BEAT_UNITS


def test_sample_count_of_a_quarter_note():
    assert count_samples(0.0, 0.6) == SampleCount(samples=120, carry_units=0)


def test_fraction_is_carried_until_it_makes_a_whole_sample():
    interval_s = 0.0123  # 2.46 samples
    carry = 0
    counts = []
    for _ in range(3):
        result = count_samples(0.0, interval_s, carry_units=carry)
        counts.append(result.samples)
        carry = result.carry_units
    assert counts == [2, 2, 3]
    assert carry == 3800


def test_float_noise_does_not_drop_a_sample():
    start_s = 0.6 + 0.6
    end_s = start_s + 0.6
    assert (end_s - start_s) / SAMPLE_PERIOD_S < 120.0
    assert count_samples(start_s, end_s) == SampleCount(samples=120, carry_units=0)


@pytest.mark.parametrize(('speed', 'samples'), [(0.5, 240), (1.0, 120), (2.0, 60), (1.5, 80)])
def test_speed_scales_the_sample_count(speed, samples):
    assert count_samples(0.0, 0.6, speed).samples == samples


def test_sample_count_rejects_bad_input():
    with pytest.raises(SpeedError, match=r'playback speed 3\.0 is outside \[0\.5, 2\.0\]'):
        count_samples(0.0, 0.6, speed=3.0)
    with pytest.raises(ValueError, match='before its start'):
        count_samples(1.0, 0.5)
    with pytest.raises(ValueError, match=r'carry must be in 0\.\.9999'):
        count_samples(0.0, 0.6, carry_units=CARRY_UNITS_PER_SAMPLE)


def test_normalize_speed_clamps_or_validates():
    assert normalize_speed(3.0) == 2.0
    assert normalize_speed(0.1) == 0.5
    assert normalize_speed(1.25) == 1.25
    assert normalize_speed(2.0, clamp=False) == 2.0
    with pytest.raises(SpeedError, match=r'0\.49 is outside \[0\.5, 2\.0\]'):
        normalize_speed(0.49, clamp=False)
    for not_a_speed in (math.nan, math.inf, True, '1.0'):
        with pytest.raises(SpeedError, match='finite number'):
            normalize_speed(not_a_speed)


def test_time_conversion_between_score_and_wall_clock():
    assert score_to_wall_time(10.0, 2.0) == 5.0
    assert wall_to_score_time(5.0, 2.0) == 10.0
    assert score_to_wall_time(10.0, 0.5) == 20.0
    assert score_time_step_s(2.0) == pytest.approx(0.01)
    assert score_time_step_s() == SAMPLE_PERIOD_S
    with pytest.raises(SpeedError):
        score_to_wall_time(1.0, 2.5)


def test_count_window_samples_checks_the_speed_list():
    windows = build_windows(score_from_beats([0.6, 0.6]))
    assert count_window_samples(windows) == [120, 120]
    assert count_window_samples(windows, [1.0, 2.0]) == [120, 60]
    with pytest.raises(ValueError, match='3 speeds given for 2 windows'):
        count_window_samples(windows, [1.0, 1.0, 1.0])


irregular_beats = st.lists(st.floats(0.0, 3.0, allow_nan=False), min_size=1, max_size=200)


@given(irregular_beats, st.floats(40.0, 240.0), st.floats(0.5, 2.0))
def test_carry_conserves_total_samples_at_constant_speed(beats, bpm, speed):
    score = score_from_beats(beats, bpm)
    total_samples = sum(count_window_samples(build_windows(score), speed))
    expected = round(score.duration_s / SAMPLE_PERIOD_S / speed)
    assert 0 <= expected - total_samples <= 1
    wall_s = total_samples * SAMPLE_PERIOD_S
    assert abs(wall_s - score_to_wall_time(score.duration_s, speed)) <= SAMPLE_PERIOD_S + 1e-9


@given(
    st.lists(
        st.tuples(st.floats(0.0, 3.0, allow_nan=False), st.floats(0.5, 2.0)),
        min_size=1,
        max_size=200,
    )
)
def test_carry_conserves_wall_time_when_speed_changes_per_window(beats_and_speeds):
    beats = [beat for beat, _ in beats_and_speeds]
    speeds = [speed for _, speed in beats_and_speeds]
    windows = build_windows(score_from_beats(beats))
    total_samples = sum(count_window_samples(windows, speeds))
    exact_samples = sum(
        window.interval_s / SAMPLE_PERIOD_S / speed
        for window, speed in zip(windows, speeds, strict=True)
    )
    assert exact_samples - 1.0 - 1e-3 < total_samples <= exact_samples + 1e-3


def test_windows_accept_a_plain_event_sequence():
    events = [
        ScoreEvent(0, bar=1, beat_units=1.0, time_s=1.0, bpm=100.0, left_drum=1, left_velocity=5)
    ]
    (window,) = build_windows(events)
    assert window.end_s == 1.0
