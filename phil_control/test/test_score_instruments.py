"""Tests of the drum / HIT instrument tables."""

from __future__ import annotations

import pytest

from phil_control.core.score.instruments import (
    HIT_INSTRUMENT_IDS,
    SCORE_DRUM_NAMES,
    Hand,
    UnknownInstrumentError,
    coordinate_id,
    drum_name,
    hit_assignment,
    hit_hand,
    hit_instrument_id,
)


def test_hit_ids_follow_the_upstream_table_order():
    assert dict(HIT_INSTRUMENT_IDS) == {
        'bass': 0,
        'snare': 1,
        'floor': 2,
        'mid': 3,
        'top': 4,
        'closed hihat': 5,
        'ride': 6,
        'right crash': 7,
        'left crash': 8,
        'open hihat': 9,
    }


def test_score_drum_ids_cover_zero_to_nine():
    assert sorted(SCORE_DRUM_NAMES) == list(range(10))
    assert drum_name(1) == 'snare'
    assert drum_name(8) == 'left crash'
    assert drum_name(0) == 'none'


@pytest.mark.parametrize(
    ('instrument_id', 'hand'),
    [
        (0, Hand.KICK),
        (1, Hand.LEFT),
        (2, Hand.RIGHT),
        (3, Hand.RIGHT),
        (4, Hand.LEFT),
        (5, Hand.LEFT),
        (6, Hand.RIGHT),
        (7, Hand.RIGHT),
        (8, Hand.LEFT),
        (9, Hand.LEFT),
    ],
)
def test_hit_hand_rule(instrument_id, hand):
    assert hit_hand(instrument_id) is hand


def test_hit_assignment_of_closed_hihat_closes_the_pedal():
    assignment = hit_assignment('closed hihat')
    assert assignment.instrument_id == 5
    assert assignment.hand is Hand.LEFT
    assert assignment.velocity == 5
    assert assignment.hihat_closed


@pytest.mark.parametrize('name', ['open hihat', 'ride', 'bass', 'snare'])
def test_other_hit_assignments_leave_the_pedal_open(name):
    assert not hit_assignment(name).hihat_closed


def test_unknown_instrument_names_it_and_lists_the_valid_names():
    with pytest.raises(UnknownInstrumentError, match=r"unknown instrument 'cowbell'") as caught:
        hit_instrument_id('cowbell')
    for name in HIT_INSTRUMENT_IDS:
        assert repr(name) in str(caught.value)


def test_lookup_is_exact():
    with pytest.raises(UnknownInstrumentError, match="'Snare'"):
        hit_assignment('Snare')


@pytest.mark.parametrize('bad_id', [-1, 10])
def test_out_of_range_ids_are_rejected(bad_id):
    with pytest.raises(UnknownInstrumentError, match=r'valid ids: 0\.\.9'):
        hit_hand(bad_id)
    with pytest.raises(UnknownInstrumentError, match=r'valid ids: 0\.\.9'):
        drum_name(bad_id)


def test_unknown_instrument_error_is_a_value_error():
    assert issubclass(UnknownInstrumentError, ValueError)


def test_open_hihat_uses_the_open_coordinate():
    assert coordinate_id(5, hihat_closed=True) == 5
    assert coordinate_id(5, hihat_closed=False) == 9
    assert coordinate_id(1, hihat_closed=False) == 1
    assert coordinate_id(0, hihat_closed=True) == 0
