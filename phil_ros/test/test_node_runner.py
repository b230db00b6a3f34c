"""run_node in real processes: a node whose executor threads are busy when `/phil/shutdown`
arrives exits with code 0, having run its before-exit hook exactly once, and only for a
shutdown signed with the graph key; a teardown that hangs (holding the GIL, as a middleware
deadlock does) still ends the process."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from phil_description.core.exit_status import STACK_DUMP_SIGNAL  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.msg import GraphShutdown  # noqa: E402
from phil_ros.graph_safety import sign_message  # noqa: E402
from phil_ros.graph_shutdown import GRAPH_SHUTDOWN_QOS, GRAPH_SHUTDOWN_TOPIC  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

PROCESSES = 4
READY_TIMEOUT_S = 60.0
EXIT_TIMEOUT_S = 45.0

# Busy timers on a 4-thread executor, each publishing: the shape of the trajectory generator and
# hardware nodes that used to fail on destroyed handles when QUIT arrived mid-callback.
BUSY_NODE = textwrap.dedent("""
    import sys
    import time
    from rclpy.executors import MultiThreadedExecutor
    import phil_ros.node_runner as node_runner
    from rclpy.node import Node
    from std_msgs.msg import String
    from phil_ros.node_runner import run_node

    class Busy(Node):
        def __init__(self):
            super().__init__('busy_' + sys.argv[1])
            self.out = self.create_publisher(String, '~/chatter', 10)
            # Many entities make the executor's wait-set build long: the window the old race hit.
            self.extra = [self.create_publisher(String, f'~/extra_{i}', 10) for i in range(40)]
            self.extra += [self.create_subscription(String, '~/chatter', lambda _: None, 10)
                           for _ in range(10)]
            self.hooks = 0
            for _ in range(4):
                self.create_timer(0.001, self.work)
            print('ready', flush=True)

        def work(self):
            self.out.publish(String(data='x' * 100))

        def on_graph_shutdown(self):
            self.hooks += 1
            print(f'hook {self.hooks}', flush=True)

        def release(self):
            print('released', flush=True)

    # Generous: a busy machine took over 1 s to tear these nodes down.
    node_runner.TEARDOWN_TIMEOUT_S = 10.0
    run_node(Busy, make_executor=lambda: MultiThreadedExecutor(num_threads=4))
    print('returned', flush=True)  # never: the process ends after the release
""")


@pytest.fixture
def domain_env():
    return dict(os.environ, ROS_DOMAIN_ID=str(random.randint(201, 230)))


def _wait_for_line(process: subprocess.Popen, expected: str, timeout_s: float) -> list[str]:
    lines, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if line.strip() == expected:
            return lines
    raise AssertionError(f'no {expected!r} from the node within {timeout_s} s: {lines}')


def test_graph_shutdown_ends_busy_multithreaded_nodes_with_code_0(domain_env):
    processes = [
        subprocess.Popen(
            [sys.executable, '-c', BUSY_NODE, str(index)],
            env=domain_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(PROCESSES)
    ]
    try:
        for process in processes:
            _wait_for_line(process, 'ready', READY_TIMEOUT_S)
        with ros_test_context(int(domain_env['ROS_DOMAIN_ID'])) as context:
            node = rclpy.create_node('shutdown_sender', context=context)
            publisher = node.create_publisher(
                GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
            )
            foreign = node.create_publisher(
                GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
            )
            # From outside the graph (no key, another key): ignored, the nodes run on.
            foreign.publish(GraphShutdown(reason='unsigned', nonce='a'))
            foreign.publish(
                sign_message(
                    GraphKey('not the graph key at all'),
                    GraphShutdown(reason='foreign', nonce='b'),
                )
            )
            time.sleep(2.0)
            assert [process.poll() for process in processes] == [None] * PROCESSES
            # Latched: late-matching subscribers get it too.
            publisher.publish(
                sign_message(GraphKey.from_environment(), GraphShutdown(reason='QUIT', nonce='c'))
            )
            outputs = []
            for process in processes:
                stdout, stderr = process.communicate(timeout=EXIT_TIMEOUT_S)
                outputs.append((process.returncode, stdout, stderr))
            node.destroy_node()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    # All leave at once, the case where Fast DDS could deadlock destroying their entities (an
    # open middleware bug, eProsima/Fast-DDS#6193, #6502): no DDS teardown, every one exits 0.
    for code, stdout, stderr in outputs:
        assert code == 0, stderr
        assert stdout.splitlines() == ['hook 1', 'released'], stdout
        assert 'Error' not in stderr and 'Traceback' not in stderr, stderr


HANGING_TEARDOWN = textwrap.dedent("""
    import ctypes
    from rclpy.node import Node
    import phil_ros.node_runner as node_runner

    class Stuck(Node):
        def __init__(self):
            super().__init__('stuck_teardown')
            print('ready', flush=True)

        def release(self):
            ctypes.PyDLL(None).sleep(60)  # a C call that keeps the GIL

    node_runner.TEARDOWN_TIMEOUT_S = 1.0
    node_runner.run_node(Stuck)
    print('returned', flush=True)
""")


def test_a_teardown_that_hangs_holding_the_gil_still_ends_the_process(domain_env):
    # CI may start the tests with SIGINT ignored; the child must get Ctrl-C like a node does.
    process = subprocess.Popen(
        [sys.executable, '-c', HANGING_TEARDOWN],
        env=domain_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        _wait_for_line(process, 'ready', READY_TIMEOUT_S)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=EXIT_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, (process.returncode, stderr)
    assert 'returned' not in stdout
    assert 'Timeout (0:00:01)!' in stderr
    assert 'in release' in stderr  # the stuck frame is named


def test_a_coroutine_waiting_on_the_waiting_executor_is_woken_by_the_completion_alone():
    """While the coroutine waits the executor sleeps (no busy loop: a handful of rounds in
    all), and the completion wakes it (a round that would otherwise sleep for a minute).
    rclpy 9 needs 3 rounds, rclpy 7 (Jazzy) 4: a busy loop would use all 10."""
    from phil_ros.executors import waiting_executor
    from phil_ros.waking_future import complete, waking_future

    with ros_test_context() as context:
        node = rclpy.create_node('waiting_probe', context=context)
        executor = waiting_executor(context)
        executor.add_node(node)
        futures = []

        async def wait_for_the_end():
            futures.append(waking_future(node))
            return await futures[0]

        task = executor.create_task(wait_for_the_end())
        executor.spin_once(timeout_sec=0.1)
        assert futures and not task.done()
        completer = threading.Timer(0.5, complete, args=(futures[0], 'ended'))
        completer.start()
        rounds = 0
        while not task.done() and rounds < 10:
            executor.spin_once(timeout_sec=60.0)
            rounds += 1
        completer.join()
        executor.shutdown()
        node.destroy_node()
    assert task.result() == 'ended'
    assert rounds <= 4, f'{rounds} executor rounds while waiting'


FREEZE_PROBE = textwrap.dedent("""
    import gc
    import os
    import signal
    from rclpy.node import Node
    from phil_ros.node_runner import run_node

    class Probe(Node):
        def __init__(self):
            super().__init__('freeze_probe')
            self.create_timer(0.01, self.report)

        def report(self):
            print(f'frozen {gc.get_freeze_count()}', flush=True)
            os.kill(os.getpid(), signal.SIGTERM)  # a stop request

    run_node(Probe)
""")


def _run_probe(source: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run a probe script (one node under ``run_node`` that stops itself); must exit 0."""
    done = subprocess.run(
        [sys.executable, '-c', source], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done


def test_start_up_objects_are_frozen_out_of_the_garbage_collector(domain_env):
    done = _run_probe(FREEZE_PROBE, domain_env)
    frozen = int(done.stdout.split()[1])
    # rclpy, the message types and the node: tens of thousands of objects no full collection
    # walks any more.
    assert frozen > 10_000, done.stdout


TEARDOWN_PROBE = textwrap.dedent("""
    import os
    import signal
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from phil_ros.node_runner import run_node

    order = []
    contexts = []

    class RecordingExecutor(SingleThreadedExecutor):
        def shutdown(self, timeout_sec=None):
            # The wait of the last spin is still open here (the generator holds the handles).
            order.append(f'context up: {rclpy.ok()}')
            order.append(f'executor shut down (wait open: {self._cb_iter is not None})')
            done = super().shutdown(timeout_sec)
            order.append(f'wait closed: {self._cb_iter is None}')
            return done

    class Probe(Node):
        def __init__(self):
            super().__init__('teardown_probe')
            contexts.append(self.context)
            self.create_timer(0.01, self.stop)

        def stop(self):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C

        def release(self):
            order.append(f'node released (context up: {rclpy.ok()})')
            print(order, flush=True)

    run_node(Probe, make_executor=RecordingExecutor)
    print('returned', flush=True)  # never: the process ends after the release
""")


def test_after_ctrl_c_the_executor_is_shut_down_then_the_node_released_and_the_process_ends(
    domain_env,
):
    """The last spin's open wait holds every entity's handle; it closes before the node's own
    teardown (Jazzy's rclpy crashed at exit otherwise). Ctrl-C must not shut the context down
    under it, as rclpy's own signal handler would. Then the process ends with 0 without
    rclpy's teardown: run_node does not return."""
    done = _run_probe(TEARDOWN_PROBE, domain_env)
    assert done.stdout.strip() == str(
        [
            'context up: True',
            'executor shut down (wait open: True)',
            'wait closed: True',
            'node released (context up: True)',
        ]
    )


ACTION_TEARDOWN_PROBE = textwrap.dedent("""
    import os
    import signal
    from rclpy.action import ActionServer
    from rclpy.node import Node
    from phil_msgs.action import Hit
    from phil_ros.executors import waiting_executor
    from phil_ros.node_runner import run_node

    order = []

    class RecordingServer(ActionServer):
        def destroy(self):
            order.append('action server destroyed')
            super().destroy()

    class Probe(Node):
        def __init__(self):
            super().__init__('action_teardown_probe')
            self.server = RecordingServer(self, Hit, '~/hit', lambda handle: Hit.Result())
            self.create_timer(0.01, self.fail)

        def fail(self):
            raise RuntimeError('a bug in a callback')

        def destroy_node(self):
            servers = [w for w in self.waitables if isinstance(w, ActionServer)]
            order.append(f'node destroyed (action servers left: {len(servers)})')
            print(order, flush=True)
            super().destroy_node()

    run_node(Probe, make_executor=waiting_executor)
""")


def test_after_an_error_action_servers_are_destroyed_with_their_node(domain_env):
    """After an error the process tears everything down before the error's report. rclpy's
    destroy_node leaves action servers alone; their handles must not outlive the node and the
    context (Jazzy's score player crashed at exit)."""
    done = subprocess.run(
        [sys.executable, '-c', ACTION_TEARDOWN_PROBE],
        env=domain_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert 'RuntimeError: a bug in a callback' in done.stderr
    assert done.stdout.strip() == str(
        ['action server destroyed', 'node destroyed (action servers left: 0)']
    )


CTRL_C_WHILE_BUILDING = textwrap.dedent("""
    import os
    import signal
    from rclpy.node import Node
    from std_msgs.msg import String
    from phil_ros.node_runner import run_node

    class HalfBuilt(Node):
        def __init__(self):
            super().__init__('ctrl_c_while_building')
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C halfway through the constructor
            self.create_publisher(String, '~/after_the_signal', 10)
            print('built', flush=True)

        def release(self):
            print('released', flush=True)

    run_node(HalfBuilt)
""")


def test_ctrl_c_while_a_node_is_built_lets_it_finish_then_stops_cleanly(domain_env):
    """Neither a KeyboardInterrupt in the middle of the constructor nor a context shut down
    under it: the node is built whole, then released, and the process exits 0."""
    done = _run_probe(CTRL_C_WHILE_BUILDING, domain_env)
    assert done.stdout.splitlines() == ['built', 'released']
    assert 'Traceback' not in done.stderr, done.stderr


LISTENER = textwrap.dedent("""
    from rclpy.node import Node
    from phil_ros.node_runner import run_node

    class Listener(Node):
        def __init__(self):
            super().__init__('shutdown_listener')
            print('ready', flush=True)

        def release(self):
            print('released', flush=True)

    run_node(Listener)
""")


@contextlib.contextmanager
def running_listener(domain_env):
    """A node process run by ``run_node`` (ready: its constructor ran); killed if it is
    still running at the end."""
    listener = subprocess.Popen(
        [sys.executable, '-c', LISTENER],
        env=domain_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_line(listener, 'ready', READY_TIMEOUT_S)
        yield listener
    finally:
        if listener.poll() is None:  # SIGKILL ends it, stopped or not
            listener.kill()
            listener.wait()


@contextlib.contextmanager
def matched_sender(domain_env):
    """A GraphShutdownSender in this process whose writer has matched the listener."""
    from phil_ros.graph_shutdown import GraphShutdownSender

    with ros_test_context(int(domain_env['ROS_DOMAIN_ID'])) as context:
        node = rclpy.create_node('shutdown_sender', context=context)
        sender = GraphShutdownSender(node, GraphKey.from_environment())
        deadline = time.monotonic() + READY_TIMEOUT_S
        # The writer's own match, not the graph's view (which can come first): with no reader
        # matched, everything sent counts as acknowledged.
        while sender.matched < 1:
            assert time.monotonic() < deadline, 'the listener never subscribed'
            time.sleep(0.05)
        yield sender
        node.destroy_node()  # the only writer of the message is gone


def test_the_graph_shutdown_sender_waits_until_every_node_has_the_message(domain_env):
    """The sender stops at once after sending (it runs real-time); a slower node whose copy
    was lost in transit must still get it, so the sender stays until every node
    acknowledged it."""
    with running_listener(domain_env) as listener:
        with matched_sender(domain_env) as sender:
            os.kill(listener.pid, signal.SIGSTOP)  # a node that cannot run right now
            sender.send()
            # Not delivered while the node cannot acknowledge it; the sender must stay.
            assert not sender.wait_delivered(timeout_s=0.5)
            # A QUIT right after start-up: a node not yet matched would never get it.
            assert not sender.wait_delivered(subscribers=2, timeout_s=0.5)
            os.kill(listener.pid, signal.SIGCONT)
            assert sender.wait_delivered(subscribers=1, timeout_s=10.0)
        stdout, stderr = listener.communicate(timeout=EXIT_TIMEOUT_S)
    assert listener.returncode == 0, stderr
    assert stdout.splitlines() == ['released'], stdout


def test_a_node_that_got_the_graph_shutdown_and_left_counts_as_delivered(domain_env):
    """The nodes leave the moment they get the message, often before the sender looks: one
    matched when it was sent and gone since counts, so the sender does not wait out its time
    for a node that is no longer there (every QUIT took 5 s longer)."""
    with running_listener(domain_env) as listener, matched_sender(domain_env) as sender:
        sender.send()
        stdout, stderr = listener.communicate(timeout=EXIT_TIMEOUT_S)
        assert stdout.splitlines() == ['released'], stderr
        assert sender.wait_delivered(subscribers=1, timeout_s=10.0)


def test_a_node_prints_its_stacks_on_the_stack_dump_signal_and_runs_on(domain_env):
    """What the launcher sends a node that does not exit after QUIT: the node's log then says
    where it hangs; the node is not ended by it (the launcher stops it next)."""
    with running_listener(domain_env) as listener:
        listener.send_signal(STACK_DUMP_SIGNAL)
        listener.send_signal(signal.SIGINT)
        stdout, stderr = listener.communicate(timeout=EXIT_TIMEOUT_S)
    assert listener.returncode == 0, stderr
    assert stdout.splitlines() == ['released'], stdout
    assert 'most recent call first' in stderr and 'in run_nodes' in stderr, stderr
