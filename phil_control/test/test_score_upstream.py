"""Every upstream score parses; spot checks of the format (skipped without the data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phil_control.core.score.model import Terminator
from phil_control.core.score.parser import load_score, parse_score
from phil_control.core.score.windows import (
    SAMPLE_PERIOD_S,
    build_windows,
    count_window_samples,
)
from phil_control.core.score.writer import format_score

UPSTREAM = Path(__file__).resolve().parents[2].parent / 'shared' / 'reference' / 'upstream'
GEN2_SCORES = 'Phil-drum-robot@176f39a/drumrobot_server/data/scores'
requires_upstream = pytest.mark.skipif(
    not UPSTREAM.is_dir(), reason=f'upstream reference data not found at {UPSTREAM}'
)

# Event rows before the terminator, counted independently with `str.split` per line.
EXPECTED_EVENT_COUNTS = {
    f'{GEN2_SCORES}/BabyINeedYou.txt': 113,
    f'{GEN2_SCORES}/BasicFillin.txt': 153,
    f'{GEN2_SCORES}/DrumSolo.txt': 138,
    f'{GEN2_SCORES}/ThisIsMe.txt': 658,
    f'{GEN2_SCORES}/ToYou.txt': 771,
    f'{GEN2_SCORES}/WhySo.txt': 1473,
    'Phil-drum-robot@47210ac/drumrobot_server/data/scores/1_rock_100_beat_4-4.txt': 159,
    'Phil-drum-robot@2333430/drumrobot_server/data/scores/country/12_country_114_fill_4-4.txt': 23,
    'Phil-drum-robot@b2a9266/drumrobot_server/data/scores/test_jump.txt': 17,
    'PHIL_Control@2a5c8a1/include/codes/TIM0.txt': 654,
    'PHIL_Control@2a5c8a1/include/codes/TY_short0.txt': 287,
    'PHIL_Control@2a5c8a1/include/codes/BI0.txt': 126,
    'PHIL_Control@2a5c8a1/include/codes/test_one0.txt': 38,
    'DrumRobot2@e82a928/include/codes/Snare_0.txt': 40,
    'DrumRobot2@e82a928/include/codes/soundfb0.txt': 68,
}


def upstream_score_files():
    if not UPSTREAM.is_dir():
        return []
    return sorted(
        path.relative_to(UPSTREAM).as_posix()
        for path in UPSTREAM.rglob('*.txt')
        if 'scores' in path.parts or 'codes' in path.parts
    )


@requires_upstream
def test_every_copied_score_is_known_to_this_test():
    assert upstream_score_files() == sorted(EXPECTED_EVENT_COUNTS)


@requires_upstream
@pytest.mark.parametrize(('relative_path', 'event_count'), sorted(EXPECTED_EVENT_COUNTS.items()))
def test_upstream_score_parses(relative_path, event_count):
    score = load_score(UPSTREAM / relative_path)
    assert len(score.events) == event_count
    assert score.terminator in (Terminator.END, Terminator.NEGATIVE_BAR)
    windows = build_windows(score)
    assert len(windows) == event_count
    reparsed = parse_score(format_score(score.events))
    assert [event.time_s for event in reparsed.events] == [event.time_s for event in score.events]


@requires_upstream
def test_basic_fillin_first_hit():
    score = load_score(UPSTREAM / GEN2_SCORES / 'BasicFillin.txt')
    assert score.events[0].bpm == 100.0
    assert all(event.is_rest for event in score.events[:4])
    first_hit = next(event for event in score.events if not event.is_rest)
    assert first_hit.index == 4
    assert first_hit.time_s == pytest.approx(3.0)
    assert (first_hit.right_drum, first_hit.right_velocity) == (8, 5)
    assert (first_hit.left_drum, first_hit.left_velocity) == (0, 0)
    assert first_hit.kick and first_hit.hihat_closed
    assert first_hit.line_number == 6


@requires_upstream
def test_to_you_changes_tempo_four_times():
    score = load_score(UPSTREAM / GEN2_SCORES / 'ToYou.txt')
    assert [change.bpm for change in score.bpm_changes] == [64.5, 64.0, 65.0, 80.0, 64.0]
    assert [change.line_number for change in score.bpm_changes] == [1, 23, 68, 105, 712]
    assert score.events[0].time_s == pytest.approx(0.3 * 100 / 64.5)


@requires_upstream
def test_gen1_files_stop_at_the_negative_bar_and_default_the_tempo():
    assert load_score(UPSTREAM / 'PHIL_Control@2a5c8a1/include/codes/BI0.txt').terminator is (
        Terminator.NEGATIVE_BAR
    )
    test_one = load_score(UPSTREAM / 'PHIL_Control@2a5c8a1/include/codes/test_one0.txt')
    assert test_one.bpm_changes == ()
    assert test_one.events[0].bpm == 100.0


@requires_upstream
def test_snare_offsets_are_read_in_metres():
    score = load_score(UPSTREAM / 'DrumRobot2@e82a928/include/codes/Snare_0.txt')
    offsets = sorted({event.right_offset_m for event in score.events})
    assert offsets == pytest.approx([-0.05, 0.0, 0.05])


@requires_upstream
def test_upstream_velocity_oddities_are_warnings_not_errors():
    this_is_me = load_score(UPSTREAM / GEN2_SCORES / 'ThisIsMe.txt')
    assert len(this_is_me.warnings) == 6
    assert all('given without a right drum' in warning for warning in this_is_me.warnings)
    fill = load_score(UPSTREAM / GEN2_SCORES / 'BasicFillin.txt')
    assert any('struck with velocity 0' in warning for warning in fill.warnings)


@requires_upstream
def test_resume_from_bar_skips_earlier_rows():
    full = load_score(UPSTREAM / GEN2_SCORES / 'WhySo.txt')
    resumed = load_score(UPSTREAM / GEN2_SCORES / 'WhySo.txt', start_bar=60)
    kept = [event for event in full.events if event.bar >= 60]
    assert [event.line_number for event in resumed.events] == [e.line_number for e in kept]
    offset_s = kept[0].time_s - kept[0].beat_units * 100 / kept[0].bpm
    assert resumed.duration_s == pytest.approx(full.duration_s - offset_s)


@requires_upstream
def test_why_so_sample_total_is_conserved():
    score = load_score(UPSTREAM / GEN2_SCORES / 'WhySo.txt')
    for speed in (0.5, 1.0, 1.3, 2.0):
        total = sum(count_window_samples(build_windows(score), speed))
        assert 0 <= round(score.duration_s / SAMPLE_PERIOD_S / speed) - total <= 1
