"""The run command's launcher starts the node set as processes and stops them cleanly on
Ctrl-C (its own ROS domain, buses and TCP port, so nothing else on the machine interferes)."""

import os
import re
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from phil_bringup.testing.graph import RunningGraph  # noqa: E402
from phil_description.description_publisher_node import LATCHED  # noqa: E402
from phil_description.testing import ros_test_context  # noqa: E402


def robot_description(domain_id: str, timeout_s: float) -> list[str]:
    """The latched robot_description as a fresh subscriber in ``domain_id`` sees it."""
    with ros_test_context(int(domain_id)) as context:
        probe = rclpy.create_node('launcher_probe', context=context)
        received = []
        probe.create_subscription(String, 'robot_description',
                                  lambda msg: received.append(msg.data), LATCHED)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(probe)
        deadline = time.monotonic() + timeout_s
        while not received and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.2)
        executor.shutdown()
        probe.destroy_node()
        return received


def test_launcher_runs_the_graph_and_stops_on_ctrl_c(tmp_path):
    graph = RunningGraph(tmp_path).start()   # answers GET_STATUS over TCP: every node is up
    try:
        received = robot_description(graph.env['ROS_DOMAIN_ID'], 30.0)
        assert received and '<robot name="phil"' in received[0], graph.text()
        assert graph.interrupt(45.0) == 0, graph.text()
    finally:
        graph.stop()
    output = graph.text()
    assert 'started phil_description/description_publisher' in output
    assert '[phil] stopped' in output
    assert (graph.log_dir / 'hardware.log').is_file()


def test_nothing_outlives_a_killed_launcher(tmp_path):
    graph = RunningGraph(tmp_path).start()
    try:
        pids = graph.started_pids()
        assert len(pids) == 7, graph.text()
        graph.process.kill()        # no chance to clean up: the children must go by themselves
        graph.process.wait()
        deadline = time.monotonic() + 30.0
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.5)
            alive = [pid for pid in pids if _exists(pid)]
        assert alive == [], f'still running after the launcher died: {alive}'
    finally:
        graph.stop()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize('delay_s', [0.0, 0.5, 1.5])
def test_ctrl_c_while_the_nodes_start_stops_everything_cleanly(tmp_path, delay_s):
    """Ctrl-C as soon as every process is started (nodes still in their constructors)."""
    graph = RunningGraph(tmp_path).launch()
    try:
        assert graph.wait_for_output('[phil] ready', 60.0), graph.text()
        time.sleep(delay_s)
        assert graph.interrupt(45.0) == 0, graph.text()
    finally:
        graph.stop()
    for log in graph.log_dir.glob('*.log'):
        # A KeyboardInterrupt traceback from a process still importing is Python's way of
        # stopping, also when it lands in an import-lock callback, where Python reports it as
        # "Exception ignored in: ..." and the launcher's next SIGINT stops the process; any
        # other exception is a shutdown bug.
        text = log.read_text()
        ignored_interrupts = re.compile(
            r'^Exception ignored in: .*\n(?:(?:Traceback| ).*\n)*KeyboardInterrupt\b.*$', re.M)
        errors = re.findall(r'^\w*(?:Error|Exception|InvalidHandle)\b.*$',
                            ignored_interrupts.sub('', text), re.M)
        assert errors == [], f'{log.name}:\n{text[-2000:]}'
