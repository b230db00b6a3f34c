"""The run command's launcher starts the node set as processes and stops them cleanly on
Ctrl-C (its own ROS domain, buses and TCP port, so nothing else on the machine interferes)."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from phil_bringup.core.node_set import nodes_for  # noqa: E402
from phil_bringup.testing.graph import RunningGraph, niceness_of  # noqa: E402
from phil_description.core.exit_status import STACK_DUMP_SIGNAL  # noqa: E402
from phil_ros.qos import LATCHED  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402


def robot_description(domain_id: str, timeout_s: float) -> list[str]:
    """The latched robot_description as a fresh subscriber in ``domain_id`` sees it."""
    with ros_test_context(int(domain_id)) as context:
        probe = rclpy.create_node('launcher_probe', context=context)
        received = []
        probe.create_subscription(
            String, 'robot_description', lambda msg: received.append(msg.data), LATCHED
        )
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(probe)
        deadline = time.monotonic() + timeout_s
        while not received and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.2)
        executor.shutdown()
        probe.destroy_node()
        return received


def test_launcher_runs_the_graph_and_stops_on_ctrl_c(tmp_path):
    graph = RunningGraph(tmp_path).start()  # answers GET_STATUS over TCP: every node is up
    try:
        received = robot_description(graph.env['ROS_DOMAIN_ID'], 30.0)
        assert received and '<robot name="phil"' in received[0], graph.text()
        # Every process runs with its declared scheduling: SCHED_RR at its priority, else
        # time-sharing at its niceness; refused, the normal one, said.
        privileged = os.geteuid() == 0
        for spec in nodes_for(sim=True):
            pid = graph.pid_of(spec.name)
            if spec.rt_priority and privileged:
                assert os.sched_getscheduler(pid) == os.SCHED_RR, spec.name
                assert os.sched_getparam(pid).sched_priority == spec.rt_priority, spec.name
            else:
                assert os.sched_getscheduler(pid) == os.SCHED_OTHER, spec.name
                assert niceness_of(pid) == (spec.niceness if privileged else 0), spec.name
        assert privileged or (
            'niceness -10 refused' in graph.text()
            and 'SCHED_RR priority 10 refused' in graph.text()
        )
        assert graph.interrupt(45.0) == 0, graph.text()
    finally:
        graph.stop()
    output = graph.text()
    assert 'started phil_bringup/description_publisher' in output
    assert '[phil] stopped' in output
    assert (graph.log_dir / 'hardware.log').is_file()


def test_nothing_outlives_a_killed_launcher(tmp_path):
    graph = RunningGraph(tmp_path).start()
    alive: list[int] = []
    try:
        pids = graph.started_pids()
        assert len(pids) == len(nodes_for(sim=True)), graph.text()
        graph.process.kill()  # no chance to clean up: the children must go by themselves
        graph.process.wait()
        # Generous: a node still starting when the launcher died finishes starting first.
        deadline = time.monotonic() + 60.0
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.5)
            alive = [pid for pid in pids if _exists(pid)]
        names = {graph.pid_of(spec.name): spec.name for spec in nodes_for(sim=True)}
        still = [names.get(pid, pid) for pid in alive]
        assert alive == [], f'still running after the launcher died: {still}'
    finally:
        graph.stop()
        for pid in alive:  # none left for later tests to meet
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


_ERROR_LINE = re.compile(r'^[\w.]*(?:Error|Exception|InvalidHandle)\b')
_REPORT_LINE = re.compile(
    r'^(?:$|\s|Traceback|During handling|The above exception|'
    r'Exception ignored in|Fatal Python error|Python runtime state)'
)


def _errors_besides_interrupts(text: str) -> list[str]:
    """Error lines of a log, without Python's reports of a SIGINT.

    A KeyboardInterrupt from a process still starting is Python's way of stopping, however it is
    reported: a traceback, one chained to an error inside the interpreter's start-up ("Fatal
    Python error: init_import_site"), the cause of an ImportError of a C extension, or
    "Exception ignored in" an import-lock callback. A report (chained tracebacks) that names
    KeyboardInterrupt is dropped; any other exception is a shutdown bug.
    """
    errors: list[str] = []
    report: list[str] = []
    interrupted = False
    for line in text.splitlines():
        if line.startswith('KeyboardInterrupt'):
            interrupted = True
        elif _REPORT_LINE.match(line) or _ERROR_LINE.match(line):
            report.append(line)
        else:
            if not interrupted:
                errors += [item for item in report if _ERROR_LINE.match(item)]
            report, interrupted = [], False
    if not interrupted:
        errors += [item for item in report if _ERROR_LINE.match(item)]
    return errors


def test_interrupt_reports_are_told_from_shutdown_errors():
    interrupted = (
        'Fatal Python error: init_import_site: Failed to import the site module\n'
        'Traceback (most recent call last):\n  File "types.py", line 54\n'
        'TypeError\n\nDuring handling of the above exception, another exception '
        'occurred:\n\nTraceback (most recent call last):\n  File "types.py"\n'
        'KeyboardInterrupt\n'
        'Exception ignored in: <function _get_module_lock.<locals>.cb>\n'
        'Traceback (most recent call last):\n  File "<frozen>", line 199, in cb\n'
        'KeyboardInterrupt: \n[INFO] [score_player]: ready\n'
    )
    assert _errors_besides_interrupts(interrupted) == []
    import_interrupted = (
        'KeyboardInterrupt\n\nThe above exception was the direct cause of '
        'the following exception:\n\nTraceback (most recent call last):\n'
        '  File "score_player", line 33\nImportError: initialization failed\n'
        "The C extension '_rclpy_pybind11' isn't present on the system.\n"
    )
    assert _errors_besides_interrupts(import_interrupted) == []
    broken = (
        '[INFO] ready\nTraceback (most recent call last):\n  File "node.py", line 3\n'
        'rclpy._rclpy_pybind11.InvalidHandle: destroyed\n[INFO] bye\n'
        'Exception ignored in: <function cb>\nValueError: x\n'
    )
    assert _errors_besides_interrupts(broken) == [
        'rclpy._rclpy_pybind11.InvalidHandle: destroyed',
        'Exception ignored in: <function cb>',
        'ValueError: x',
    ]


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
        text = log.read_text()
        errors = _errors_besides_interrupts(text)
        assert errors == [], f'{log.name}:\n{text[-2000:]}'


def test_a_node_that_misses_the_graph_shutdown_is_stopped_after_the_grace(monkeypatch, capsys):
    """After QUIT, once one node has ended, a node still running after the grace is named,
    prints where it hangs (its threads' stacks, as every node registers the stack-dump signal)
    and the launcher moves on to stopping it (instead of waiting forever)."""
    from phil_bringup import launcher as launcher_module
    from phil_bringup.core.node_set import NodeSpec

    monkeypatch.setattr(launcher_module, 'QUIT_EXIT_GRACE_S', 0.5)
    launcher = launcher_module.Launcher([], sim=True, log_dir=None)
    ended = subprocess.Popen([sys.executable, '-c', 'pass'])
    # Started as the launcher starts a node (own session, Ctrl-C not ignored even where the
    # test runner ignores it), registering the stack dump as node_runner does.
    hanging_node = (
        'import faulthandler, sys, time\n'
        f'faulthandler.register({int(STACK_DUMP_SIGNAL)}, all_threads=True)\n'
        'print("registered", flush=True)\n'
        'def hang_in_teardown():\n'
        '    time.sleep(60)\n'
        'hang_in_teardown()\n'
    )
    lingering = subprocess.Popen(
        [sys.executable, '-c', hanging_node],
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert lingering.stdout.readline() == 'registered\n'
    try:
        launcher._running = [
            launcher_module.Running(
                NodeSpec('phil_control', 'behavior_planner', 'behavior_planner'), ended
            ),
            launcher_module.Running(
                NodeSpec('phil_control', 'score_player', 'score_player'), lingering
            ),
        ]
        assert launcher.watch(timeout_s=30.0) == 1
        assert (
            'score_player did not exit within 0.5 s of the graph shutdown'
            in capsys.readouterr().err
        )
        launcher.stop()
        assert lingering.poll() is not None
        # faulthandler's format (a KeyboardInterrupt traceback says "line N, in").
        assert re.search(r'line \d+ in hang_in_teardown', lingering.stderr.read())
    finally:
        if lingering.poll() is None:
            lingering.kill()
            lingering.wait()


def test_a_failed_graph_story_leads_with_the_logs_of_the_processes_named_as_failing(tmp_path):
    """A report that CI shortens in the middle still shows why: the logs of the nodes the
    launcher named (not exited, exited with an error) come right after its own lines, longer
    than the others."""
    graph = RunningGraph(tmp_path)
    graph.log_dir.mkdir()
    graph.output = [
        '[phil] started phil_control/tcp_bridge as tcp_bridge (pid 1)\n',
        '[phil] tcp_bridge, score_player did not exit within 10 s of the graph shutdown; '
        'its stacks are in its log; stopping it\n',
        '[phil] hardware exited with code 1\n',
    ]
    for name in ('behavior_planner', 'hardware', 'tcp_bridge', 'score_player'):
        lines = [f'{name} line {index}' for index in range(100)]
        (graph.log_dir / f'{name}.log').write_text('\n'.join(lines) + '\n')
    story = graph.story(lines=10)
    headers = re.findall(r'--- (\w+)\.log', story)
    assert headers == ['tcp_bridge', 'score_player', 'hardware', 'behavior_planner']
    assert 'tcp_bridge line 60' in story and 'behavior_planner line 89' not in story
