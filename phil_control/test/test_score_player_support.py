"""Helpers of the score_player node tests (no tests here): a recording audio
player, a folder of small scores with its play list, the harness (the node with a fake
trajectory_generator and clients) and a model of the motion the chunks command.

The node runs the real play core. Its clock runs 10 times faster than real time (injected), so
a play of DRUM START + three bars + DRUM END takes about 2 s; nothing here asserts real-time
timing, only stamps and their relations.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from test_clock_support import SteerableClock  # noqa: E402

from phil_control.core.play.timing import sample_hermite  # noqa: E402
from phil_control.core.score import load_score, write_play_list  # noqa: E402
from phil_control.score_player.node import ScorePlayer  # noqa: E402
from phil_description.core import default_robot_model  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Hit, Play  # noqa: E402
from phil_msgs.msg import ChunkRejection, HitEvent, TrajectoryChunk  # noqa: E402
from phil_msgs.srv import SetSpeed, Trigger  # noqa: E402
from phil_ros.graph_safety import signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED, RELIABLE_QUEUE  # noqa: E402
from phil_ros.testing import DISCOVERY_TIMEOUT_S  # noqa: E402

MODEL = default_robot_model()
READY = MODEL.poses['ready']
SPEEDUP = 10.0
NS = 1_000_000_000
SPEED = 1.25  # the tiny score needs no velocity guard at this speed
KEY = GraphKey.from_environment()  # the graph key the node under test reads (conftest)


def _ns(stamp) -> int:
    return stamp.sec * NS + stamp.nanosec


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


PLAY_IDS = ('tiny', 'quiet', 'long', 'broken')


def write_scores(folder: Path) -> Path:
    """The scores of PLAY_IDS in ``folder`` with their play list: 'quiet' is tiny.txt with an
    audio track that does not exist, 'broken' fails to parse on line 2."""
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
        self.clock = SteerableClock(SPEEDUP)
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
            ChunkRejection, '/trajectory_generator/rejected_chunks', 10
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
            assert client.wait_for_server(timeout_sec=DISCOVERY_TIMEOUT_S)
        self.publish_state()

    def refuse(self, chunk: TrajectoryChunk, code: str, reason: str) -> None:
        """Refuse ``chunk`` as the trajectory generator does."""
        self.rejected.publish(
            ChunkRejection(
                start=chunk.trajectory.header.stamp,
                sequence=chunk.sequence,
                code=code,
                reason=reason,
            )
        )

    def publish_state(self, delay_s: float = 0.0, positions_rad=READY) -> None:
        """Latch ``positions_rad`` (the ready pose) as the commanded state, reached ``delay_s``
        from now."""
        self.state_ns = self.clock() + int(delay_s * NS)
        msg = JointState(name=list(MODEL.joint_names), position=list(positions_rad))
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

    def send(self, name: str, goal_uuid=None, **fields):
        """Send a goal with ``goal_uuid`` (default: one made now, as the planner makes it)."""
        action = Play if name == 'play' else Hit
        future = self.actions[name].send_goal_async(
            action.Goal(**fields),
            feedback_callback=lambda msg: self.feedback.append(msg.feedback),
            goal_uuid=goal_uuid or signed_goal_id(KEY),  # as the behavior planner sends it
        )
        assert self.spin_until(future.done)
        assert future.result().accepted  # bad goals are accepted, then aborted with a reason
        return future.result()

    def ended(self, handle, timeout_s: float = 20.0):
        """The goal's result, once it has ended (whatever the chunks sent so far do)."""
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout_s)
        return future.result()

    def result(self, handle, timeout_s: float = 20.0):
        """The goal's result, once the messages published before it have been taken in too
        (the last chunk ends at ready, every counted hit is here)."""
        response = self.ended(handle, timeout_s)
        hits = getattr(response.result, 'hits_played', 0)
        assert self.spin_until(lambda: len(self.hits) >= hits and self._at_ready())
        return response

    def sent_hit(self, **fields):
        """A HIT goal and every chunk of its start."""
        count = len(self.chunks)
        return self.send('hit', **fields), self.hit_chunks_after(count)

    def hit_chunks_after(self, count: int) -> list:
        """Every chunk of the HIT start sent after the first ``count`` (they go out at once;
        the last ends at ready)."""
        assert self.spin_until(lambda: len(self.chunks) > count + 1 and self._at_ready())
        return self.chunks[count:]

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


@contextlib.contextmanager
def harnesses(context, scores: Path) -> Iterator[Callable[..., Harness]]:
    """A maker of harnesses (keyword arguments are node parameters); every one it made is
    closed on leaving."""
    created = []

    def make(**parameters) -> Harness:
        created.append(Harness(context, scores, **parameters))
        return created[-1]

    try:
        yield make
    finally:
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
