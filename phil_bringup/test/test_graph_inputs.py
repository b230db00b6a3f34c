"""No input moves the robot past the state machine, opens a file outside the scores or exhausts
the robot: the whole graph against the simulators, fed on purpose what a foreign node, a
careless client or a broken score sends.

* Every input of the hardware and of the nodes behind the planner, from a ROS node that does
  not hold the graph key: nothing moves, nothing un-latches, the graph keeps running. RESET
  holds the joints where they are measured, and the next motion starts there.
* ``PLAY`` with a path is refused before anything is opened; scores beyond the physical limits
  are refused by the score player, which keeps serving; no log carries a file's contents or the
  environment.
* No client locks out another one's ESTOP; a burst of motions is answered line by line (those
  beyond the motion queue refused with the reason) and starves nothing: no FEEDBACK_TIMEOUT.
  One client's flood does not hold another client's GET_STATUS back until the flood is done.
"""

from __future__ import annotations

import math
import secrets
import shutil
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from phil_bringup.testing.graph import BusLoopView, RunningGraph, wait_until

rclpy = pytest.importorskip('rclpy')

from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from phil_control.core.score import write_play_list  # noqa: E402
from phil_description.core import default_robot_model  # noqa: E402
from phil_msgs.action import Hit, Move  # noqa: E402
from phil_msgs.msg import GraphShutdown, TrajectoryChunk  # noqa: E402
from phil_msgs.srv import HardwareRequest  # noqa: E402
from phil_ros.graph_shutdown import GRAPH_SHUTDOWN_QOS, GRAPH_SHUTDOWN_TOPIC  # noqa: E402
from phil_ros.testing import DISCOVERY_TIMEOUT_S, ros_test_context  # noqa: E402

pytestmark = pytest.mark.timeout(300)
MODEL = default_robot_model(sim=True)
ROOT = Path(__file__).resolve().parents[2]
ELBOW = MODEL.joint('right_elbow').index
HEAD = MODEL.joint('head_yaw').index
JUNK_LINES = 200
JUNK_LINE_BYTES = 4000  # under the 4096-byte line limit: each is parsed, refused and logged


def started(robot: RunningGraph) -> BusLoopView:
    """START and READY; the bus loop's view once the home motion is done."""
    view = robot.bus_loop()
    robot.start_robot()
    home = MODEL.poses['home']
    assert view.wait(
        lambda s: np.degrees(np.abs(np.array(s.targets_rad) - home)).max() < 0.01, 30.0
    ), robot.text()
    return view


def moved_deg(view: BusLoopView, targets: np.ndarray) -> float:
    return float(np.degrees(np.abs(np.array(view.snapshot().targets_rad) - targets)).max())


class Intruder:
    """A ROS node in the graph's domain without the graph key, trying every input."""

    def __init__(self, context) -> None:
        self.node = rclpy.create_node('intruder', context=context)
        node = self.node
        self.publishers = {
            'joint_trajectory': node.create_publisher(
                JointTrajectory, '/hardware/joint_trajectory', 10
            ),
            'hardware_chunks': node.create_publisher(
                TrajectoryChunk, '/hardware/trajectory_chunks', 10
            ),
            'score_chunks': node.create_publisher(
                TrajectoryChunk, '/trajectory_generator/chunks', 10
            ),
            'shutdown': node.create_publisher(
                GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
            ),
        }
        self.move = ActionClient(node, Move, '/trajectory_generator/move')
        self.hit = ActionClient(node, Hit, '/score_player/hit')
        self.request = node.create_client(HardwareRequest, '/hardware/request')
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def publish(self, name: str, msg) -> None:
        publisher = self.publishers[name]
        assert wait_until(lambda: publisher.get_subscription_count() > 0, 10.0), name
        publisher.publish(msg)

    def done(self, future, timeout_s: float = 20.0):
        assert wait_until(future.done, timeout_s)
        return future.result()

    def goal_result(self, client, goal):
        """Send ``goal`` until the server answers, then its result. A new client's first
        answers can be dropped (the discovery race that behavior_planner/discovery.py meets
        the same way; a loaded run lost one for 20 s); every goal sent here is foreign, so
        each is refused and none moves anything, which the test checks after."""
        assert client.wait_for_server(timeout_sec=DISCOVERY_TIMEOUT_S)
        deadline = time.monotonic() + 20.0
        future = client.send_goal_async(goal)
        while not wait_until(future.done, 2.0) and time.monotonic() < deadline:
            future = client.send_goal_async(goal)
        handle = self.done(future)
        return self.done(handle.get_result_async()).result

    def reset(self):
        assert self.request.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT_S)
        return self.done(
            self.request.call_async(
                HardwareRequest.Request(
                    request='reset', stamp_ns=time.time_ns(), nonce=secrets.token_hex(8)
                )
            )
        )

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(5.0)
        self.node.destroy_node()


def chunk_moving(joint: int, from_rad: float, to_rad: float) -> TrajectoryChunk:
    msg = TrajectoryChunk(sequence=1)
    msg.trajectory.joint_names = [MODEL.joint_names[joint]]
    for step in range(1, 21):
        point = JointTrajectoryPoint(positions=[from_rad + (to_rad - from_rad) * step / 20])
        point.time_from_start.nanosec = step * 25_000_000
        msg.trajectory.points.append(point)
    return msg


@pytest.fixture
def graph(tmp_path):
    with RunningGraph(tmp_path) as running:
        yield running


def test_foreign_ros_inputs_move_nothing_and_reset_nothing(graph):
    robot = graph
    view = started(robot)
    held = np.array(view.snapshot().targets_rad)
    status_before = robot.status()
    with ros_test_context(int(robot.env['ROS_DOMAIN_ID'])) as context:
        intruder = Intruder(context)
        try:
            head = JointTrajectory(joint_names=['head_yaw'])
            head.points = [JointTrajectoryPoint(positions=[math.radians(15.0)])]
            head.points[0].time_from_start.sec = 1
            intruder.publish('joint_trajectory', head)
            elbow = chunk_moving(ELBOW, held[ELBOW], held[ELBOW] - math.radians(20.0))
            intruder.publish('hardware_chunks', elbow)
            intruder.publish('score_chunks', elbow)
            move = intruder.goal_result(
                intruder.move,
                Move.Goal(
                    joint_names=['right_elbow'], positions_rad=[held[ELBOW] - 0.3], duration_s=1.0
                ),
            )
            assert not move.success and 'only from the behavior planner' in move.reason, move
            hit = intruder.goal_result(intruder.hit, Hit.Goal(instrument='snare'))
            assert not hit.success and 'only from the behavior planner' in hit.reason, hit
            intruder.publish('shutdown', GraphShutdown(reason='foreign', nonce='x'))
            time.sleep(2.0)
            assert moved_deg(view, held) < 0.01
            assert robot.process.poll() is None  # the graph runs on
            assert robot.status() == status_before  # IDLE, same commanded angles
            # A latch only the state machine's RESET clears.
            assert robot.line('ESTOP') == 'OK|ESTOP'
            assert view.wait(lambda s: s.estop, 10.0) is not None
            refused = intruder.reset()
            assert not refused.accepted and 'graph key' in refused.reason, refused
            time.sleep(0.5)
            assert view.snapshot().estop and robot.status()[1] == 'ESTOP'
        finally:
            intruder.close()
    assert robot.line('RESET').startswith('OK|RESET')
    assert robot.brain.wait_state({'IDLE'}, 10.0) == 'IDLE'
    assert not view.snapshot().estop


def test_reset_holds_where_the_joints_are_and_the_next_motion_starts_there(graph):
    robot = graph
    view = started(robot)
    start_deg = math.degrees(view.snapshot().targets_rad[ELBOW])
    target_deg = start_deg - 60.0
    assert robot.line(f'MOVE|right_elbow|{target_deg:.2f}|4') == 'OK|MOVE'
    assert view.wait(lambda s: abs(math.degrees(s.targets_rad[ELBOW]) - start_deg) > 15.0, 10.0)
    assert robot.line('ESTOP') == 'OK|ESTOP'
    held = view.wait(lambda s: s.estop, 10.0)
    time.sleep(0.5)  # the arm settles where the latch held it
    assert robot.line('RESET').startswith('OK|RESET')
    assert robot.brain.wait_state({'IDLE'}, 10.0) == 'IDLE'
    snapshot = view.snapshot()
    measured_deg = math.degrees(snapshot.positions_rad[ELBOW])
    # The hardware holds the measured pose, and the commanded state GET_STATUS reports
    # follows it: not the latched target, not the MOVE's end.
    assert math.degrees(snapshot.targets_rad[ELBOW]) == pytest.approx(measured_deg, abs=0.5)
    assert wait_until(lambda: abs(float(robot.status()[2 + ELBOW]) - measured_deg) < 1.0, 5.0), (
        robot.status(),
        measured_deg,
    )
    assert abs(measured_deg - target_deg) > 10.0 and held is not None
    assert robot.line(f'MOVE|right_elbow|{start_deg:.2f}|2') == 'OK|MOVE'
    assert (
        view.wait(lambda s: abs(math.degrees(s.positions_rad[ELBOW]) - start_deg) < 1.0, 15.0)
        is not None
    )
    assert not view.snapshot().faults  # no jump: it started where it was
    assert robot.line('QUIT') == 'OK|QUIT'
    assert robot.wait_exit(90.0) == 0, robot.story()


def bad_scores(folder: Path, marker: str) -> Path:
    shutil.copy(ROOT / 'scores' / 'rock' / 'rock_beat.txt', folder / 'groove.txt')
    row = '1\t{beat}\t5\t0\t5\t0\t1\t1\n'
    (folder / 'huge_beat.txt').write_text(
        'bpm\t100\n' + row.format(beat='0.6') + row.format(beat='1e308') + 'end\n'
    )
    (folder / 'crawl.txt').write_text('bpm\t0.001\n' + row.format(beat='0.6') * 3 + 'end\n')
    outside = folder.parent / 'outside.txt'  # a playable score outside the scores folder
    outside.write_text(f'# {marker}\nbpm\t100\n' + row.format(beat='0.6') * 3 + 'end\n')
    return write_play_list(
        folder, {'groove': 'groove.txt', 'huge_beat': 'huge_beat.txt', 'crawl': 'crawl.txt'}
    )


def test_play_takes_play_list_ids_only_and_scores_beyond_the_limits_move_nothing(tmp_path):
    marker = f'marker-{secrets.token_hex(8)}'
    folder = tmp_path / 'scores'
    folder.mkdir()
    play_list = bad_scores(folder, marker)
    robot = RunningGraph(tmp_path / 'run', ('--play-list', str(play_list)))
    robot.env['PHIL_TEST_SECRET'] = marker  # what /proc/self/environ would show
    try:
        robot.start()
        view = started(robot)
        held = np.array(view.snapshot().targets_rad)
        for path in (
            '/etc/passwd',
            '../../../../etc/hostname',
            '/proc/self/environ',
            str(tmp_path / 'outside.txt'),
        ):
            reply = robot.line(f'PLAY|{path}')
            assert reply.startswith('ERR|PLAY|') and 'PLAY takes a play-list id' in reply, reply
        for play_id in ('huge_beat', 'crawl', 'nosuch'):
            # The state machine takes the id; the score player refuses it with the reason.
            assert robot.line(f'PLAY|{play_id}') == 'OK|PLAY'
            assert robot.brain.wait_state({'IDLE'}, 20.0) == 'IDLE', robot.text()
        time.sleep(1.0)
        assert moved_deg(view, held) < 0.01
        log = (robot.log_dir / 'score_player.log').read_text()
        assert 'known ids' in log and 'huge_beat' in log and 'crawl' in log, log[-3000:]
        # The score player serves on.
        robot.plays_then_quits('groove', lambda: moved_deg(view, held) > 1.0)
    finally:
        robot.stop()
    for path in robot.log_dir.rglob('*'):
        if path.is_file():
            assert marker not in path.read_text(errors='replace'), path


def ack_client(port: int) -> socket.socket:
    client = socket.create_connection(('127.0.0.1', port), timeout=30.0)
    client.sendall(b'PROTOCOL|2\n')
    assert read_lines(client, 1) == ['OK|PROTOCOL']
    return client


def read_lines(client: socket.socket, count: int, buffer: list[bytes] | None = None) -> list[str]:
    data = b''.join(buffer or [])
    while data.count(b'\n') < count:
        chunk = client.recv(65536)
        assert chunk, 'connection closed'
        data += chunk
    lines = data.split(b'\n')
    if buffer is not None:
        buffer[:] = [b'\n'.join(lines[count:])]
    return [line.decode() for line in lines[:count]]


def test_no_client_locks_out_or_starves_another_and_a_burst_starves_no_drive(graph):
    robot = graph
    view = started(robot)
    # Every slot taken (the test's own client and 15 that connect and say nothing): a
    # newcomer's ESTOP still lands; the client idle longest (the test's) is told and closed.
    idle = [socket.create_connection(('127.0.0.1', robot.tcp_port)) for _ in range(15)]
    try:
        newcomer = ack_client(robot.tcp_port)
        newcomer.sendall(b'ESTOP\n')
        assert read_lines(newcomer, 1)[0].startswith('OK|ESTOP')
        assert view.wait(lambda s: s.estop, 10.0) is not None
        assert robot.brain.read_line().startswith('ERR|-|evicted: 16 clients connected')
        newcomer.sendall(b'RESET\n')
        assert read_lines(newcomer, 1)[0].startswith('OK|RESET')
        newcomer.close()
    finally:
        for client in idle:
            client.close()
    robot.reconnect()
    assert robot.brain.wait_state({'IDLE'}, 10.0) == 'IDLE', robot.story()
    # ESTOP and at once RESET, as a client does on its own: the hardware may latch and clear
    # between two of its statuses; every RESET still brings the robot back.
    for _ in range(5):
        assert robot.line('ESTOP').startswith('OK|ESTOP')
        assert robot.line('RESET').startswith('OK|RESET')
        assert robot.brain.wait_state({'IDLE'}, 10.0) == 'IDLE', robot.story()
    # 50 LOOKs in one write: one reply each, in order; those beyond the motion queue refused
    # with the reason; the simulated drives keep answering (no FEEDBACK_TIMEOUT).
    burst = ack_client(robot.tcp_port)
    burst.sendall(b''.join(f'LOOK|{(i % 5) * 5}|5\n'.encode() for i in range(50)))
    replies = read_lines(burst, 50)
    assert all(r == 'OK|LOOK' or r.startswith('ERR|LOOK|') for r in replies), replies
    assert replies[0] == 'OK|LOOK' and any('motion queue full' in r for r in replies), replies
    # A flood of 1000 lines from that client: another client's GET_STATUS is answered while
    # the flood's replies are still coming.
    flood_replies: list[str] = []

    def read_flood() -> None:
        buffer: list[bytes] = []
        for _ in range(20):
            flood_replies.extend(read_lines(burst, 50, buffer))

    reader = threading.Thread(target=read_flood, daemon=True)
    reader.start()
    burst.sendall(b'GET_STATUS\nMOVE|waist|3\n' * 500)
    other = ack_client(robot.tcp_port)
    assert wait_until(lambda: len(flood_replies) >= 50, 60.0)
    other.sendall(b'GET_STATUS\n')
    assert read_lines(other, 1)[0].startswith('STATUS|')
    assert len(flood_replies) < 1000, 'the GET_STATUS waited for the whole flood'
    reader.join(120.0)
    assert len(flood_replies) == 1000
    other.close()
    # Junk costs commands.csv a few hundred bytes a line, not the line (4 KB lines of 2000
    # bad lines made it grow 8.5 MB); every junk line is still answered and logged.
    log = robot.log_dir / 'commands.csv'
    before_bytes = log.stat().st_size
    junk = 'X' * (JUNK_LINE_BYTES - 1)
    burst.sendall(f'{junk}\n'.encode() * JUNK_LINES)
    junk_replies = read_lines(burst, JUNK_LINES)
    assert all(r.startswith('ERR|') for r in junk_replies), junk_replies[:3]
    assert wait_until(lambda: log.read_text().count('more characters') >= JUNK_LINES, 10.0)
    assert log.stat().st_size - before_bytes < JUNK_LINES * 600
    burst.close()
    assert robot.brain.wait_state({'IDLE'}, 60.0) == 'IDLE'
    assert not view.snapshot().faults, view.snapshot().faults
    assert robot.line('QUIT') == 'OK|QUIT'
    assert robot.wait_exit(90.0) == 0, robot.story()
