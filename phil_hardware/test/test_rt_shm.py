"""Shared-memory state exchange: seqlock + CRC, never a torn or half-written snapshot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.realtime import sleep_until
from phil_hardware.rt.shm import SnapshotLayout, StateExchange
from phil_hardware.rt.tick_stats import TickStats, percentiles


@pytest.fixture
def pair():
    layout = SnapshotLayout(3, ('can0', 'dxl'), trace_capacity=4)
    writer = StateExchange(layout)
    reader = StateExchange(layout, writer.name, create=False)
    yield layout, writer, reader
    reader.close()
    writer.close()


def test_nothing_published_reads_none(pair):
    _, _, reader = pair
    assert reader.read() is None


def test_published_values_and_text_arrive_whole(pair):
    layout, writer, reader = pair
    writer.begin_write()
    writer.values[layout.slots['position_rad']] = [0.1, 0.2, 0.3]
    writer.values[layout.index('ticks')] = 1234
    writer.values[layout.index('can0.frames_sent')] = 99
    writer.write_text('{"faults": [{"code": 1}]}')
    writer.end_write()
    values, text = reader.read()
    assert values[layout.slots['position_rad']].tolist() == [0.1, 0.2, 0.3]
    assert values[layout.index('ticks')] == 1234
    assert values[layout.index('can0.frames_sent')] == 99
    assert text == {'faults': [{'code': 1}]}


def test_a_snapshot_being_written_is_never_returned(pair):
    layout, writer, reader = pair
    writer.begin_write()
    writer.end_write()
    writer.begin_write()  # writer "dies" mid-update: sequence stays odd
    writer.values[0] = 5.0
    assert reader.read(attempts=5) is None


def test_a_payload_not_matching_its_crc_is_rejected(pair):
    layout, writer, reader = pair
    writer.begin_write()
    writer.values[0] = 1.0
    writer.end_write()
    writer.values[0] = 2.0  # changed behind the seqlock (torn on a weakly ordered CPU)
    assert reader.read(attempts=5) is None


def test_the_node_heartbeat_word_counts_beats(pair):
    _, writer, reader = pair
    assert writer.node_heartbeats() == 0
    reader.beat()
    reader.beat()
    assert writer.node_heartbeats() == 2


def test_tick_stats_summarize_a_full_window_when_asked():
    stats = TickStats(100)
    for i in range(100):
        stats.add(i * 1e-6, 2e-4)
    assert stats.pending and stats.window == 0  # recording the window computed nothing
    stats.summarize()
    assert not stats.pending
    assert stats.window == 100
    assert stats.p50_s == pytest.approx(49.5e-6)
    assert stats.max_s == pytest.approx(99e-6)
    assert stats.work_max_s == pytest.approx(2e-4)


@given(
    st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=300),
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=4),
)
def test_tick_percentiles_equal_numpys(values, quantiles):
    expected = np.percentile(np.array(values), quantiles)
    assert percentiles(np.array(values), tuple(quantiles)) == pytest.approx(expected, abs=1e-12)


def test_tick_stats_record_the_next_window_while_one_waits_and_never_lose_one():
    stats = TickStats(10)
    for _ in range(10):
        stats.add(1e-6, 1e-4)
    for _ in range(9):
        stats.add(5e-6, 3e-4)  # the waiting window is untouched
    stats.summarize()
    assert stats.max_s == pytest.approx(1e-6)
    stats.add(5e-6, 3e-4)
    for _ in range(10):  # two full windows without spare time: the older is summarized
        stats.add(7e-6, 4e-4)
    assert stats.max_s == pytest.approx(5e-6) and stats.work_max_s == pytest.approx(3e-4)
    stats.summarize()
    assert stats.max_s == pytest.approx(7e-6)


def test_sleep_until_returns_at_or_after_the_deadline():
    now = [0.0]

    def clock():
        now[0] += 0.0004
        return now[0]

    assert sleep_until(0.002, 0.01, clock) >= 0.002
