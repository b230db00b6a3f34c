"""Helpers of the hardware node test (no tests here): the device simulator and the node under
test as the test runs them, the harness (the node, a probe node talking to it only through its
ROS API, and their executors), an intruder node without the graph key, the simulator's stdin
commands, stamps and cosine trajectories."""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from builtin_interfaces.msg import Duration, Time  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from test_sim_runner import START_TIMEOUT_S, Simulator  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from phil_description.core import default_robot_model  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_hardware.hardware.node import HardwareNode  # noqa: E402
from phil_hardware.sim.runner import READY_LINE  # noqa: E402
from phil_msgs.msg import HardwareStatus, Heartbeat  # noqa: E402
from phil_msgs.msg import TrajectoryChunk as ChunkMsg  # noqa: E402
from phil_msgs.srv import HardwareRequest, Trigger  # noqa: E402
from phil_ros.graph_safety import sign_message, signed_request  # noqa: E402
from phil_ros.heartbeats import HEARTBEAT_TOPIC  # noqa: E402
from phil_ros.qos import HEARTBEAT_QOS, LATCHED  # noqa: E402
from phil_ros.testing import DISCOVERY_TIMEOUT_S  # noqa: E402

MODEL = default_robot_model(sim=True)
NAMES = MODEL.joint_names
DEG = math.pi / 180.0
# The simulator is a Python process sharing two cores with this one, the bus loop and other
# test runs: its feedback can pause for a few hundred ms, which the robot's 50/100 ms
# supervision would latch. Supervision itself is tested in test_bus_controller_sim.
FEEDBACK_TIMEOUT_S = 2.0
SIMULATOR_NICE = -10
# The bus loop runs on the normal scheduler here: under SCHED_FIFO it takes ~0.55 of a core
# ahead of every normal process, the simulator included. SCHED_FIFO is covered by
# test_rt_process and bench/bench_rt_loop.py; the node must work without it too.
SCHED_PRIORITY = 0
# A stand-in for the behavior planner's heartbeat: the node watches it like the real one.
# Its timer shares this test process (and its GIL) with the node's transitions: a generous
# timeout (the graph uses 0.5 s between processes that run real-time).
WATCHED = '/planner_stand_in'
LIVENESS_TIMEOUT_S = 3.0


def wait_until(predicate, timeout_s: float, period_s: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(period_s)
    return True


def stamp_in(seconds: float) -> Time:
    """A ROS-time stamp ``seconds`` from now (the node's clock is the system clock)."""
    total = time.time_ns() + round(seconds * 1e9)
    return Time(sec=total // 10**9, nanosec=total % 10**9)


def stamp_ns(stamp: Time) -> int:
    return stamp.sec * 10**9 + stamp.nanosec


def duration(seconds: float) -> Duration:
    total = round(seconds * 1e9)
    return Duration(sec=total // 10**9, nanosec=total % 10**9)


def cosine_points(start, goal, duration_s: float, steps: int = 20) -> list[JointTrajectoryPoint]:
    """A rest-to-rest cosine move with velocities, as the trajectory generator sends it."""
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    points = []
    for t in np.linspace(0.0, duration_s, steps + 1)[1:]:
        s = (1 - math.cos(math.pi * t / duration_s)) / 2
        ds = math.pi / duration_s * math.sin(math.pi * t / duration_s) / 2
        points.append(
            JointTrajectoryPoint(
                positions=list(start + s * (goal - start)),
                velocities=list(ds * (goal - start)),
                time_from_start=duration(t),
            )
        )
    return points


def command(simulator: Simulator, text: str) -> None:
    """One stdin command to the simulator, checked against its own reply (a reply that came
    too late for an earlier command is dropped first, so replies cannot shift)."""
    with contextlib.suppress(queue.Empty):
        while True:
            simulator.lines.get_nowait()
    reply = simulator.command(text)
    assert reply == f'ok {text}', reply


class Harness:
    """The node under test, a probe node and the executor spinning both in a thread."""

    def __init__(self, context, **parameters) -> None:
        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        self.statuses: deque[HardwareStatus] = deque(maxlen=2000)
        self.joint_states: deque[JointState] = deque(maxlen=2000)
        self.joint_state_count = 0
        self.probe = rclpy.create_node(f'hardware_probe_{os.getpid()}', context=context)
        self.probe.create_subscription(
            HardwareStatus, '/hardware/status', lambda msg: self.statuses.append(msg), LATCHED
        )
        # A short queue: when this process falls behind, the latest message stays recent.
        self.probe.create_subscription(JointState, '/joint_states', self._on_joint_state, 10)
        self.chunks = self.probe.create_publisher(ChunkMsg, '/hardware/trajectory_chunks', 50)
        self.trajectories = self.probe.create_publisher(
            JointTrajectory, '/hardware/joint_trajectory', 10
        )
        self.clients = {
            'get_state': self.probe.create_client(GetState, '/hardware/get_state'),
            'estop': self.probe.create_client(Trigger, '/hardware/estop'),
            'request': self.probe.create_client(HardwareRequest, '/hardware/request'),
        }
        self.key = GraphKey.from_environment()
        self.beating = threading.Event()
        self.beating.set()
        heartbeat = self.probe.create_publisher(Heartbeat, HEARTBEAT_TOPIC, HEARTBEAT_QOS)

        def beat() -> None:
            if self.beating.is_set():
                heartbeat.publish(Heartbeat(node=WATCHED, pid=os.getpid()))
            # The rest of the graph, heard all along: the node knows its reception works.
            heartbeat.publish(Heartbeat(node='/bridge_stand_in', pid=os.getpid()))

        self.probe.create_timer(0.05, beat)
        # Created last: from here on it starts its bus loop (configure-on-start) once spun.
        self.node = HardwareNode(context=context, parameter_overrides=overrides)
        # One executor each: the node's blocks during its lifecycle transitions (as rclpy runs
        # them), and the probe must keep receiving meanwhile.
        self._executors = []
        self._threads = []
        for node in (self.node, self.probe):
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(node)
            self._executors.append(executor)
            self._threads.append(threading.Thread(target=executor.spin, daemon=True))
            self._threads[-1].start()

    def _on_joint_state(self, msg: JointState) -> None:
        self.joint_states.append(msg)
        self.joint_state_count += 1

    # -- reading ---------------------------------------------------------------------------

    @property
    def status(self) -> HardwareStatus | None:
        return self.statuses[-1] if self.statuses else None

    def wait_status(self, predicate, timeout_s: float = 15.0) -> HardwareStatus:
        if not wait_until(lambda: self.status is not None and predicate(self.status), timeout_s):
            raise AssertionError(
                f'status condition not met in {timeout_s} s; last status: {self.status}'
            )
        return self.status

    def positions(self) -> np.ndarray:
        assert wait_until(lambda: self.joint_states, 15.0), 'no /joint_states'
        return np.array(self.joint_states[-1].position)

    def position(self, joint: str) -> float:
        return float(self.positions()[NAMES.index(joint)])

    def fresh_positions(self) -> np.ndarray:
        """Positions from a message received after this call."""
        count = self.joint_state_count
        assert wait_until(lambda: self.joint_state_count > count, 10.0), '/joint_states stopped'
        return self.positions()

    def bus_loop_pid(self) -> int | None:
        client = self.node._client  # white box: the PID is not part of the ROS API
        return None if client is None else client.pid

    # -- commanding ------------------------------------------------------------------------

    def call(self, name: str, request, timeout_s: float = 30.0):
        client = self.clients[name]
        assert client.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT_S), f'no service {name}'
        future = client.call_async(request)
        assert wait_until(future.done, timeout_s), f'{name} did not answer in {timeout_s} s'
        return future.result()

    def request(self, name: str, timeout_s: float = 30.0):
        """A ~/request signed with the graph key, as the behavior planner sends it."""
        return self.call('request', self.signed(name), timeout_s)

    def signed(self, name: str):
        client = self.clients['request']
        assert client.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT_S), 'no service request'
        return signed_request(self.key, HardwareRequest.Request(request=name))

    def lifecycle_state(self) -> str:
        return self.call('get_state', GetState.Request()).current_state.label

    def publish(self, publisher, msg) -> None:
        assert wait_until(lambda: publisher.get_subscription_count() > 0, 5.0), 'no subscriber'
        publisher.publish(msg)

    def send_chunk(
        self, goals: dict[str, float], duration_s: float, delay_s: float, sequence: int
    ) -> Time:
        """A chunk moving ``goals``' joints from their measured positions; returns its stamp."""
        now = self.fresh_positions()
        start = [now[NAMES.index(name)] for name in goals]
        msg = ChunkMsg(sequence=sequence)
        msg.trajectory.header.stamp = stamp_in(delay_s)
        msg.trajectory.joint_names = list(goals)
        msg.trajectory.points = cosine_points(start, list(goals.values()), duration_s)
        self.publish(self.chunks, sign_message(self.key, msg))
        return msg.trajectory.header.stamp

    def close(self) -> None:
        pid = self.bus_loop_pid()
        for executor, node in zip(self._executors, (self.node, self.probe), strict=True):
            executor.remove_node(node)
        time.sleep(0.2)  # callbacks already handed out finish
        for executor, thread in zip(self._executors, self._threads, strict=True):
            executor.shutdown(timeout_sec=10.0)
            thread.join(10.0)
        try:
            self.node.destroy_node()  # stops the bus loop
            self.probe.destroy_node()
        finally:
            if pid is not None and os.path.exists(f'/proc/{pid}'):
                os.kill(pid, signal.SIGKILL)


def count_joint_state_stamps(context, seconds: float) -> list[int]:
    """Stamps [ns] of every /joint_states message over ``seconds`` + 0.4 s, from a node and
    executor of their own (entities must not be destroyed under a spinning executor)."""
    stamps: list[int] = []
    node = rclpy.create_node(f'joint_state_counter_{os.getpid()}', context=context)
    node.create_subscription(
        JointState, '/joint_states', lambda msg: stamps.append(stamp_ns(msg.header.stamp)), 1000
    )
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: stamps, 15.0), 'no /joint_states'
        assert wait_until(lambda: stamps[-1] - stamps[0] > (seconds + 0.4) * 1e9, seconds + 5.0)
    finally:
        executor.shutdown(timeout_sec=5.0)
        thread.join(5.0)
        node.destroy_node()
    return stamps


def faults(status: HardwareStatus) -> list[tuple[int, str]]:
    return [(fault.code, fault.joint) for fault in status.faults]


class Intruder:
    """A node of the same ROS domain that does not hold the graph key."""

    def __init__(self, context) -> None:
        self.node = rclpy.create_node(f'intruder_{os.getpid()}', context=context)
        self.chunks = self.node.create_publisher(ChunkMsg, '/hardware/trajectory_chunks', 50)
        self.trajectories = self.node.create_publisher(
            JointTrajectory, '/hardware/joint_trajectory', 10
        )
        self.clients = {
            'request': self.node.create_client(HardwareRequest, '/hardware/request'),
            'estop': self.node.create_client(Trigger, '/hardware/estop'),
        }
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def publish(self, publisher, msg) -> None:
        assert wait_until(lambda: publisher.get_subscription_count() > 0, 5.0), 'no subscriber'
        publisher.publish(msg)

    def call(self, name: str, request):
        client = self.clients[name]
        assert client.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT_S), name
        future = client.call_async(request)
        assert wait_until(future.done, 30.0), name
        return future.result()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(5.0)
        self.node.destroy_node()


@contextlib.contextmanager
def running_simulator(base: str, link: Path) -> Iterator[Simulator]:
    """The device simulator on the CAN groups of ``base`` and the serial link ``link``, taking
    commands on its stdin; interrupted (killed if it does not end) on leaving."""
    # The simulator stands in for motors that do not share our two CPUs with other test runs;
    # its stalls would latch FEEDBACK_TIMEOUT or time out an SDO (renicing needs root).
    process = Simulator(
        '--can-channel-base',
        base,
        '--dxl-port',
        str(link),
        '--control-stdin',
        '--nice',
        str(SIMULATOR_NICE),
    )
    try:
        process.wait_for(READY_LINE, START_TIMEOUT_S)
        yield process
    finally:
        if process.process.poll() is None:
            process.process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.process.wait(10)
        process.kill()


@contextlib.contextmanager
def running_hardware(context, base: str, link: str) -> Iterator[Harness]:
    """The node on the simulator's buses, watching WATCHED, accepting joint trajectories;
    closed on leaving."""
    harness = Harness(
        context,
        sim=True,
        can_channel_base=base,
        dxl_port=link,
        sched_priority=SCHED_PRIORITY,
        can_feedback_timeout_s=FEEDBACK_TIMEOUT_S,
        serial_feedback_timeout_s=FEEDBACK_TIMEOUT_S,
        joint_trajectory_enabled=True,
        watched_nodes=[WATCHED],
        liveness_timeout_s=LIVENESS_TIMEOUT_S,
    )
    try:
        yield harness
    finally:
        harness.close()
