"""In-process rclpy test of the score_player node's controls during a play: pause and resume
at the saved bar, a speed change, stop and cancel.

The harness and the fake trajectory_generator are in test_score_player_support."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from test_score_player_support import (  # noqa: E402
    READY,
    SPEED,
    Spliced,
    _hit_count,
    _ns,
    harnesses,
    write_scores,
)

from phil_control.core.play.transfer import TRANSFER_DURATION_S  # noqa: E402
from phil_msgs.srv import SetSpeed, Trigger  # noqa: E402
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


def test_pause_saves_the_bar_and_resume_starts_there(harness):
    h = harness()
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: any(hit.bar == 1 for hit in h.hits))
    reply = h.call('pause', Trigger.Request())
    assert reply.accepted and reply.state == 'PLAYING'
    assert not h.call('pause', Trigger.Request()).accepted  # already pausing
    response = h.result(handle)
    result = response.result
    assert response.status == GoalStatus.STATUS_ABORTED and 'paused' in result.reason
    assert result.resume_valid and result.resume_bar >= 2
    assert max(hit.bar for hit in h.hits) == result.resume_bar - 1
    Spliced(h.chunks, _ns(h.chunks[0].trajectory.header.stamp)).assert_no_jump()
    assert h.audio.calls[-1] == ('stop',)
    h.hits.clear()
    h.audio.calls.clear()
    response = h.result(h.send('play', score='long', resume=True, start_bar=result.resume_bar))
    assert response.result.success, response.result.reason
    assert h.hits[0].bar == result.resume_bar and h.hits[-1].bar == 8
    assert h.audio.calls == [('arm', None)]  # RESUME plays without audio


def test_speed_change_keeps_score_time_and_continuity(harness, scores):
    h = harness()
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: len(h.hits) >= 3)
    rejected = h.call('speed', SetSpeed.Request(speed=2.5))
    assert not rejected.accepted and '2.5' in rejected.reason and rejected.speed == 1.0
    before = len(h.chunks)
    reply = h.call('speed', SetSpeed.Request(speed=SPEED))
    assert reply.accepted and reply.speed == SPEED
    result = h.result(handle).result
    assert result.success and h.node.session.guarded_windows == 0
    first_ns = _ns(h.chunks[0].trajectory.header.stamp)
    played = Spliced(h.chunks, first_ns)
    played.assert_no_jump()
    replaced = [msg for msg in h.chunks[before:] if msg.replace]
    assert len(replaced) == 1
    cut_s = played.seconds(_ns(replaced[0].trajectory.header.stamp))
    cut_score_s = cut_s - TRANSFER_DURATION_S  # speed 1.0 until the cut
    assert 0.0 < cut_score_s < h.hits[-1].score_time_s
    for hit in h.hits:
        speed = 1.0 if hit.score_time_s <= cut_score_s else SPEED
        expected_s = cut_s + (hit.score_time_s - cut_score_s) / speed
        assert played.seconds(_ns(hit.command_time)) == pytest.approx(expected_s, abs=1e-6)
    span = h.hits[-1].score_time_s - h.hits[0].score_time_s
    assert result.hits_played == len(h.hits) == _hit_count(scores / 'long.txt')
    assert result.duration_s == pytest.approx(
        span - (h.hits[-1].score_time_s - cut_score_s) * (1 - 1 / SPEED)
    )
    assert result.timing.max_abs_error_s < 1e-6


def test_stop_goes_to_ready_and_cancel_stops(harness):
    h = harness()
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: len(h.hits) >= 2)
    reply = h.call('stop', Trigger.Request())
    assert reply.accepted
    result = h.result(handle).result
    assert not result.success and 'stopped' in result.reason and not result.resume_valid
    played = Spliced(h.chunks, _ns(h.chunks[0].trajectory.header.stamp))
    played.assert_no_jump()
    np.testing.assert_allclose(played.positions[-1], READY, atol=1e-9)
    assert h.audio.calls[-1] == ('stop',)
    assert not h.call('stop', Trigger.Request()).accepted  # nothing playing any more
    second = len(h.chunks)
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: h.feedback and h.feedback[-1].score_time_s > 1.0)
    cancel = handle.cancel_goal_async()
    assert h.spin_until(cancel.done)
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_CANCELED
    assert response.result.reason == 'cancelled'
    played = Spliced(h.chunks[second:], _ns(h.chunks[second].trajectory.header.stamp))
    played.assert_no_jump()
    np.testing.assert_allclose(played.positions[-1], READY, atol=1e-9)
