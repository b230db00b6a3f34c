"""The pure functions behind `phil plot`: matching commanded hits to detected impacts, the hit
timing statistics and their reports, tracking and lateness statistics, the joint groups of the
figures. The synthetic run's hits and impacts are test_plots'."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from test_plots import EXTRA_IMPACTS, HITS, NAMES, T0

from phil_bringup.plots.joint_figures import joint_groups
from phil_bringup.plots.stats import (
    format_timing,
    hit_timing,
    lateness_summary,
    match_nearest,
    tracking_stats,
)


def test_matching_takes_the_nearest_unused_impact_within_the_window():
    pairs = match_nearest([1.0, 1.1, 2.0, 3.0], [2.03, 1.02, 1.09, 3.2, 1.0999])
    assert pairs == [(0, 1), (1, 4), (2, 0)]  # 3.0 missed (0.2 s away); 1.09 left over
    assert match_nearest([0.0], [0.05]) == [(0, 0)]  # the window is inclusive
    assert match_nearest([0.0], [-0.02, 0.02]) == [(0, 0)]  # tie: the earlier one
    assert match_nearest([], [1.0]) == [] and match_nearest([1.0], []) == []
    with pytest.raises(ValueError):
        match_nearest([math.nan], [1.0])


def test_timing_statistics_equal_hand_computed_values():
    report = hit_timing(
        [h[0] for h in HITS],
        [T0 + h[2] for h in HITS],
        [h[0] for h in HITS] + [e[0] for e in EXTRA_IMPACTS],
        [T0 + h[2] + h[3] for h in HITS] + [T0 + e[2] for e in EXTRA_IMPACTS],
    )
    by_name = {timing.instrument: timing for timing in report.instruments}
    assert list(by_name) == ['bass', 'snare', 'closed hihat', 'ride']  # HIT-table order
    snare, bass, hihat, ride = (by_name[n] for n in ('snare', 'bass', 'closed hihat', 'ride'))
    assert (snare.commanded, snare.detected, snare.matched, snare.missed, snare.extra) == (
        4,
        4,
        4,
        0,
        0,
    )
    assert snare.stats.mean_error_s == pytest.approx(0.005)
    assert snare.stats.p99_abs_error_s == pytest.approx(0.00794)  # 6 + 0.97 * (8 - 6) ms
    assert snare.stats.max_abs_error_s == pytest.approx(0.008)
    assert snare.stats.drift_s == pytest.approx(0.006)  # 8 ms/s slope over 0.75 s
    assert bass.stats.mean_error_s == pytest.approx(-0.002 / 3)
    assert bass.stats.p99_abs_error_s == pytest.approx(0.00298)  # 2 + 0.98 * (3 - 2) ms
    assert bass.stats.max_abs_error_s == pytest.approx(0.003)
    assert (hihat.matched, hihat.missed, hihat.extra) == (1, 1, 1)
    assert hihat.errors_s == pytest.approx([0.010])
    assert (ride.commanded, ride.detected, ride.extra) == (0, 1, 1)
    assert math.isnan(ride.stats.mean_error_s)
    total = report.total
    assert (total.commanded, total.detected, total.matched, total.missed, total.extra) == (
        9,
        10,
        8,
        1,
        2,
    )  # the snare impact 49 s after the last hit is not counted
    assert total.stats.mean_error_s == pytest.approx(0.0035)
    assert total.stats.max_abs_error_s == pytest.approx(0.010)
    data = report.as_dict()
    assert data['instruments']['ride']['mean_error_s'] is None
    json.dumps(data, allow_nan=False)
    text = format_timing(report)
    assert 'snare' in text and '+5.00' in text and '7.94' in text
    in_ms = report.in_ms()  # the benchmarks' JSON lines
    assert in_ms['instruments']['snare']['p99_abs_error_ms'] == 7.94
    assert in_ms['instruments']['ride']['mean_error_ms'] is None
    assert in_ms['all']['detected_share'] == round(8 / 9, 3) and 'mean_error_s' not in in_ms['all']


def test_tracking_and_lateness_statistics():
    rms, largest = tracking_stats([1.0, 2.0, math.nan, 4.0], [1.0, 1.0, 0.0, 2.0])
    assert rms == pytest.approx(math.sqrt(5 / 3)) and largest == pytest.approx(2.0)
    assert all(math.isnan(v) for v in tracking_stats([math.nan], [0.0]))
    summary = lateness_summary(np.arange(1, 101) * 1e-6)
    assert summary['count'] == 100 and summary['max_s'] == pytest.approx(100e-6)
    assert summary['p50_s'] == pytest.approx(50.5e-6)
    assert summary['p99_s'] == pytest.approx(99.01e-6)


def test_joint_groups_cover_every_joint_once():
    groups = joint_groups(NAMES)
    assert [title for title, _, _ in groups] == [
        'Right arm',
        'Left arm',
        'Waist and head',
        'Pedals',
    ]
    assert sorted(i for _, indices, _ in groups for i in indices) == list(range(13))
    assert joint_groups(('a', 'b'))[0][0] == 'Other'
