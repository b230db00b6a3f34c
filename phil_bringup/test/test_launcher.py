"""The run command's launcher starts the node set as processes and stops them cleanly."""

import os
import signal
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from phil_description.description_publisher_node import LATCHED  # noqa: E402


def test_launcher_runs_the_graph_and_stops_on_ctrl_c():
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    launcher = subprocess.Popen([sys.executable, '-m', 'phil_bringup.launcher'], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        probe = rclpy.create_node('launcher_probe', context=context)
        received = []
        probe.create_subscription(String, 'robot_description',
                                  lambda msg: received.append(msg.data), LATCHED)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(probe)
        deadline = time.monotonic() + 60.0
        while not received and time.monotonic() < deadline and launcher.poll() is None:
            executor.spin_once(timeout_sec=0.2)
        executor.shutdown()
        probe.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=30)
    assert received and '<robot name="phil"' in received[0], output
    assert 'started phil_description/description_publisher' in output
    assert launcher.returncode == 0, output
    assert '[phil] stopped' in output
