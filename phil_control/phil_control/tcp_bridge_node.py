"""tcp_bridge: the brain's TCP protocol (port 1951) in front of the behavior planner.

Each valid line goes to /phil/command (phil_msgs/Command), where the behavior planner decides it
exactly as the state machine would for any route; the reply (accepted, reason) is what
acknowledged mode reports. GET_STATUS is answered at once from the latest /phil/status.
Parameters: ``address`` (127.0.0.1), ``port`` (1951), ``max_line_bytes`` (4096),
``max_clients`` (16), ``reply_timeout_s`` (2.0), ``log_dir`` ('' = no command log).

The TCP server runs on its own thread (asyncio); it calls the handler in a worker thread,
which waits at most ``reply_timeout_s`` for the planner's answer while the other clients are
served; ROS callbacks never wait.
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from phil_control.core.protocol import ProtocolVocabulary, format_command, format_status
from phil_control.tcp.handler import CommandLogEntry, HandlerReply
from phil_control.tcp.server import TcpServer, TcpServerConfig
from phil_description.core import default_robot_model
from phil_description.node_runner import run_node
from phil_msgs.msg import RobotStatus
from phil_msgs.srv import Command

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)


class PlannerHandler:
    """The TCP server's CommandHandler: forwards commands to the behavior planner."""

    def __init__(self, node: Node, timeout_s: float) -> None:
        self._client = node.create_client(Command, '/phil/command')
        self._timeout_s = timeout_s
        self._status: RobotStatus | None = None

    def set_status(self, status: RobotStatus) -> None:
        self._status = status

    def handle(self, command, client_id: int) -> HandlerReply:
        # Right after start-up the planner may not be discovered yet: give it a moment.
        if not self._client.wait_for_service(timeout_sec=self._timeout_s):
            return HandlerReply(False, 'behavior_planner is not running')
        done = threading.Event()
        future = self._client.call_async(Command.Request(line=format_command(command)))
        future.add_done_callback(lambda _: done.set())
        if not done.wait(self._timeout_s):
            return HandlerReply(False, f'behavior_planner did not answer within '
                                       f'{self._timeout_s:.1f} s')
        response = future.result()
        return HandlerReply(response.accepted, response.reason)

    def status_line(self) -> str:
        status = self._status
        if status is None:
            return format_status('STANDBY')
        listed = status.state != RobotStatus.STATE_STANDBY
        return format_status(status.state,
                             list(status.commanded_positions_rad) if listed else None,
                             status.speed, status.resume_play_id if status.resume_valid else None,
                             status.resume_bar)


class CommandCsvLog:
    """`commands.csv`: t, client, opcode, valid|invalid, line, reason (upstream's CMD rows)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open('w', newline='')
        self._writer = csv.writer(self._file)
        self._writer.writerow(['t', 'client', 'opcode', 'result', 'line', 'reason'])
        self._lock = threading.Lock()

    def __call__(self, entry: CommandLogEntry) -> None:
        with self._lock:
            self._writer.writerow([f'{entry.time_s:.4f}', entry.client_id, entry.opcode,
                                   'valid' if entry.accepted else 'invalid', entry.line,
                                   entry.reason])
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


class TcpBridge(Node):
    """Owns the TCP server; subscribes /phil/status for GET_STATUS."""

    def __init__(self, **node_options) -> None:
        super().__init__('tcp_bridge', **node_options)
        self.declare_parameter('sim', False)
        address = str(self.declare_parameter('address', '127.0.0.1').value)
        port = int(self.declare_parameter('port', 1951).value)
        max_line = int(self.declare_parameter('max_line_bytes', 4096).value)
        max_clients = int(self.declare_parameter('max_clients', 16).value)
        timeout_s = float(self.declare_parameter('reply_timeout_s', 2.0).value)
        log_dir = str(self.declare_parameter('log_dir', '').value)
        if not 0 <= port <= 65535 or timeout_s <= 0:
            raise ValueError(f'tcp_bridge: port {port} must be 0..65535 and reply_timeout_s '
                             f'{timeout_s} positive')
        self._handler = PlannerHandler(self, timeout_s)
        self.create_subscription(RobotStatus, '/phil/status', self._handler.set_status, LATCHED)
        self._log = CommandCsvLog(Path(log_dir) / 'commands.csv') if log_dir else None
        vocabulary = ProtocolVocabulary.from_robot_model(
            default_robot_model(), look_joints=('head_yaw', 'head_pitch'))
        self._server = TcpServer(self._handler, vocabulary,
                                 TcpServerConfig(host=address, port=port,
                                                 max_line_bytes=max_line,
                                                 max_clients=max_clients),
                                 command_log=self._log, clock=time.monotonic)
        host, bound_port = self._server.start()
        self.get_logger().info(f'listening on {host}:{bound_port} (brain protocol; send '
                               f'PROTOCOL|2 for acknowledged mode)')

    def on_graph_shutdown(self) -> None:
        self._server.stop()

    def destroy_node(self) -> None:
        # Also runs on a node Ctrl-C interrupted in __init__ (rclpy's shutdown destroys it).
        if hasattr(self, '_server'):
            self._server.stop()
        if getattr(self, '_log', None) is not None:
            self._log.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    # No callback here blocks (the TCP server has its own threads): a single-threaded executor
    # delivers the planner's answers with the least delay.
    run_node(TcpBridge, args)


if __name__ == '__main__':
    main()
