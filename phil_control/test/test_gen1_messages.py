"""The Gen-1 stream split into messages: lines, multi-line JSON blocks, bounds."""

from __future__ import annotations

import json

import pytest

from phil_control.core.gen1.messages import MAX_BLOCK_BYTES, MAX_LINE_BYTES, Gen1Splitter


def _commands(splitter: Gen1Splitter, data: bytes) -> list:
    return [(m.commands, m.error) for m in splitter.feed(data)]


def test_lines_split_on_newline_with_or_without_cr_and_blank_lines_are_skipped():
    splitter = Gen1Splitter()
    assert _commands(splitter, b'r\r\n\n  look:0,90 \np:T') == [
        (('r',), ''),
        (('look:0,90',), ''),
    ]
    assert splitter.pending_bytes == 3
    assert _commands(splitter, b'IM\n') == [(('p:TIM',), '')]


def test_a_json_block_over_several_lines_and_packets_waits_for_its_braces():
    splitter = Gen1Splitter()
    assert splitter.feed(b'{"commands": [\n"r",\n') == []
    assert splitter.feed(b'"gesture:nod", "look:0,90"]') == []
    assert _commands(splitter, b'\n}\nh\n') == [
        (('r', 'gesture:nod', 'look:0,90'), ''),
        (('h',), ''),
    ]
    assert _commands(splitter, b'{"command": "s"}\n') == [(('s',), '')]


def test_braces_inside_json_strings_do_not_close_a_block():
    splitter = Gen1Splitter()
    text = json.dumps({'commands': ['p:{', 'p:}"\\'], 'note': '}}'})
    assert _commands(splitter, text.encode() + b'\n') == [(('p:{', 'p:}"\\'), '')]


@pytest.mark.parametrize(
    ('block', 'error'),
    [
        (b'{"commands": [1, 2]}', '"commands" must be a list of strings'),
        (b'{"other": 1}', 'neither "commands"'),
        (b'{"commands": ["r",]}', 'not valid JSON'),
    ],
)
def test_a_bad_block_is_one_error_and_the_stream_goes_on(block, error):
    splitter = Gen1Splitter()
    (bad,) = splitter.feed(block + b'\n')
    assert error in bad.error and bad.commands == ()
    assert _commands(splitter, b'r\n') == [(('r',), '')]


def test_over_long_lines_and_blocks_are_dropped_with_the_bound_named():
    splitter = Gen1Splitter()
    (long_line,) = splitter.feed(b'x' * (MAX_LINE_BYTES + 1) + b'\n')
    assert f'longer than {MAX_LINE_BYTES}' in long_line.error
    messages = splitter.feed(b'{"commands": [\n' + b'"r",\n' * (MAX_BLOCK_BYTES // 5) + b']}\n')
    assert [(m.commands, m.error) for m in messages] == [
        ((), f'JSON block longer than {MAX_BLOCK_BYTES} bytes')
    ]
    assert splitter.pending_bytes == 0
    assert _commands(splitter, b'h\n') == [(('h',), '')]
