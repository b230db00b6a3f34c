"""In-process rclpy test of what ends or refuses a score_player goal: goals from outside the
graph, bad goals, paths instead of play ids, a chunk the trajectory_generator refused, the
hardware's latch, exceptions in the node; and the configuration's defaults and checks.

The harness and the fake trajectory_generator are in test_score_player_support."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from test_score_player_support import (  # noqa: E402
    KEY,
    NS,
    PLAY_IDS,
    READY,
    Spliced,
    _ns,
    harnesses,
    write_score,
    write_scores,
)

from phil_control.core.score import load_play_list  # noqa: E402
from phil_control.score_player.config import (  # noqa: E402
    PARAMETERS,
    SOURCE_SCORES_DIR,
    Config,
    default_play_list,
)
from phil_control.score_player.motion_stops import MAX_STARTS_AGAIN  # noqa: E402
from phil_msgs.action import Play  # noqa: E402
from phil_msgs.msg import Fault, HardwareStatus  # noqa: E402
from phil_ros.graph_safety import signed_by, signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED  # noqa: E402
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


def test_goals_from_outside_the_graph_are_refused_and_chunks_go_out_signed(harness):
    h = harness()
    future = h.actions['play'].send_goal_async(Play.Goal(score='tiny'))  # a random goal id
    assert h.spin_until(future.done)
    response = h.result(future.result())
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'only from the behavior planner' in response.result.reason
    assert h.chunks == []
    assert h.result(h.send('play', score='tiny')).result.success
    assert h.chunks and all(signed_by(KEY, chunk) for chunk in h.chunks)


def test_bad_goals_end_with_a_reason_and_move_nothing(harness, scores):
    h = harness()
    cases = [
        ('play', {'score': 'nope'}, ["'nope'", 'tiny']),
        ('play', {'score': '/nonexistent/score.txt'}, ['/nonexistent/score.txt', 'not a play id']),
        ('play', {'score': 'tiny', 'speed': 3.0}, ['speed', '3.0']),
        ('play', {'score': 'broken'}, ['broken.txt', 'line 2']),
        ('play', {'score': 'tiny', 'start_bar': 40}, ['40']),
        ('play', {'score': '', 'resume': True}, ['resume point']),
        ('hit', {'instrument': 'cowbell'}, ['cowbell']),
        ('hit', {'instrument': 'bass', 'hand': 'left'}, ['bass', 'pedal']),
    ]
    for action, fields, words in cases:
        response = h.result(h.send(action, **fields))
        assert response.status == GoalStatus.STATUS_ABORTED, fields
        assert not response.result.success
        assert all(word in response.result.reason for word in words), response.result.reason
    h.spin_until(lambda: h.chunks, 0.2)
    assert h.chunks == [] and h.hits == [] and h.audio.calls == []


MARKER = 'outside-the-play-list-3f9c1'


def test_a_path_is_refused_with_the_valid_ids_and_never_opened(harness, scores, tmp_path, capfd):
    secret = tmp_path / 'secret.txt'  # a playable score outside the play list's folder
    write_score(secret)
    secret.write_text(f'# {MARKER}\n' + secret.read_text())
    h = harness()
    requests = [
        str(secret),
        str(scores / 'tiny.txt'),
        'tiny.txt',
        f'../{tmp_path.name}/secret',
        '/etc/passwd',
        '/proc/self/environ',
        '../../../../etc/hostname',
        'nope',
    ]
    reasons = []
    for score in requests:
        response = h.result(h.send('play', score=score))
        assert response.status == GoalStatus.STATUS_ABORTED, score
        reasons.append(response.result.reason)
        assert all(play_id in reasons[-1] for play_id in PLAY_IDS), reasons[-1]
        assert ('not a play id' if '/' in score else 'unknown play id') in reasons[-1]
    h.spin_until(lambda: h.chunks, 0.2)
    assert h.chunks == [] and h.hits == [] and h.audio.calls == []
    logged = ''.join(capfd.readouterr())
    assert 'secret.txt' in logged  # the refusals were logged, without the file's content
    assert MARKER not in logged and all(MARKER not in reason for reason in reasons)
    assert os.environ['PATH'] not in logged + ''.join(reasons)


def test_a_refused_chunk_ends_the_play_with_the_reason_and_nothing_more_moves(harness):
    h = harness()
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: len(h.hits) >= 2)
    # Late, but not the first chunk: the robot already plays this start, it cannot restart.
    h.refuse(h.chunks[6], 'LATE', 'starts in the past: 0.2 s')
    response = h.ended(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert f'refused chunk {h.chunks[6].sequence}: starts in the past' in response.result.reason
    h.spin_until(lambda: False, 0.5)  # chunks already in flight arrive
    sent = len(h.chunks)
    h.spin_until(lambda: False, 1.0)  # 10 s of play time at this clock
    assert len(h.chunks) == sent  # no DRUM END that could not join
    assert h.audio.calls[-1] == ('stop',)
    assert h.result(h.send('play', score='tiny')).result.success  # the node plays on


def test_a_hit_whose_first_chunk_came_too_late_starts_again_later_and_says_so(harness):
    """The machine was too busy to deliver the first chunk before its start: nothing moved, so
    the HIT starts again, later by as much, and strikes once; the refusals of the first
    start's other chunks (they continue a refused chunk) do not end it."""
    h = harness()
    with h.clock.frozen():  # the HIT waits for the test's refusals
        handle, first = h.sent_hit(instrument='snare')
        h.clock.stall(0.4)
        h.refuse(first[0], 'LATE', 'starts in the past: 0.3 s')
        h.refuse(first[1], 'DISCONTINUOUS', 'it continues a refused chunk')
        again = h.hit_chunks_after(len(h.chunks))
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason
    assert 'started again 0.300 s late: its first chunk reached' in response.result.reason
    assert min(c.sequence for c in again) > max(c.sequence for c in first)
    # 0.3 s past its start when refused: it starts again 0.3 s later than the margin would.
    delay_ns = _ns(again[0].trajectory.header.stamp) - _ns(first[0].trajectory.header.stamp)
    assert delay_ns == pytest.approx((0.4 + 0.3) * NS, abs=1000)
    assert len(h.hits) == 1
    assert _ns(response.result.impact_time) == _ns(h.hits[0].command_time)
    Spliced(again, _ns(again[0].trajectory.header.stamp)).assert_no_jump()


def test_a_first_chunk_that_no_longer_joins_the_commanded_state_starts_again_from_it(harness):
    """Just after a RESET the commanded state follows the joints settling on the hardware's
    hold, so it can move on between the state a start was planned from and its first chunk's
    arrival: the trajectory generator refuses that chunk. Nothing of the start moved, so the
    HIT starts again from the newest commanded state and strikes once."""
    h = harness()
    with h.clock.frozen():
        handle, first = h.sent_hit(instrument='snare')
        settled = READY + 0.004
        h.publish_state(positions_rad=settled)
        h.refuse(
            first[0],
            'DISCONTINUOUS',
            'left_wrist position at the chunk start is 0.8286 rad, the commanded position is '
            '0.8328 rad (tolerance 0.001)',
        )
        h.refuse(first[1], 'DISCONTINUOUS', 'it continues a refused chunk')
        again = h.hit_chunks_after(len(h.chunks))
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason
    assert response.result.reason.startswith('started again: the commanded state moved on')
    assert min(c.sequence for c in again) > max(c.sequence for c in first)
    np.testing.assert_allclose(again[0].trajectory.points[0].positions, settled, atol=1e-9)
    assert len(h.hits) == 1


def test_a_first_chunk_that_does_not_join_an_unchanged_commanded_state_ends_the_goal(harness):
    """No newer commanded state came since the start was planned: starting again would send
    the same motion, so the goal ends with the refusal."""
    h = harness()
    with h.clock.frozen():
        handle, first = h.sent_hit(instrument='snare')
        h.refuse(first[0], 'DISCONTINUOUS', 'left_wrist position at the chunk start is 0.8286')
        response = h.ended(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert f'refused chunk {first[0].sequence}: left_wrist position' in response.result.reason
    assert not h.hits


@pytest.mark.parametrize('seen', [True, False], ids=['latch-seen', 'latch-unseen'])
def test_a_goal_made_before_a_latch_is_dropped_however_late_it_comes(harness, seen):
    """The planner made the goal, then the hardware latched (and maybe a RESET came) before
    the goal reached us: nothing decided before a latch moves the robot after it, so it is
    refused with the reason and nothing moves. A goal made after the RESET plays."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    made_before = signed_goal_id(KEY)
    latched = HardwareStatus(lifecycle_state='active', estop=True)
    latched.header.stamp.sec, latched.header.stamp.nanosec = divmod(time.time_ns(), NS)
    reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
    reset.last_reset.sec, reset.last_reset.nanosec = divmod(time.time_ns(), NS)
    for status in [latched, reset] if seen else [reset]:
        statuses.publish(status)
        assert h.spin_until(lambda s=status: h.node._hardware_seen == s)
    response = h.result(h.send('play', goal_uuid=made_before, score='tiny'))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.reason.startswith('dropped: decided before the hardware latched')
    h.spin_until(lambda: h.chunks, 0.2)
    assert h.chunks == []
    response = h.result(h.send('play', score='tiny'))
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason


@pytest.mark.parametrize('seen', [True, False], ids=['latch-seen', 'latch-unseen'])
def test_a_goal_that_began_after_the_reset_plays_on_when_its_status_comes_late(harness, seen):
    """The status that counts a RESET can reach us after the next goal began (the planner
    heard it first and sent the goal): that goal's motion went out after the RESET, so the
    latch did not drop it, whether or not its status reached us."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    statuses.publish(HardwareStatus(lifecycle_state='active', estop=seen))
    assert h.spin_until(lambda: h.node._hardware_seen is not None)
    reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
    reset.last_reset.sec, reset.last_reset.nanosec = divmod(time.time_ns(), NS)
    handle = h.send('play', score='tiny')
    reset.header.stamp.sec, reset.header.stamp.nanosec = divmod(h.clock(), NS)
    statuses.publish(reset)
    assert h.spin_until(lambda: h.node._hardware_seen.resets_granted == 1)
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason
    assert response.result.hits_played > 0


def test_a_start_late_again_and_again_ends_the_goal_with_the_reason(harness):
    h = harness()
    with h.clock.frozen():
        handle, start = h.sent_hit(instrument='snare')
        for late in range(MAX_STARTS_AGAIN + 1):
            h.clock.stall(0.4)
            count = len(h.chunks)
            h.refuse(start[0], 'LATE', 'starts in the past: 0.3 s')
            if late < MAX_STARTS_AGAIN:
                start = h.hit_chunks_after(count)
        response = h.ended(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'starts in the past' in response.result.reason
    assert not h.hits


def test_the_hardware_latch_ends_the_play_and_no_later_hit_is_reported(harness):
    """What the motors did not play is not a hit: after the latch nothing is reported, the
    play ends at once with the reason and keeps a resume point."""
    h = harness()
    latch = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: any(hit.bar >= 2 for hit in h.hits))
    with h.clock.frozen():  # no hit comes due while the status is on its way
        latched_ns = h.clock()
        status = HardwareStatus(lifecycle_state='active', estop=True)
        fault = Fault(code=Fault.CODE_ESTOP, reason='emergency stop (ESTOP word)')
        fault.stamp.sec, fault.stamp.nanosec = divmod(latched_ns, NS)
        status.faults = [fault]
        latch.publish(status)
        response = h.ended(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'the hardware latched: emergency stop' in response.result.reason
    h.spin_until(lambda: False, 1.0)  # 10 s of play time at this clock
    assert h.hits and max(_ns(hit.command_time) for hit in h.hits) <= latched_ns
    assert response.result.hits_played == len(h.hits)
    played_bars = {hit.bar for hit in h.hits}
    assert response.result.resume_valid and response.result.resume_bar >= max(played_bars)
    assert h.audio.calls[-1] == ('stop',)


def test_a_latch_that_came_and_went_unseen_ends_the_play_at_the_status_before_it(harness):
    """ESTOP and at once RESET: the only status that reaches us counts the RESET. Nothing after
    the status before it is reported as played."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: any(hit.bar >= 2 for hit in h.hits))
    with h.clock.frozen():  # no hit comes due while the statuses are on their way
        clear = HardwareStatus(lifecycle_state='active')
        clear.header.stamp.sec, clear.header.stamp.nanosec = divmod(h.clock(), NS)
        statuses.publish(clear)
        assert h.spin_until(lambda: h.node._hardware_seen is not None)
        reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
        reset.last_reset.sec, reset.last_reset.nanosec = divmod(time.time_ns(), NS)
        statuses.publish(reset)
        response = h.ended(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'the hardware latched and a RESET cleared it' in response.result.reason
    h.spin_until(lambda: False, 1.0)  # 10 s of play time at this clock
    assert h.hits and max(_ns(hit.command_time) for hit in h.hits) <= _ns(clear.header.stamp)


def test_an_exception_while_starting_aborts_the_goal_and_the_node_plays_on(harness, monkeypatch):
    h = harness()

    def broken_start(*_args, **_kwargs):
        raise RuntimeError('generator exploded')

    monkeypatch.setattr(h.node.session, 'start', broken_start)
    response = h.result(h.send('play', score='tiny'))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.reason == "internal error: RuntimeError: 'generator exploded'"
    assert h.chunks == []
    monkeypatch.undo()
    response = h.result(h.send('play', score='tiny'))
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason


def test_an_exception_in_the_timer_ends_the_play_at_ready_and_the_node_plays_on(
    harness, monkeypatch
):
    h = harness()
    poll, calls = h.node.session.poll, []

    def failing_poll(now_s):
        calls.append(now_s)
        if len(calls) == 20:  # a tick during DRUM START
            raise RuntimeError('window exploded')
        return poll(now_s)

    monkeypatch.setattr(h.node.session, 'poll', failing_poll)
    response = h.result(h.send('play', score='long'))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.reason == "internal error: RuntimeError: 'window exploded'"
    Spliced(h.chunks, _ns(h.chunks[0].trajectory.header.stamp)).assert_no_jump()  # to ready
    assert h.audio.calls[-1] == ('stop',)
    monkeypatch.undo()
    # the goal ended at once; the next play can start once DRUM END has reached ready
    assert h.spin_until(lambda: h.node.session.finished(h.node._now_s()))
    response = h.result(h.send('play', score='tiny'))
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason


def test_default_play_list_is_the_workspace_one():
    values = {name: default for name, (default, _) in PARAMETERS.items()}
    config = Config.from_values(values)  # installed scores, else the source tree's
    assert config.play_list in (SOURCE_SCORES_DIR / 'play_list.yaml', default_play_list())
    assert 'rock' in load_play_list(config.play_list)
    assert config.audio_dir == config.play_list.parent / 'audio'
    with pytest.raises(ValueError, match='play_list'):
        Config.from_values({**values, 'play_list': '/nonexistent.yaml'})
    with pytest.raises(ValueError, match='poll_period_s'):
        Config.from_values({**values, 'poll_period_s': 0.0})
    with pytest.raises(ValueError, match='parameter motion_lead_s'):
        Config.from_values({**values, 'motion_lead_s': 0.5})
    with pytest.raises(ValueError, match='parameter pedal_lead_s'):
        Config.from_values({**values, 'pedal_lead_s': math.nan})
    assert Config.from_values({**values, 'pedal_lead_s': -0.001}).pedal_lead_s == -0.001
