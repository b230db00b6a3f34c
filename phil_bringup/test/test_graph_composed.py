"""The whole graph with the command path composed (``--composed``: tcp_bridge,
behavior_planner, trajectory_generator and score_player in one process, one executor), driven
over TCP like the brain: START, READY, HIT, PLAY, QUIT ends every process with status 0; a
parameter a node refuses stops the graph with status 78, naming the node and its file."""

import time
from pathlib import Path

import pytest

from phil_bringup.testing.graph import RunningGraph, wait_until
from phil_hardware.core.cpu_load import cpu_seconds

pytest.importorskip('rclpy')

from phil_description.core.exit_status import CONFIG_ERROR_EXIT

pytestmark = pytest.mark.timeout(300)

COMPOSED = ('--composed',)
WAITING_CPU_WINDOW_S = 2.0
MEMBERS = ('tcp_bridge', 'behavior_planner', 'trajectory_generator', 'score_player')


def rows(path: Path) -> int:
    return len(path.read_text().splitlines()) - 1 if path.is_file() else 0


def test_the_composed_command_path_plays_and_quits_with_status_0(tmp_path):
    with RunningGraph(tmp_path, COMPOSED) as robot:
        process = robot.pid_of('command_path')
        for name in MEMBERS:  # one process instead of four
            with pytest.raises(KeyError):
                robot.pid_of(name)
        robot.start_robot()
        robot.wait_state('IDLE', 30.0)

        hits = robot.log_dir / 'hits.csv'
        assert robot.line('HIT|snare') == 'OK|HIT'
        assert wait_until(lambda: rows(hits) > 0, 30.0), robot.text()
        robot.wait_state('IDLE', 30.0)

        assert robot.line('PLAY|rock') == 'OK|PLAY'
        robot.wait_state('PLAYING', 10.0)
        # The play's goals wait in coroutines: on the one SingleThreadedExecutor waiting costs
        # no CPU (an EventsExecutor would keep a core busy for every waiting coroutine).
        before = cpu_seconds(process)
        time.sleep(WAITING_CPU_WINDOW_S)
        assert cpu_seconds(process) - before < 0.6 * WAITING_CPU_WINDOW_S
        played = rows(hits)
        assert wait_until(lambda: rows(hits) > played, 20.0), robot.text()
        assert robot.line('PLAY_CTRL|stop') == 'OK|PLAY_CTRL'
        robot.wait_state('IDLE', 30.0)

        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
        assert 'every node exited after QUIT' in robot.text()
        log = (robot.log_dir / 'command_path.log').read_text()
        for name in MEMBERS:  # each node followed the graph shutdown itself
            assert f'[{name}]: graph shutdown requested' in log, log[-3000:]


def test_a_bad_parameter_of_a_composed_node_stops_the_graph_with_78(tmp_path):
    robot = RunningGraph(tmp_path, (*COMPOSED, '--param', 'tcp_bridge.reply_timeout_s=-1.0'))
    robot.launch()
    try:
        assert robot.process.wait(60.0) == CONFIG_ERROR_EXIT, robot.text()
        [line] = [line for line in robot.output if 'configuration refused' in line]
        assert line.startswith('[phil] tcp_bridge (parameters: ') and 'config/tcp_bridge.yaml' in (
            line
        ), line
        assert ' in command_path: configuration refused: parameter reply_timeout_s = -1.0' in line
        assert 'Traceback' not in robot.text()
        assert all(not Path(f'/proc/{pid}').exists() for pid in robot.started_pids())
    finally:
        robot.stop()
