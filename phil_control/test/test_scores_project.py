"""The project's own scores and play list: format, musical sense, and playability end to end."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from phil_control.core.play import PlayRobot, PlaySession, next_score_in_folder
from phil_control.core.play.window_arms import ELBOW_TRACKING_MARGIN_DEG
from phil_control.core.score import Hand, load_play_list, load_score
from phil_description.core import default_robot_model

SCORES = Path(__file__).resolve().parents[2] / 'scores'
SCORE_FILES = sorted(SCORES.glob('*/*.txt'))
# Music (the calibration score strikes each instrument alone: not music, held to the rest).
MUSIC_FILES = [path for path in SCORE_FILES if path.parent.name != 'calibration']
PLAY_LIST = load_play_list(SCORES / 'play_list.yaml')
PLAY_IDS = {PLAY_LIST.id_of(path): path for path in SCORE_FILES}  # every file has an id
REQUIRED_IDS = {'rock', 'funk', 'shuffle', 'halftime', 'sixteenths', 'fills', 'solo', 'tempo'}
CRASHES = {7, 8}
BAR_BEAT_UNITS = 2.4
FK_TOLERANCE_M = 0.002


@pytest.fixture(scope='module')
def model():
    return default_robot_model()


@pytest.fixture(scope='module')
def robot(model):
    return PlayRobot.from_model(model)


def _bars(score):
    bars = defaultdict(list)
    for event in score.events:
        bars[event.bar].append(event)
    return bars


def _beat_position(event, bar_events):
    return round((event.time_s - bar_events[0].time_s) * event.bpm / 100.0, 6)


def test_play_list_maps_the_short_ids_to_project_scores():
    play_list = load_play_list(SCORES / 'play_list.yaml')
    assert set(play_list) >= REQUIRED_IDS
    for entry in play_list.entries.values():
        assert entry.audio == '' and entry.score_path in [p.resolve() for p in SCORE_FILES]
    assert {entry.score_path for entry in play_list.entries.values()} == {
        path.resolve() for path in SCORE_FILES
    }
    assert None not in PLAY_IDS and len(PLAY_IDS) == len(SCORE_FILES)


def test_genre_folders_hold_scores_for_improv():
    folders = defaultdict(list)
    for path in SCORE_FILES:
        folders[path.parent.name].append(path)
    assert len(SCORE_FILES) >= 8 and len(folders['rock']) >= 2
    assert next_score_in_folder(SCORES / 'rock', SCORES / 'rock' / 'rock_beat.txt').name == (
        'rock_drive.txt'
    )


@pytest.mark.parametrize('path', SCORE_FILES, ids=lambda p: f'{p.parent.name}/{p.stem}')
def test_score_is_in_the_upstream_text_format(path):
    lines = [line for line in path.read_text().split('\n') if line.strip()]
    assert lines[0].split('\t')[0] == 'bpm' and lines[-1] == 'end'
    rows = [line for line in lines if line.split('\t')[0] not in ('bpm', 'end')]
    assert all(len(line.split('\t')) == 8 for line in rows)
    score = load_score(path, strict=True)
    assert not score.warnings
    played_bars = {e.bar for e in score.events if not e.is_rest}
    assert len(played_bars) >= 8


@pytest.mark.parametrize('path', MUSIC_FILES, ids=lambda p: f'{p.parent.name}/{p.stem}')
def test_score_is_musically_sensible(path):
    score = load_score(path)
    bars = _bars(score)
    downbeats = [events[0] for events in bars.values()]
    crash_bars = [
        events for events in bars.values() if events[0].right_drum in CRASHES and events[0].kick
    ]
    assert len(crash_bars) >= 2  # crashes on downbeats
    for before, after in zip(downbeats, downbeats[1:], strict=False):
        assert (after.time_s - before.time_s) * after.bpm / 100 == pytest.approx(
            BAR_BEAT_UNITS, abs=1e-6
        ) or after.bpm != before.bpm
    for events in bars.values():
        for event in events:
            assert event.left_drum not in (5, 6, 9)  # cymbal ride hand is right
            if event.right_drum in CRASHES or event.left_drum in CRASHES:
                position = _beat_position(event, events)  # crashes on a beat, with kick
                assert event.kick and round(position / 0.6, 6) in (0.0, 1.0, 2.0, 3.0)
    played = [events for events in bars.values() if any(not e.is_rest for e in events)]
    assert all(any(e.kick for e in events) for events in played)
    genre = path.parent.name
    if genre in ('rock', 'funk', 'sixteenths', 'fills', 'tempo', 'shuffle', 'halftime'):
        backbeat = {0.6, 1.8} if genre != 'halftime' else {1.2}
        grooving = [
            events
            for events in played
            if {_beat_position(e, events) for e in events if e.left_drum == 1} >= backbeat
        ]
        assert len(grooving) >= 0.6 * len(played)
        timekeeping = [e for events in played for e in events if e.right_drum in (5, 6, 9)]
        assert len(timekeeping) >= 4 * len(played)


def test_tempo_score_changes_tempo_midway():
    score = load_score(SCORES / 'tempo' / 'tempo_change.txt')
    assert len({change.bpm for change in score.bpm_changes}) >= 2
    assert score.bpm_changes[-1].first_event_index > len(score.events) // 3


@pytest.mark.parametrize('play_id', sorted(PLAY_IDS, key=str))
def test_every_project_score_is_playable(robot, model, play_id):
    path = PLAY_IDS[play_id]
    session = PlaySession(robot, PLAY_LIST)
    now = 0.0
    chunks = session.start(play_id, now_s=now, current_positions_rad=robot.ready_rad)
    while not session.finished(now):
        now += 0.25
        chunks += session.poll(now)
    assert session.aborted is None and session.guarded_windows == 0
    for before, after in zip(chunks, chunks[1:], strict=False):  # chunks splice exactly
        assert after.times_s[0] == before.times_s[-1]
        np.testing.assert_array_equal(after.positions_rad[0], before.positions_rad[-1])
        np.testing.assert_array_equal(after.velocities_rad_s[0], before.velocities_rad_s[-1])
    times = np.concatenate([chunks[0].times_s[:1]] + [c.times_s[1:] for c in chunks])
    positions = np.concatenate(
        [chunks[0].positions_rad[:1]] + [c.positions_rad[1:] for c in chunks]
    )
    velocities = np.concatenate(
        [chunks[0].velocities_rad_s[:1]] + [c.velocities_rad_s[1:] for c in chunks]
    )
    assert np.all(np.diff(times) > 0)
    below = positions < robot.soft_lower_rad - 1e-12
    above = positions > robot.soft_upper_rad + 1e-12
    assert not (below | above).any(), [
        robot.joint_names[i] for i in np.flatnonzero((below | above).any(axis=0))
    ]
    # The elbows keep their tracking margin below the soft limit (measured past the hard limit,
    # 0.1 deg further, latches a fault).
    for elbow in ('right_elbow', 'left_elbow'):
        column = robot.index(elbow)
        ceiling = robot.soft_upper_rad[column] - math.radians(ELBOW_TRACKING_MARGIN_DEG)
        assert positions[:, column].max() < ceiling, elbow
    ratio = np.abs(velocities).max(axis=0) / robot.velocity_limit_rad_s
    assert np.all(ratio <= 1.0), dict(zip(robot.joint_names, ratio.round(2), strict=True))
    right_tips, left_tips = model.stick_tip_positions(positions)
    hits = session.commanded_hits
    expected = sum(
        bool(e.right_drum) + bool(e.left_drum) + e.kick for e in load_score(path).events
    )
    assert len(hits) == expected
    rows = np.searchsorted(times, [hit.command_time_s for hit in hits])
    for hit, row in zip(hits, rows, strict=True):
        assert times[row] == hit.command_time_s  # a sample at every hit
        if hit.hit.hand is Hand.KICK:
            assert positions[row, robot.index('right_pedal')] == pytest.approx(math.radians(-20))
            continue
        tip = (right_tips if hit.hit.hand is Hand.RIGHT else left_tips)[row]
        target = robot.target(hit.hit.hand.value, hit.hit.instrument_id).position_m
        assert np.linalg.norm(tip - target) < FK_TOLERANCE_M
