"""Helpers of the trajectory_generator node tests (no tests here): the harness (the node with a
probe node: chunk, commanded state and rejection recorders, action clients, the score and
motor-state publishers, the halt client) and a model of the motion a bus loop plays from the
chunks it receives."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from phil_control.trajectory_generator.node import TrajectoryGenerator  # noqa: E402
from phil_description.core import default_robot_model  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Gesture, Look, Move, Pose  # noqa: E402
from phil_msgs.msg import ChunkRejection, MotorStates, TrajectoryChunk  # noqa: E402
from phil_msgs.srv import Trigger  # noqa: E402
from phil_ros.graph_safety import signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED, RELIABLE_QUEUE  # noqa: E402
from phil_ros.testing import DISCOVERY_TIMEOUT_S  # noqa: E402

MODEL = default_robot_model()
NAMES = MODEL.joint_names
ACTIONS = {'look': Look, 'gesture': Gesture, 'move': Move, 'pose': Pose}
KEY = GraphKey.from_environment()  # the graph key the node under test reads (conftest)


def _ns(stamp) -> int:
    return stamp.sec * 10**9 + stamp.nanosec


class Played:
    """The motion a bus loop plays from received chunks: replace semantics + cubic Hermite.

    Times are seconds relative to ``origin_ns`` (the first chunk's stamp), to keep precision.
    """

    def __init__(self, messages: list[TrajectoryChunk], origin_ns: int | None = None) -> None:
        self.origin_ns = (
            _ns(messages[0].trajectory.header.stamp) if origin_ns is None else origin_ns
        )
        self.entries = []  # [start_ns, end_ns, times_s, positions, velocities]
        for msg in messages:
            start = _ns(msg.trajectory.header.stamp)
            offsets = [_ns(point.time_from_start) for point in msg.trajectory.points]
            if msg.replace:
                self.entries = [entry for entry in self.entries if entry[0] < start]
                for entry in self.entries:
                    entry[1] = min(entry[1], start)
            assert list(msg.trajectory.joint_names) == list(NAMES)
            self.entries.append(
                [
                    start,
                    start + offsets[-1],
                    np.array([self.relative(start + offset) for offset in offsets]),
                    np.array([point.positions for point in msg.trajectory.points]),
                    np.array([point.velocities for point in msg.trajectory.points]),
                ]
            )

    def relative(self, nanoseconds: int) -> float:
        return (nanoseconds - self.origin_ns) * 1e-9

    def sample(self, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        for start, end, times, positions, velocities in reversed(self.entries):
            if self.relative(start) - 1e-9 <= time_s <= self.relative(end) + 1e-9:
                k = int(
                    np.clip(np.searchsorted(times, time_s, side='right') - 1, 0, len(times) - 2)
                )
                h = times[k + 1] - times[k]
                s = (time_s - times[k]) / h
                p0, p1 = positions[k], positions[k + 1]
                m0, m1 = velocities[k] * h, velocities[k + 1] * h
                position = (
                    (2 * s**3 - 3 * s**2 + 1) * p0
                    + (s**3 - 2 * s**2 + s) * m0
                    + (-2 * s**3 + 3 * s**2) * p1
                    + (s**3 - s**2) * m1
                )
                velocity = (
                    (6 * s**2 - 6 * s) * p0
                    + (3 * s**2 - 4 * s + 1) * m0
                    + (-6 * s**2 + 6 * s) * p1
                    + (3 * s**2 - 2 * s) * m1
                ) / h
                return position, velocity
        raise AssertionError(f'no chunk covers t={time_s}')

    @property
    def start_s(self) -> float:
        return self.relative(self.entries[0][0])

    @property
    def end_s(self) -> float:
        return self.relative(self.entries[-1][1])


class Harness:
    def __init__(self, context, clock_ns: Callable[[], int] | None = None, **parameters) -> None:
        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        self.clock_ns = clock_ns
        self.node = TrajectoryGenerator(
            context=context, parameter_overrides=overrides, clock_ns=clock_ns
        )
        self.probe = rclpy.create_node('probe', context=context)
        self.chunks: list[TrajectoryChunk] = []
        self.states: list[JointState] = []
        self.feedback: list = []
        self.rejected: list[ChunkRejection] = []
        self.probe.create_subscription(
            TrajectoryChunk, '/hardware/trajectory_chunks', self.chunks.append, RELIABLE_QUEUE
        )
        self.probe.create_subscription(
            ChunkRejection, '/trajectory_generator/rejected_chunks', self.rejected.append, 10
        )
        self.probe.create_subscription(
            JointState, '/trajectory_generator/commanded_state', self.states.append, LATCHED
        )
        self.clients = {
            name: ActionClient(self.probe, action, f'/trajectory_generator/{name}')
            for name, action in ACTIONS.items()
        }
        self.score = self.probe.create_publisher(
            TrajectoryChunk, '/trajectory_generator/chunks', RELIABLE_QUEUE
        )
        self.motor_states = self.probe.create_publisher(MotorStates, '/hardware/motor_states', 10)
        self.halt = self.probe.create_client(Trigger, '/trajectory_generator/halt')
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)

    def wait_ready(self) -> None:
        """The latched commanded state and every action server seen (discovery may take long
        on a busy machine: the waits are bounds, not expectations)."""
        assert self.spin_until(lambda: self.states, 30.0), 'no latched commanded_state'
        for client in self.clients.values():
            assert client.wait_for_server(timeout_sec=DISCOVERY_TIMEOUT_S)

    def spin_until(self, predicate, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while not predicate() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)
        return bool(predicate())

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def send(self, name: str, goal_uuid=None, **fields):
        """Send a goal with ``goal_uuid`` (default: one made now, as the planner makes it)."""
        future = self.clients[name].send_goal_async(
            ACTIONS[name].Goal(**fields),
            feedback_callback=self.feedback.append,
            goal_uuid=goal_uuid or signed_goal_id(KEY),  # as the behavior planner sends it
        )
        assert self.spin_until(future.done)
        handle = future.result()
        assert handle.accepted  # every goal is accepted; bad ones are aborted with a reason
        return handle

    def result(self, handle, timeout_s: float = 10.0):
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout_s)
        return future.result()

    def now_ns(self) -> int:
        if self.clock_ns is not None:
            return self.clock_ns()
        return time.time_ns()  # the node's default stamp clock: the ROS (system) clock

    def close(self) -> None:
        # Release execute callbacks still waiting (after a failed test) and let them return
        # before the executor goes away.
        self.node.close_goals()
        self.spin_for(0.1)
        self.executor.remove_node(self.node)
        self.executor.remove_node(self.probe)
        self.spin_for(0.1)
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        self.probe.destroy_node()


@contextlib.contextmanager
def harnesses(context) -> Iterator[Callable[..., Harness]]:
    """A maker of harnesses (keyword arguments are node parameters, and ``clock_ns`` the node's
    injected clock); every one it made is closed on leaving."""
    created = []

    def make(clock_ns: Callable[[], int] | None = None, **parameters) -> Harness:
        created.append(Harness(context, clock_ns, **parameters))
        created[-1].wait_ready()  # a harness that never gets ready is still closed
        return created[-1]

    try:
        yield make
    finally:
        for item in created:
            item.close()
