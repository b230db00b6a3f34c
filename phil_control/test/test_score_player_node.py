"""In-process rclpy test of the score_player node against a small fake trajectory_generator.

The node runs the real play core. Its clock runs 10 times faster than real time (injected), so
a play of DRUM START + three bars + DRUM END takes about 2 s; nothing here asserts real-time
timing, only stamps and their relations.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from phil_control.core.play.timing import sample_hermite  # noqa: E402
from phil_control.core.play.transfer import TRANSFER_DURATION_S  # noqa: E402
from phil_control.core.score import load_play_list, load_score, write_play_list  # noqa: E402
from phil_control.score_player.config import (  # noqa: E402
    PARAMETERS,
    SOURCE_SCORES_DIR,
    Config,
    default_play_list,
)
from phil_control.score_player.node import ScorePlayer  # noqa: E402
from phil_description.core import default_robot_model  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Hit, Play  # noqa: E402
from phil_msgs.msg import Fault, HardwareStatus, HitEvent, TrajectoryChunk  # noqa: E402
from phil_msgs.srv import SetSpeed, Trigger  # noqa: E402
from phil_ros.graph_safety import signed_by, signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED, RELIABLE_QUEUE  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

MODEL = default_robot_model()
READY = MODEL.poses['ready']
SPEEDUP = 10.0
NS = 1_000_000_000
SPEED = 1.25  # the tiny score needs no velocity guard at this speed
KEY = GraphKey.from_environment()  # the graph key the node under test reads (conftest)


def _ns(stamp) -> int:
    return stamp.sec * NS + stamp.nanosec


class FastClock:
    """CLOCK_MONOTONIC running SPEEDUP times faster (ns); `frozen` stops it for a while, so a
    service call is handled at the instant the test decided to make it."""

    def __init__(self) -> None:
        self._real = time.monotonic_ns()
        self._base = self._real
        self._frozen: int | None = None

    def __call__(self) -> int:
        if self._frozen is not None:
            return self._frozen
        return self._base + int((time.monotonic_ns() - self._real) * SPEEDUP)

    @contextlib.contextmanager
    def frozen(self):
        self._frozen = self()
        try:
            yield
        finally:
            self._base, self._real = self._frozen, time.monotonic_ns()
            self._frozen = None


class RecordingPlayer:
    """An AudioPlayer that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def arm(self, track):
        self.calls.append(('arm', track))

    def start_at(self, time_s):
        self.calls.append(('start_at', time_s))

    def stop(self):
        self.calls.append(('stop',))


def write_score(path: Path, bars: int = 3) -> Path:
    """120 bpm: a bar of count-in, `bars` bars of 8th hi-hat / backbeat / kick, a bar of rests."""
    rows = ['bpm\t120'] + ['0\t0.600\t0\t0\t0\t0\t0\t0'] * 4
    for bar in range(1, bars + 1):
        for eighth in range(8):
            beat = '0.600' if bar == 1 and eighth == 0 else '0.300'
            left, kick = (1 if eighth in (2, 6) else 0), (1 if eighth in (0, 4) else 0)
            rows.append(f'{bar}\t{beat}\t5\t{left}\t5\t{6 * left}\t{kick}\t1')
    rows += [f'{bars + 1}\t0.600\t0\t0\t0\t0\t0\t0'] * 4 + ['end']
    path.write_text('\n'.join(rows) + '\n', encoding='utf-8')
    return path


@pytest.fixture(scope='module')
def context():
    with ros_test_context() as ctx:
        yield ctx


PLAY_IDS = ('tiny', 'quiet', 'long', 'broken')


@pytest.fixture(scope='module')
def scores(tmp_path_factory):
    folder = tmp_path_factory.mktemp('scores')
    write_score(folder / 'tiny.txt')
    write_score(folder / 'long.txt', bars=8)
    (folder / 'broken.txt').write_text('bpm\t120\n1\t0.6\t5\tx\t5\t0\t0\t1\nend\n')
    (folder / 'audio').mkdir()
    (folder / 'audio' / 'tiny.wav').write_bytes(b'RIFF')
    files = ('tiny.txt', 'tiny.txt', 'long.txt', 'broken.txt')
    write_play_list(
        folder, dict(zip(PLAY_IDS, files, strict=True)), audio={'tiny': 'tiny', 'quiet': 'absent'}
    )
    return folder


class Harness:
    """The node, a fake trajectory_generator (chunk recorder + latched commanded state) and
    clients, in one SingleThreadedExecutor (no callback of the node may block)."""

    def __init__(self, context, scores: Path, **parameters) -> None:
        self.clock = FastClock()
        self.audio = RecordingPlayer()
        parameters = {
            'play_list': str(scores / 'play_list.yaml'),
            'poll_period_s': 0.005,
            'feedback_period_s': 0.2,
            **parameters,
        }
        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        self.node = ScorePlayer(
            context=context,
            clock_ns=self.clock,
            audio_player=self.audio,
            parameter_overrides=overrides,
        )
        self.probe = rclpy.create_node('fake_generator', context=context)
        self.chunks, self.hits, self.feedback = [], [], []
        self.probe.create_subscription(
            TrajectoryChunk, '/trajectory_generator/chunks', self.chunks.append, RELIABLE_QUEUE
        )
        self.probe.create_subscription(HitEvent, '/phil/hits', self.hits.append, 100)
        self.state = self.probe.create_publisher(
            JointState, '/trajectory_generator/commanded_state', LATCHED
        )
        self.rejected = self.probe.create_publisher(
            String, '/trajectory_generator/rejected_chunks', 10
        )
        self.actions = {
            name: ActionClient(self.probe, kind, f'/score_player/{name}')
            for name, kind in (('play', Play), ('hit', Hit))
        }
        self.services = {
            name: self.probe.create_client(kind, f'/score_player/{name}')
            for name, kind in (('pause', Trigger), ('stop', Trigger), ('speed', SetSpeed))
        }
        self.executor = SingleThreadedExecutor(context=context)
        for node in (self.node, self.probe):
            self.executor.add_node(node)
        for client in self.actions.values():
            assert client.wait_for_server(timeout_sec=10.0)
        self.publish_state()

    def publish_state(self, delay_s: float = 0.0) -> None:
        """Latch the ready pose as the commanded state, reached ``delay_s`` from now."""
        self.state_ns = self.clock() + int(delay_s * NS)
        msg = JointState(name=list(MODEL.joint_names), position=READY.tolist())
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(self.state_ns, NS)
        self.state.publish(msg)
        assert self.spin_until(
            lambda: (
                self.node._state is not None and self.node._state.header.stamp == msg.header.stamp
            )
        )

    def spin_until(self, predicate, timeout_s: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while not predicate() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.005)
        return bool(predicate())

    def send(self, name: str, **fields):
        action = Play if name == 'play' else Hit
        future = self.actions[name].send_goal_async(
            action.Goal(**fields),
            feedback_callback=lambda msg: self.feedback.append(msg.feedback),
            goal_uuid=signed_goal_id(KEY),  # as the behavior planner sends it
        )
        assert self.spin_until(future.done)
        assert future.result().accepted  # bad goals are accepted, then aborted with a reason
        return future.result()

    def result(self, handle, timeout_s: float = 20.0):
        """The goal's result, once the messages published before it have been taken in too
        (the last chunk ends at ready, every counted hit is here)."""
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout_s)
        hits = getattr(future.result().result, 'hits_played', 0)
        assert self.spin_until(lambda: len(self.hits) >= hits and self._at_ready())
        return future.result()

    def _at_ready(self) -> bool:
        last = self.chunks[-1].trajectory.points[-1].positions if self.chunks else READY
        return np.allclose(last, READY, atol=1e-9)

    def call(self, name: str, request):
        with self.clock.frozen():
            future = self.services[name].call_async(request)
            assert self.spin_until(future.done)
        return future.result()

    def close(self) -> None:
        self.node.close_goals()
        self.spin_until(lambda: False, 0.1)
        for node in (self.node, self.probe):
            self.executor.remove_node(node)
        self.spin_until(lambda: False, 0.1)
        self.executor.shutdown(timeout_sec=5.0)
        for node in (self.node, self.probe):
            node.destroy_node()


@pytest.fixture
def harness(context, scores):
    created = []

    def make(**parameters) -> Harness:
        created.append(Harness(context, scores, **parameters))
        return created[-1]

    yield make
    for item in created:
        item.close()


class Spliced:
    """The motion the trajectory_generator commands from the chunks: every chunk must start
    with the commanded state at its start (replace: dropping what is queued after it)."""

    def __init__(self, messages, origin_ns: int) -> None:
        self.origin_ns = origin_ns
        self.times = np.array([-1e3])
        self.positions, self.velocities = READY[np.newaxis].copy(), np.zeros((1, 13))
        for msg in messages:
            assert list(msg.trajectory.joint_names) == list(MODEL.joint_names)
            start = self.seconds(_ns(msg.trajectory.header.stamp))
            times = start + np.array([_ns(p.time_from_start) / NS for p in msg.trajectory.points])
            positions = np.array([p.positions for p in msg.trajectory.points])
            velocities = np.array([p.velocities for p in msg.trajectory.points])
            if msg.replace:
                expected, keep = self.at(start)[0], self.times < start - 1e-9
            else:  # the first chunk may start after the held state, later ones must splice
                assert start == pytest.approx(self.times[-1], abs=1e-6) or len(self.times) == 1
                expected, keep = self.positions[-1], self.times < self.times[-1]
                np.testing.assert_allclose(velocities[0], self.velocities[-1], atol=1e-6)
            np.testing.assert_allclose(positions[0], expected, atol=1e-6)
            self.times = np.concatenate([self.times[keep], times])
            self.positions = np.concatenate([self.positions[keep], positions])
            self.velocities = np.concatenate([self.velocities[keep], velocities])
        assert np.all(np.diff(self.times) > 0)

    def seconds(self, nanoseconds: int) -> float:
        return (nanoseconds - self.origin_ns) / NS

    def at(self, times):
        return sample_hermite(self.times, self.positions, self.velocities, np.atleast_1d(times))

    def assert_no_jump(self) -> None:
        steps = np.abs(np.diff(self.positions[1:], axis=0))
        allowed = MODEL.velocity_limit_rad_s * np.diff(self.times[1:])[:, np.newaxis] * 1.01
        assert np.all(steps <= allowed + 1e-9)


def _hit_count(path: Path) -> int:
    events = load_score(path).events
    return sum(bool(e.right_drum) + bool(e.left_drum) + e.kick for e in events)


def test_play_publishes_chunks_hits_feedback_and_result(harness, scores, tmp_path):
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
    # The log is on the robot clock (CLOCK_MONOTONIC, like the simulator's impact log) while
    # HitEvent stamps follow the node's stamp clock.
    assert abs(float(rows[0]['command_time_s']) - time.monotonic()) < 120.0
    assert [row['instrument'] for row in rows] == [hit.instrument for hit in h.hits]
    assert h.audio.calls[:2] == [
        ('arm', scores / 'audio' / 'tiny.wav'),
        ('start_at', pytest.approx(score_zero_ns / NS, abs=1e-6)),
    ]
    assert ('stop',) not in h.audio.calls  # a play that ends normally leaves its track alone


def test_a_refused_chunk_ends_the_play_with_the_reason_and_nothing_more_moves(harness):
    h = harness()
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: len(h.hits) >= 2)
    h.rejected.publish(String(data='chunk 7: starts in the past'))
    future = handle.get_result_async()
    assert h.spin_until(future.done)
    response = future.result()
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'refused chunk 7: starts in the past' in response.result.reason
    h.spin_until(lambda: False, 0.5)  # chunks already in flight arrive
    sent = len(h.chunks)
    h.spin_until(lambda: False, 1.0)  # 10 s of play time at this clock
    assert len(h.chunks) == sent  # no DRUM END that could not join
    assert h.audio.calls[-1] == ('stop',)
    assert h.result(h.send('play', score='tiny')).result.success  # the node plays on


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


def test_the_hardware_latch_ends_the_play_and_no_later_hit_is_reported(harness):
    """What the motors did not play is not a hit: after the latch nothing is reported, the
    play ends at once with the reason and keeps a resume point."""
    h = harness()
    latch = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    handle = h.send('play', score='long')
    assert h.spin_until(lambda: any(hit.bar >= 2 for hit in h.hits))
    latched_ns = h.clock()
    status = HardwareStatus(lifecycle_state='active', estop=True)
    fault = Fault(code=Fault.CODE_ESTOP, reason='emergency stop (ESTOP word)')
    fault.stamp.sec, fault.stamp.nanosec = divmod(latched_ns, NS)
    status.faults = [fault]
    latch.publish(status)
    future = handle.get_result_async()
    assert h.spin_until(future.done)
    response = future.result()
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'the hardware latched: emergency stop' in response.result.reason
    h.spin_until(lambda: False, 1.0)  # 10 s of play time at this clock
    assert h.hits and max(_ns(hit.command_time) for hit in h.hits) <= latched_ns
    assert response.result.hits_played == len(h.hits)
    played_bars = {hit.bar for hit in h.hits}
    assert response.result.resume_valid and response.result.resume_bar >= max(played_bars)
    assert h.audio.calls[-1] == ('stop',)


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
