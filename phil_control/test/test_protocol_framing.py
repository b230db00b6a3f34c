"""Tests of the line framer: packet boundaries, terminators, and the line-length bound."""

from __future__ import annotations

import pytest

from phil_control.core.protocol import FramedLine, LineFramer, LineTooLong


def lines(events):
    return [event.data for event in events if isinstance(event, FramedLine)]


def test_several_lines_in_one_chunk():
    framer = LineFramer()
    assert lines(framer.feed(b'START\nREADY\nHIT|snare\n')) == [b'START', b'READY', b'HIT|snare']
    assert framer.pending_bytes == 0


def test_one_line_over_many_chunks():
    framer = LineFramer()
    assert framer.feed(b'MO') == []
    assert framer.feed(b'VE|waist') == []
    assert framer.pending_bytes == len(b'MOVE|waist')
    assert lines(framer.feed(b'|10\nGET')) == [b'MOVE|waist|10']
    assert lines(framer.feed(b'_STATUS\r\n')) == [b'GET_STATUS']


def test_crlf_and_lf_and_a_split_crlf():
    framer = LineFramer()
    assert lines(framer.feed(b'A\r\nB\nC\r')) == [b'A', b'B']
    assert lines(framer.feed(b'\n')) == [b'C']
    assert lines(framer.feed(b'\n\r\n')) == [b'', b'']


def test_line_at_the_bound_passes_and_one_byte_more_does_not():
    framer = LineFramer(8)
    assert lines(framer.feed(b'12345678\n')) == [b'12345678']
    assert framer.feed(b'123456789\nOK\n') == [LineTooLong(8), FramedLine(b'OK')]


def test_overlong_line_is_reported_once_and_skipped_to_its_newline():
    framer = LineFramer(16)
    events = []
    for _ in range(64):
        events += framer.feed(b'x' * 1000)
        assert framer.pending_bytes == 0
    assert events == [LineTooLong(16)]
    assert framer.discarding
    assert framer.feed(b'still discarded\nGET_STATUS\n') == [FramedLine(b'GET_STATUS')]
    assert not framer.discarding


def test_a_megabyte_without_newline_holds_no_more_than_the_bound():
    framer = LineFramer(4096)
    events = []
    for _ in range(256):
        events += framer.feed(b'\xff' * 4096)
        assert framer.pending_bytes <= 4096
    assert events == [LineTooLong(4096)]


def test_partial_line_is_dropped_on_reset():
    framer = LineFramer()
    framer.feed(b'HIT|sna')
    framer.reset()
    assert lines(framer.feed(b're\n')) == [b're']


def test_bound_must_be_positive():
    with pytest.raises(ValueError):
        LineFramer(0)
