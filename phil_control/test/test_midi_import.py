"""The MIDI-to-score conversion core on hand-made note lists (no MIDI file): velocity grades,
chords, the hi-hat pedal, hands that never cross, count-in, rests in empty bars, and what is
left out reported with its bar and beat."""

from __future__ import annotations

import pytest

from phil_control.core.score import parse_score
from phil_control.core.score.midi_import import (
    DrumNote,
    ImportReport,
    MidiDrums,
    midi_to_events,
    velocity_grade,
)
from phil_control.core.score.writer import format_score


def _convert(notes, bpm=120.0):
    """Score rows of ``notes`` (beat, note, velocity) at ``bpm``; the rows with strokes."""
    drums = MidiDrums(
        tuple(DrumNote(beat * 60 / bpm, beat, note, v) for beat, note, v in notes), ((0.0, bpm),)
    )
    report = ImportReport()
    events = midi_to_events(drums, report)
    parse_score(format_score(events), 'converted', strict=True)  # the strict parser reads it
    return events, [e for e in events if not e.is_rest], report


@pytest.mark.parametrize(('velocity', 'grade'), [(1, 1), (64, 4), (100, 6), (127, 7)])
def test_velocity_grades_are_one_plus_six_parts_of_127(velocity, grade):
    assert velocity_grade(velocity) == grade


def test_notes_within_50_ms_are_one_row_and_a_third_drum_is_dropped_by_name():
    events, played, report = _convert([(0, 38, 100), (0.08, 49, 120), (0.09, 45, 40)])
    assert len(played) == 1  # 0.09 beat at 120 bpm = 45 ms
    row = played[0]
    assert (row.left_drum, row.right_drum) == (1, 8) or (row.right_drum, row.left_drum) == (1, 8)
    assert report.dropped == ['bar 1, beat 1: drum 3 (three at once)']


def test_the_hihat_pedal_closes_and_an_open_hihat_stays_open_until_closed():
    _, played, _ = _convert([(0, 46, 90), (1, 38, 90), (2, 44, 90), (2, 38, 90), (3, 42, 90)])
    assert [e.hihat_closed for e in played] == [False, False, True, True]
    assert played[0].right_drum == 5 and played[3].right_drum == 5


def test_hands_never_cross_except_hihat_over_snare():
    _, played, _ = _convert(
        [(0, 38, 90), (1, 45, 90), (2, 41, 90), (2, 47, 90), (3, 42, 90), (3, 38, 90)]
    )
    snare, mid, toms, hihat_snare = played
    assert (snare.left_drum, snare.right_drum) == (1, 0)  # the snare alone: left
    assert (mid.left_drum, mid.right_drum) == (0, 3)  # a tom alone: right
    assert (toms.left_drum, toms.right_drum) == (3, 2)  # mid left of floor
    assert (hihat_snare.left_drum, hihat_snare.right_drum) == (1, 5)  # the one crossing


def test_a_stroke_too_soon_for_its_stick_goes_to_the_free_one_when_no_crossing():
    # 32nd notes on the mid tom at 120 bpm: 62 ms apart, too soon for one stick.
    _, played, report = _convert([(i / 8, 47, 90) for i in range(4)])
    assert [(e.right_drum, e.left_drum) for e in played] == [(3, 0), (0, 3), (3, 0), (0, 3)]
    assert report.moved[0] == 'bar 1, beat 1.125: drum 3 to the left stick'


def test_count_in_rests_in_empty_bars_and_a_last_bar_of_rests():
    events, played, _ = _convert([(0, 36, 90), (12, 36, 90)])
    assert [e.bar for e in events[:4]] == [0] * 4 and all(e.beat_units == 0.6 for e in events[:5])
    # Bars 2 and 3 are empty: a rest on each downbeat, so no row is a bar from the last.
    assert [e.bar for e in events if e.is_rest and 1 < e.bar < 4] == [2, 3]
    assert [e.bar for e in played] == [1, 4]
    assert events[-1].bar == 5 and all(e.is_rest for e in events if e.bar == 5)


def test_unknown_notes_are_reported_with_their_bar_and_beat():
    _, played, report = _convert([(0, 36, 90), (5.5, 39, 90)])
    assert report.dropped == ['bar 2, beat 2.5: note 39 has no drum here']
    assert len(played) == 1
