"""The device simulator's ROS bridge: its topics, and a child that always ends and never runs
ahead of the command path."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from phil_hardware.sim.ros_bridge import end_process

_BRIDGE_UNDER_ROUND_ROBIN = """
import multiprocessing, sys, time
from phil_hardware.sim.ros_bridge import RosBridge
bridge = RosBridge(['a', 'b'])
bridge.start()
print(multiprocessing.active_children()[0].pid, flush=True)
time.sleep(120)
"""


def _round_robin_20() -> None:
    """In a child before exec: the simulator's scheduling under the launcher."""
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(20))
    os.setpriority(os.PRIO_PROCESS, 0, -10)


def _deaf_to_sigterm(ready) -> None:
    """A child as one stuck in C code looks from outside: SIGTERM changes nothing."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    time.sleep(120)


@pytest.mark.timeout(60)
def test_a_child_deaf_to_sigterm_is_killed():
    context = multiprocessing.get_context('spawn')
    ready = context.Event()
    process = context.Process(target=_deaf_to_sigterm, args=(ready,), daemon=True)
    process.start()
    try:
        assert ready.wait(45.0), 'the child did not start'
        end_process(process, 0.1)
        assert process.exitcode == -signal.SIGKILL
    finally:
        process.kill()


@pytest.mark.timeout(60)
def test_a_child_that_ends_is_only_waited_for():
    process = multiprocessing.get_context('spawn').Process(target=time.sleep, args=(0.0,))
    process.start()
    end_process(process, 45.0)
    assert process.exitcode == 0


@pytest.mark.timeout(90)
def test_the_bridge_leaves_the_simulators_real_time_scheduling(monkeypatch):
    pytest.importorskip('rclpy')
    try:
        subprocess.run(['true'], check=True, preexec_fn=_round_robin_20)
    except (subprocess.SubprocessError, OSError):
        pytest.skip('SCHED_RR is not allowed here')
    monkeypatch.setenv('ROS_DOMAIN_ID', str(1 + uuid.uuid4().int % 100))
    simulator = subprocess.Popen(
        [sys.executable, '-c', _BRIDGE_UNDER_ROUND_ROBIN],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_round_robin_20,
        start_new_session=True,
    )
    try:
        bridge_pid = int(simulator.stdout.readline())
        assert os.sched_getscheduler(simulator.pid) == os.SCHED_RR
        # Set by the simulator before start() returns, so before the pid was printed.
        assert os.sched_getscheduler(bridge_pid) == os.SCHED_OTHER
        assert os.getpriority(os.PRIO_PROCESS, bridge_pid) == 0
    finally:
        os.killpg(simulator.pid, signal.SIGKILL)
        simulator.wait()


@pytest.mark.timeout(60)
def test_ros_bridge_publishes_impacts_and_joint_states(monkeypatch):
    rclpy = pytest.importorskip('rclpy')
    from sensor_msgs.msg import JointState

    from phil_description.core.parent_process import PARENT_PID_ENV
    from phil_hardware.sim.impacts import Impact, Limb
    from phil_hardware.sim.ros_bridge import IMPACTS_TOPIC, JOINT_STATES_TOPIC, RosBridge
    from phil_msgs.msg import HitEvent

    # A private domain, inherited by the bridge process.
    monkeypatch.setenv('ROS_DOMAIN_ID', str(1 + uuid.uuid4().int % 100))
    # Started as the launcher starts the simulator: its own parent named. The bridge, a child of
    # the simulator, must follow the simulator instead.
    monkeypatch.setenv(PARENT_PID_ENV, str(os.getppid()))
    names = ['a', 'b']
    bridge = RosBridge(names)
    bridge.start()
    rclpy.init()
    node = rclpy.create_node(f'sim_bridge_test_{uuid.uuid4().hex[:8]}')
    hits, states = [], []
    node.create_subscription(HitEvent, IMPACTS_TOPIC, hits.append, 10)
    node.create_subscription(JointState, JOINT_STATES_TOPIC, states.append, 10)
    impact = Impact('snare', 1, Limb.LEFT_HAND, 12.5, 2.0, (0.0, 0.3, -0.4))
    try:
        deadline = time.monotonic() + 45.0
        while not (hits and states) and time.monotonic() < deadline:
            # Keep offering until discovery has matched publisher and subscriber.
            bridge.publish_impact(impact, 1_700_000_000.25)
            bridge.publish_joint_state(1_700_000_000.5, [0.1, 0.2], [0.0, -1.0])
            rclpy.spin_once(node, timeout_sec=0.1)
        assert hits and states
        hit = hits[0]
        assert (hit.source, hit.instrument, hit.instrument_id, hit.limb) == (
            HitEvent.SOURCE_DETECTED,
            'snare',
            1,
            HitEvent.LIMB_LEFT_HAND,
        )
        assert 1 <= hit.velocity <= 7
        assert (hit.command_time.sec, hit.command_time.nanosec) == (1_700_000_000, 250_000_000)
        assert list(states[0].name) == names and list(states[0].position) == [0.1, 0.2]
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        bridge.stop()
