"""Tests of the score text parser and writer."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_control.core.score.model import ScoreError, ScoreEvent, Terminator
from phil_control.core.score.parser import load_score, parse_score
from phil_control.core.score.writer import format_score


def row(bar, beat, right=0, left=0, right_vel=0, left_vel=0, kick=0, hihat=0, *offsets):
    """One tab-separated event row; velocities default to 5 when a drum is given."""
    right_vel = right_vel or (5 if right else 0)
    left_vel = left_vel or (5 if left else 0)
    fields = [bar, beat, right, left, right_vel, left_vel, kick, hihat, *offsets]
    return '\t'.join(str(field) for field in fields)


def score_text(*lines):
    return '\n'.join(lines) + '\n'


def test_times_accumulate_beats_at_the_given_tempo():
    score = parse_score(score_text('bpm\t120', row(1, 0.6, 1), row(1, 0.3, 2), 'end'))
    assert [event.time_s for event in score.events] == [0.5, 0.75]
    assert [event.bpm for event in score.events] == [120.0, 120.0]
    assert score.duration_s == 0.75
    assert score.terminator is Terminator.END


def test_tempo_defaults_to_100_without_bpm_line():
    score = parse_score(score_text(row(0, 1.0), row(0, 0.6, 1), 'end'))
    assert score.events[1].time_s == pytest.approx(1.6)
    assert score.events[0].bpm == 100.0
    assert score.bpm_changes == ()


def test_bpm_change_applies_from_that_point():
    text = score_text('bpm\t100', row(1, 0.6, 1), 'bpm\t50', row(1, 0.6, 1), row(2, 0.6), 'end')
    score = parse_score(text)
    assert [event.time_s for event in score.events] == pytest.approx([0.6, 1.8, 3.0])
    assert [event.bpm for event in score.events] == [100.0, 50.0, 50.0]
    assert [
        (change.line_number, change.bpm, change.first_event_index) for change in score.bpm_changes
    ] == [(1, 100.0, 0), (3, 50.0, 1)]


def test_event_fields_are_kept():
    score = parse_score(score_text(row(3, 0.15, 8, 5, 7, 3, 1, 1), 'end'))
    event = score.events[0]
    assert (event.index, event.bar, event.beat_units, event.line_number) == (0, 3, 0.15, 1)
    assert (event.right_drum, event.left_drum) == (8, 5)
    assert (event.right_velocity, event.left_velocity) == (7, 3)
    assert event.kick and event.hihat_closed
    assert (event.right_offset_m, event.left_offset_m) == (0.0, 0.0)
    assert not event.is_rest


def test_legacy_offset_columns_are_kept_in_metres_and_do_not_shift_time():
    text = score_text(row(1, 0.6, 1, 1, 7, 7, 0, 0, -5, 5), row(1, 0.6, 0, 0, 0, 0, 0, 0, 2))
    score = parse_score(text + 'end\n')
    assert score.events[0].right_offset_m == pytest.approx(-0.05)
    assert score.events[0].left_offset_m == pytest.approx(0.05)
    assert score.events[1].right_offset_m == pytest.approx(0.02)
    assert score.events[1].left_offset_m == 0.0
    assert score.events[1].time_s == pytest.approx(1.2)


def test_end_with_trailing_text_ignores_the_rest_of_the_file():
    text = score_text(row(1, 0.6, 1), 'end\t100', 'this is not a score row', row(2, 0.6, 2))
    score = parse_score(text)
    assert len(score.events) == 1
    assert score.terminator is Terminator.END


def test_gen1_negative_bar_terminates():
    text = score_text('bpm\t88', row(1, 0.6, 1), '-1   0.000\t 0\t 0\t 0\t 0\t 0\t 0', 'garbage')
    score = parse_score(text)
    assert len(score.events) == 1
    assert score.terminator is Terminator.NEGATIVE_BAR


def test_whitespace_variants_are_tolerated():
    text = 'bpm\t 100\r\n1\t 0.600\t 1\t 0\t 5\t 0\t 0\t 0\t\r\n  2   0.3  2 0 5 0 1 1 \r\nend'
    score = parse_score(text)
    assert [event.bar for event in score.events] == [1, 2]
    assert score.events[1].kick


def test_comments_and_blank_lines_are_skipped_but_counted():
    text = score_text('# demo groove', '', 'bpm\t100', '   # lead-in', row(1, 0.6), '', 'end')
    score = parse_score(text)
    assert len(score.events) == 1
    assert score.events[0].line_number == 5
    assert score.bpm_changes[0].line_number == 3


def test_summary_properties():
    score = parse_score(score_text(row(2, 0.6), row(3, 0.6), row(2, 0.6), row(5, 0.6), 'end'))
    assert (score.first_bar, score.last_bar, score.total_bars) == (2, 5, 3)


@pytest.mark.parametrize(
    ('line', 'expected'),
    [
        (row(1, 'x'), r"line 2, field 2: beat 'x' is not a number"),
        (row(1, '1e999'), r"line 2, field 2: beat '1e999' is not finite"),
        (row(1, 'nan'), r"line 2, field 2: beat 'nan' is not a number"),
        (row(1, -0.6), r"line 2, field 2: beat '-0.6' must not be negative"),
        (row('1.5', 0.6), r"line 2, field 1: bar '1.5' is not an integer"),
        (row('END', 0.6), r"line 2, field 1: bar 'END' is not an integer \(or 'bpm' / 'end'\)"),
        (row(1, 0.6, 10), r"line 2, field 3: right drum '10' is out of range 0\.\.9"),
        (row(1, 0.6, 0, -1), r"line 2, field 4: left drum '-1' is out of range 0\.\.9"),
        (row(1, 0.6, '3.0'), r"line 2, field 3: right drum '3.0' is not an integer"),
        (row(1, 0.6, 1, 0, 8), r"line 2, field 5: right velocity '8' is out of range 0\.\.7"),
        (row(1, 0.6, 0, 1, 0, -2), r"line 2, field 6: left velocity '-2' is out of range"),
        (row(1, 0.6, 0, 0, 0, 0, 2), r"line 2, field 7: kick '2' is out of range 0\.\.1"),
        (row(1, 0.6, 0, 0, 0, 0, 0, 'y'), r"line 2, field 8: hi-hat closed 'y' is not an int"),
        (row(1, 0.6, 0, 0, 0, 0, 0, 0, 'a'), r"line 2, field 9: right offset 'a' is not a num"),
        ('1\t0.6\t0\t0\t0\t0\t0', r'line 2: an event row needs 8 to 10 fields, found 7'),
        (row(1, 0.6, 0, 0, 0, 0, 0, 0, 0, 0, 0), r'line 2: an event row needs 8 to 10 fields'),
        ('bpm\t0', r"line 2, field 2: bpm '0' is outside the limits 20\.\.400 bpm"),
        ('bpm\t-90', r"line 2, field 2: bpm '-90' is outside the limits 20\.\.400 bpm"),
        ('bpm\t0.001', r"line 2, field 2: bpm '0\.001' is outside the limits 20\.\.400 bpm"),
        ('bpm\t1e9', r"line 2, field 2: bpm '1e9' is outside the limits 20\.\.400 bpm"),
        ('bpm\t1e-308', r"line 2, field 2: bpm '1e-308' is outside the limits"),
        (
            row(1, '1e308'),
            r"line 2, field 2: beat '1e308' puts inf s after the previous row at "
            r'100 bpm; the limit is 10 s',
        ),
        (row(1, 10.001), r"line 2, field 2: beat '10\.001' puts 10 s after .* the limit is 10 s"),
        (row(10_000, 0.6), r"line 2, field 1: bar '10000' is above the limit of 9999"),
        (row('9' * 30, 0.6), r"line 2, field 1: bar '9{30}' is too large"),
        (row(1, 0.6, 0, 0, 0, 0, 0, 0, 100.5), r"line 2, field 9: right offset '100\.5' is "),
        ('bpm\tinf', r"line 2, field 2: bpm 'inf' is not a number"),
        ('bpm', r"line 2, field 2: a 'bpm' line needs exactly one value, found 0"),
        ('bpm\t100\t90', r"line 2, field 3: a 'bpm' line needs exactly one value, found 2"),
    ],
)
def test_malformed_lines_name_file_line_and_field(line, expected):
    text = score_text('bpm\t100', line, row(2, 0.6), 'end')
    with pytest.raises(ScoreError, match=rf'^groove\.txt, {expected}'):
        parse_score(text, source='groove.txt')


def test_score_error_carries_its_location():
    with pytest.raises(ScoreError) as caught:
        parse_score(score_text(row(1, 0.6), '', row(1, 0.6, 11), 'end'), source='s')
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.source, error.line_number, error.field_number) == ('s', 3, 3)
    assert 'out of range' in error.reason


def test_missing_terminator_is_an_error_unless_allowed():
    text = score_text('bpm\t100', row(1, 0.6, 1), row(1, 0.6))
    with pytest.raises(ScoreError, match=r'^cut\.txt, line 3: missing terminator: expected an '):
        parse_score(text, source='cut.txt')
    score = parse_score(text, require_terminator=False)
    assert score.terminator is Terminator.MISSING
    assert len(score.events) == 2


@pytest.mark.parametrize('text', ['', 'bpm\t100\nend\n', '# nothing\nend\n'])
def test_score_without_events_is_an_error(text):
    with pytest.raises(ScoreError, match=r'^empty: no events$'):
        parse_score(text, source='empty')


def test_velocity_mismatches_are_warnings_or_strict_errors():
    text = score_text('1\t0.6\t0\t0\t3\t0\t0\t0', '1\t0.6\t0\t4\t0\t0\t0\t0', 'end')
    score = parse_score(text, source='v')
    assert score.warnings == (
        'v, line 1, field 5: right velocity 3 is given without a right drum',
        'v, line 2, field 6: left drum 4 is struck with velocity 0',
    )
    with pytest.raises(ScoreError, match=r'^v, line 1, field 5: right velocity 3 is given'):
        parse_score(text, source='v', strict=True)


def test_start_bar_skips_earlier_rows_without_accumulating_their_time():
    text = score_text(
        'bpm\t100',
        row(1, 0.6, 1),
        row(1, 0.6, 2),
        'bpm\t50',
        row(2, 0.6, 3),
        row(3, 0.3, 4),
        'end',
    )
    score = parse_score(text, start_bar=2)
    assert [event.bar for event in score.events] == [2, 3]
    assert [event.index for event in score.events] == [0, 1]
    assert [event.line_number for event in score.events] == [5, 6]
    assert [event.time_s for event in score.events] == pytest.approx([1.2, 1.8])
    assert score.start_bar == 2


def test_start_bar_compares_bars_like_upstream_even_when_bars_repeat():
    text = score_text(row(1, 0.6, 1), row(2, 0.6, 2), row(1, 0.6, 3), row(2, 0.6, 4), 'end')
    score = parse_score(text, start_bar=2)
    assert [event.right_drum for event in score.events] == [2, 4]


def test_start_bar_still_validates_skipped_rows():
    with pytest.raises(ScoreError, match=r'line 1, field 3'):
        parse_score(score_text(row(1, 0.6, 12), row(5, 0.6), 'end'), start_bar=5)


def test_start_bar_past_the_end_is_an_error():
    with pytest.raises(ScoreError, match=r'^s: no events at or after bar 9$'):
        parse_score(score_text(row(1, 0.6, 1), 'end'), source='s', start_bar=9)


@pytest.mark.parametrize('bad', [-1, 1.5, True])
def test_invalid_start_bar_is_rejected(bad):
    with pytest.raises(ValueError, match='start_bar'):
        parse_score(score_text(row(1, 0.6), 'end'), start_bar=bad)


def test_load_score_names_the_path(tmp_path):
    path = tmp_path / 'song.txt'
    path.write_text(score_text('bpm\t100', row(1, 0.6, 1), row(1, 'abc'), 'end'))
    with pytest.raises(ScoreError, match=r'song\.txt, line 3, field 2'):
        load_score(path)
    path.write_text(score_text('bpm\t100', row(1, 0.6, 1), 'end'))
    assert load_score(path).source == str(path)


def test_format_score_writes_tempo_changes_and_optional_offsets():
    events = [
        ScoreEvent(
            0,
            bar=1,
            beat_units=0.6,
            time_s=0.6,
            bpm=100.0,
            right_drum=8,
            right_velocity=5,
            kick=True,
            hihat_closed=True,
        ),
        ScoreEvent(1, bar=1, beat_units=0.3, time_s=0.9, bpm=96.0, left_drum=1, left_velocity=3),
    ]
    assert format_score(events) == (
        'bpm\t100.0\n1\t0.6\t8\t0\t5\t0\t1\t1\nbpm\t96.0\n1\t0.3\t0\t1\t0\t3\t0\t0\nend\n'
    )
    with_offsets = format_score([dataclasses.replace(events[0], left_offset_m=0.05)])
    assert with_offsets.splitlines()[1].split('\t')[8:] == ['0.0', '5.0']


score_events = st.lists(
    st.builds(
        ScoreEvent,
        index=st.just(0),
        bar=st.integers(0, 500),
        beat_units=st.floats(0.0, 2.0, allow_nan=False, allow_infinity=False),
        time_s=st.just(0.0),
        bpm=st.sampled_from([64.5, 100.0, 160.0]) | st.floats(20.0, 400.0),
        right_drum=st.integers(0, 9),
        left_drum=st.integers(0, 9),
        right_velocity=st.integers(0, 7),
        left_velocity=st.integers(0, 7),
        kick=st.booleans(),
        hihat_closed=st.booleans(),
        right_offset_m=st.integers(-20, 20).map(lambda cm: cm * 0.01),
        left_offset_m=st.integers(-20, 20).map(lambda cm: cm * 0.01),
    ),
    min_size=1,
    max_size=40,
)


@given(score_events)
def test_random_valid_scores_round_trip_through_writer_and_parser(generated):
    events = [dataclasses.replace(event, index=index) for index, event in enumerate(generated)]
    text = format_score(events)
    score = parse_score(text)

    assert len(score.events) == len(events)
    expected_time = 0.0
    ignored = {'time_s': 0.0, 'line_number': 0, 'right_offset_m': 0.0, 'left_offset_m': 0.0}
    for written, read in zip(events, score.events, strict=True):
        expected_time += written.beat_units * 100.0 / written.bpm
        assert read.time_s == pytest.approx(expected_time, rel=1e-12, abs=1e-12)
        assert read.right_offset_m == pytest.approx(written.right_offset_m, abs=1e-12)
        assert read.left_offset_m == pytest.approx(written.left_offset_m, abs=1e-12)
        assert dataclasses.replace(read, **ignored) == dataclasses.replace(written, **ignored)
    assert format_score(parse_score(format_score(score.events)).events) == format_score(
        score.events
    )


def test_load_score_tolerates_a_byte_order_mark(tmp_path):
    path = tmp_path / 'bom.txt'
    path.write_bytes('\ufeffbpm\t90\n1\t0.6\t1\t0\t5\t0\t0\t0\nend\n'.encode())
    assert load_score(path).events[0].bpm == 90.0


def test_missing_terminator_points_at_the_last_content_line():
    with pytest.raises(ScoreError, match=r'^s, line 2: missing terminator'):
        parse_score(score_text('bpm\t100', row(1, 0.6), '', '# trailing comment', ''), 's')
