"""In-process rclpy test of the score_player node playing: a whole play (chunks, hits, feedback,
the result, the hit log and the audio track), improvisation over the play list, a single hit.

The harness and the fake trajectory_generator are in test_score_player_support."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from test_score_player_support import (  # noqa: E402
    NS,
    READY,
    Spliced,
    _hit_count,
    _ns,
    harnesses,
    write_scores,
)

from phil_control.core.play.transfer import TRANSFER_DURATION_S  # noqa: E402
from phil_control.score_player import ticks  # noqa: E402
from phil_msgs.msg import HitEvent  # noqa: E402
from phil_msgs.srv import Trigger  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402


@pytest.fixture(scope='module')
def context():
    with ros_test_context() as ctx:
        yield ctx


@pytest.fixture(scope='module')
def scores(tmp_path_factory):
    return write_scores(tmp_path_factory.mktemp('scores'))


@pytest.fixture
def harness(context, scores):
    with harnesses(context, scores) as make:
        yield make


def test_play_publishes_chunks_hits_feedback_and_result(harness, scores, tmp_path, monkeypatch):
    # The robot clock (CLOCK_MONOTONIC) as the score player reads it for its hit log, held at
    # one reading far from the node's stamp clock (simulated here, 10 times faster).
    robot_ns = 10**18
    monkeypatch.setattr(ticks, 'time', SimpleNamespace(monotonic_ns=lambda: robot_ns))
    h = harness(log_dir=str(tmp_path / 'log'))
    with h.clock.frozen():  # the play must wait until the commanded state is reached
        h.publish_state(delay_s=0.5)
        handle = h.send('play', score='tiny')
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason
    result = response.result
    first_ns = _ns(h.chunks[0].trajectory.header.stamp)
    assert first_ns == pytest.approx(h.state_ns, abs=10)
    played = Spliced(h.chunks, first_ns)
    played.assert_no_jump()
    np.testing.assert_allclose(played.positions[-1], READY, atol=1e-9)  # DRUM END to ready
    expected = _hit_count(scores / 'tiny.txt')
    assert result.hits_played == len(h.hits) == expected
    assert result.bars_played == 3
    score_zero_ns = first_ns + int(TRANSFER_DURATION_S * NS)
    for hit in h.hits:
        assert hit.source == HitEvent.SOURCE_COMMANDED and hit.play_id == 'tiny'
        assert _ns(hit.command_time) - score_zero_ns == pytest.approx(hit.score_time_s * NS, abs=2)
    assert {hit.limb for hit in h.hits if hit.instrument == 'bass'} == {HitEvent.LIMB_RIGHT_FOOT}
    assert {hit.instrument for hit in h.hits} == {'bass', 'closed hihat', 'snare'}
    assert result.duration_s == pytest.approx(h.hits[-1].score_time_s - h.hits[0].score_time_s)
    assert result.timing.source == 'commanded' and result.timing.hits == expected
    assert result.timing.max_abs_error_s < 1e-6 and not result.resume_valid
    bars = [f.bar for f in h.feedback]
    assert bars == sorted(bars) and bars[-1] >= 3 and {f.total_bars for f in h.feedback} == {5}
    with (tmp_path / 'log' / 'hits.csv').open() as log:
        rows = list(csv.DictReader(log))
    assert len(rows) == expected and rows[0]['play_id'] == 'tiny'
    # The log is on the robot clock (like the simulator's impact log) while HitEvent stamps
    # follow the node's stamp clock: every row is written at the robot clock's reading, and
    # no hit is logged as commanded after it.
    assert {row['t'] for row in rows} == {f'{robot_ns * 1e-9:.6f}'}, rows
    assert all(float(row['command_time_s']) <= robot_ns * 1e-9 for row in rows), rows
    assert [row['instrument'] for row in rows] == [hit.instrument for hit in h.hits]
    assert h.audio.calls[:2] == [
        ('arm', scores / 'audio' / 'tiny.wav'),
        ('start_at', pytest.approx(score_zero_ns / NS, abs=1e-6)),
    ]
    assert ('stop',) not in h.audio.calls  # a play that ends normally leaves its track alone


def test_improv_chains_the_folder_and_a_missing_track_is_silent(harness, scores):
    h = harness()
    handle = h.send('play', score='quiet', improv=True)  # tiny.txt, audio track absent
    long_id = 'long'  # long.txt is next in name order after tiny.txt; broken.txt is skipped
    assert h.spin_until(lambda: any(hit.play_id == long_id for hit in h.hits))
    assert h.call('stop', Trigger.Request()).accepted
    result = h.result(handle).result
    assert 'stopped' in result.reason
    assert [hit.play_id for hit in h.hits[:2]] == ['quiet', 'quiet']
    assert result.hits_played == len(h.hits) > _hit_count(scores / 'tiny.txt')
    Spliced(h.chunks, _ns(h.chunks[0].trajectory.header.stamp)).assert_no_jump()
    assert h.audio.calls == [('arm', None), ('stop',)]


def test_hit_goal_strikes_once(harness):
    h = harness()
    response = h.result(h.send('hit', instrument='snare'))
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason
    assert len(h.hits) == 1
    hit = h.hits[0]
    assert (hit.instrument, hit.limb, hit.velocity) == ('snare', HitEvent.LIMB_LEFT_HAND, 5)
    assert hit.play_id == '' and _ns(response.result.impact_time) == _ns(hit.command_time)
    played = Spliced(h.chunks, _ns(h.chunks[0].trajectory.header.stamp))
    played.assert_no_jump()
    np.testing.assert_allclose(played.positions[-1], READY, atol=1e-9)
    progress = [f.progress for f in h.feedback]
    assert progress and progress == sorted(progress) and 0.0 <= progress[0] <= progress[-1] <= 1
