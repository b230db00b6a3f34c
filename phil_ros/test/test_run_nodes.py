"""run_nodes in a real process: several nodes on one executor each follow the graph shutdown
(their own hook, once) and the process exits with 0 after releasing them in reverse build
order; a node that refuses its configuration ends the process with 78 and one line naming
it."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest

rclpy = pytest.importorskip('rclpy')

from phil_description.core.exit_status import CONFIG_ERROR_EXIT  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.msg import GraphShutdown  # noqa: E402
from phil_ros.graph_safety import sign_message  # noqa: E402
from phil_ros.graph_shutdown import GRAPH_SHUTDOWN_QOS, GRAPH_SHUTDOWN_TOPIC  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

TIMEOUT_S = 60.0

NODES = textwrap.dedent("""
    import sys
    from rclpy.node import Node
    from phil_ros.executors import waiting_executor
    from phil_ros.node_runner import run_nodes

    def maker(name):
        class Member(Node):
            def __init__(self):
                super().__init__(name)
                if name == sys.argv[1]:
                    raise ValueError(f'parameter answer = 41 must be 42')
                print(f'built {name}', flush=True)
                if name == 'third':
                    print('ready', flush=True)

            def on_graph_shutdown(self):
                print(f'hook {name}', flush=True)

            def release(self):
                print(f'released {name}', flush=True)

            def destroy_node(self):  # after a refused configuration
                print(f'destroyed {name}', flush=True)
                super().destroy_node()
        return Member

    run_nodes({n: maker(n) for n in ('first', 'second', 'third')},
              make_executor=waiting_executor)
    print('returned', flush=True)  # never: the process ends after the releases
""")


def start(refusing: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, '-c', NODES, refusing],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def domain_env():
    return dict(os.environ, ROS_DOMAIN_ID=str(random.randint(231, 232)))


def test_every_node_follows_the_graph_shutdown_then_the_process_exits_0(domain_env):
    process = start('none', domain_env)
    try:
        assert process.stdout.readline().strip() == 'built first'
        assert process.stdout.readline().strip() == 'built second'
        assert process.stdout.readline().strip() == 'built third'
        assert process.stdout.readline().strip() == 'ready'
        with ros_test_context(int(domain_env['ROS_DOMAIN_ID'])) as context:
            node = rclpy.create_node('shutdown_sender', context=context)
            publisher = node.create_publisher(
                GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
            )
            publisher.publish(
                sign_message(GraphKey.from_environment(), GraphShutdown(reason='QUIT', nonce='a'))
            )
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
            node.destroy_node()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    lines = stdout.splitlines()
    assert sorted(lines[:3]) == ['hook first', 'hook second', 'hook third'], stdout
    assert lines[3:] == ['released third', 'released second', 'released first']


def test_a_refused_configuration_names_the_node_and_exits_78(domain_env):
    process = start('second', domain_env)
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == CONFIG_ERROR_EXIT, stderr
    # (rclpy's shutdown then destroys the half-built second node too.)
    assert stdout.splitlines()[:2] == ['built first', 'destroyed first'], stdout
    assert 'built third' not in stdout and 'returned' not in stdout
    assert stderr.strip().splitlines()[-1] == (
        'second: configuration refused: parameter answer = 41 must be 42'
    ), stderr
    assert 'Traceback' not in stderr


# A launcher that starts the nodes as the real one does (its pid in their environment) but asks
# for no SIGINT at its death: what a node sees when that signal was lost while it imported.
LAUNCHER = textwrap.dedent("""
    import os, subprocess, sys, time
    os.environ['PHIL_PARENT_PID'] = str(os.getpid())
    nodes = subprocess.Popen([sys.executable, '-c', sys.argv[1], 'none'])
    print(f'nodes {nodes.pid}', flush=True)
    time.sleep(3600)
""")


def test_nodes_whose_launcher_was_killed_stop_cleanly_without_its_signal(domain_env):
    launcher = subprocess.Popen(
        [sys.executable, '-c', LAUNCHER, NODES],
        env=domain_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: list[str] = []
    while 'ready' not in started and launcher.poll() is None:
        started.append(launcher.stdout.readline().strip())
    nodes_pid = int(next(line for line in started if line.startswith('nodes ')).split()[1])
    launcher.kill()
    try:
        # The pipe closes once the orphaned nodes' process has exited too.
        remaining, _ = launcher.communicate(timeout=TIMEOUT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(nodes_pid, signal.SIGKILL)
    assert remaining.splitlines() == ['released third', 'released second', 'released first']
