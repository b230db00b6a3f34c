"""tcp_bridge: the brain's TCP protocol (port 1951) in front of the behavior planner.

The bridge is where the text protocol is parsed: each valid line goes, typed, to
/behavior_planner/decide (phil_msgs/Decide), where the planner decides it exactly as for any
route; the reply (accepted, reason) is what acknowledged mode reports. GET_STATUS is answered
at once from the latest /phil/status.
Parameters: ``address`` (127.0.0.1), ``port`` (1951), ``max_line_bytes`` (4096),
``max_clients`` (16), ``reply_timeout_s`` (2.0), ``idle_timeout_s`` (3600, 0 = never),
``max_lines_per_s`` (100 per client), ``max_commands_per_s`` (20, all clients; 0 = no limit),
``liveness_timeout_s``, ``log_dir`` ('' = no command log).

The TCP server runs on its own thread (asyncio); it calls the handler in a worker thread,
which waits for the planner's answer while the other clients are served; ROS callbacks never
wait. The wait is ``reply_timeout_s`` plus the time the planner may hold a command that came
during a transition (``COMMAND_WAIT_S``: READY right after START waits for START's first
trajectory): given up sooner, an answer that came later would say the opposite of what the
robot did.

ESTOP does not depend on the planner: the moment an ESTOP line arrives the bridge adds to the
hardware's ESTOP word (``phil_description.core.estop_word``; the bus loop latches from it within
a tick) and answers ``OK|ESTOP`` for it; the planner is told too, without waiting for its
answer, and its state follows the hardware's latch. The bridge watches the planner's heartbeat:
while it is down (dead, stopped, hung) GET_STATUS says ESTOP or FAULT, as the hardware reports
(``/hardware/status``), instead of the planner's last word, and QUIT ends the graph at once
(a signed graph shutdown; no shutdown pose, nobody is left to move to it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rclpy.node import Node

from phil_control.command_conversions import command_to_msg
from phil_control.core.behavior.turns import COMMAND_WAIT_S
from phil_control.core.protocol import ProtocolVocabulary, format_status
from phil_control.core.protocol import commands as cmd
from phil_control.node_names import HARDWARE_NODE, PLANNER_NODE
from phil_control.tcp.command_log import CommandCsvLog
from phil_control.tcp.handler import HandlerReply
from phil_control.tcp.server import TcpServer, TcpServerConfig
from phil_description.core import default_robot_model
from phil_description.core.estop_word import estop_word_name, trigger_estop
from phil_description.core.exit_status import CONFIG_ERROR_EXIT
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import HardwareStatus, RobotStatus
from phil_msgs.srv import Decide
from phil_ros.graph_shutdown import GraphShutdownSender
from phil_ros.heartbeats import DEFAULT_LIVENESS_TIMEOUT_S, Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED

# The GET_STATUS that must be answered before the port opens is asked again after this.
PROBE_ATTEMPT_S = 1.0


class PlannerHandler:
    """The TCP server's CommandHandler: forwards commands to the behavior planner; ESTOP goes
    to the hardware's ESTOP word first."""

    def __init__(
        self,
        node: Node,
        timeout_s: float,
        liveness_timeout_s: float,
        key: GraphKey,
        on_planner_down: Callable[[], None] = lambda: None,
    ) -> None:
        self._client = node.create_client(Decide, f'{PLANNER_NODE}/decide')
        self._timeout_s = timeout_s
        self._status: RobotStatus | None = None
        self._hardware: HardwareStatus | None = None
        self._estop_word = estop_word_name(node.context.get_domain_id(), HARDWARE_NODE)
        self._estop_problem = ''

        def planner_down(_down) -> None:
            self._wake_waiting()
            on_planner_down()

        self.liveness = Liveness(node, [PLANNER_NODE], liveness_timeout_s, on_down=planner_down)
        self.shutdown = GraphShutdownSender(node, key)
        self.shutdown_sent = False
        # Calls waiting for the planner; the graph shutdown wakes them (no answer will come).
        self._waiting: set[threading.Event] = set()
        self._waiting_lock = threading.Lock()
        self._graph_ending = False

    def set_status(self, status: RobotStatus) -> None:
        self._status = status

    @property
    def has_status(self) -> bool:
        return self._status is not None

    def set_hardware(self, status: HardwareStatus) -> None:
        self._hardware = status

    def estop_now(self) -> str:
        """The server's ESTOP fast path: latch the bus loop through the ESTOP word."""
        self._estop_problem = trigger_estop(self._estop_word)
        return self._estop_problem

    def handle(self, command, client_id: int) -> HandlerReply:
        planner_down = not self.liveness.alive(PLANNER_NODE)
        if isinstance(command, cmd.Estop) and not self._estop_problem:
            # Latched already (estop_now); the planner follows the hardware's status.
            if self._client.service_is_ready():
                self._client.call_async(Decide.Request(command=command_to_msg(command)))
            return HandlerReply(
                True,
                'the hardware latched; behavior_planner is not answering' if planner_down else '',
            )
        if isinstance(command, cmd.Quit) and planner_down:
            self.shutdown.send('QUIT while behavior_planner is down')
            self.shutdown_sent = True
            return HandlerReply(
                True,
                'behavior_planner is not answering: the graph shuts down '
                'without the shutdown pose',
            )
        if planner_down:  # its calls would wait in vain
            return HandlerReply(
                False,
                'behavior_planner is not answering; only ESTOP, QUIT '
                'and GET_STATUS are served now',
            )
        if not self._client.wait_for_service(timeout_sec=self._timeout_s):
            return HandlerReply(False, 'behavior_planner is not running')
        done = threading.Event()
        with self._waiting_lock:
            if self._graph_ending:
                done.set()
            self._waiting.add(done)
        try:
            future = self._client.call_async(Decide.Request(command=command_to_msg(command)))
            future.add_done_callback(lambda _: done.set())
            answered = done.wait(self._timeout_s + COMMAND_WAIT_S) and future.done()
        finally:
            with self._waiting_lock:
                self._waiting.discard(done)
        if answered:
            response = future.result()
            return HandlerReply(response.accepted, response.reason)
        if self._graph_ending:
            # The planner ended the graph (QUIT) before its answer got here.
            return HandlerReply(isinstance(command, cmd.Quit), 'the graph is shutting down')
        if not self.liveness.alive(PLANNER_NODE):
            return HandlerReply(False, 'behavior_planner went down before it answered')
        return HandlerReply(
            False,
            f'behavior_planner did not answer within {self._timeout_s + COMMAND_WAIT_S:.1f} s',
        )

    def ask_planner(self):
        """One GET_STATUS to the planner (the future), to find out that its answers reach us."""
        return self._client.call_async(Decide.Request(command=command_to_msg(cmd.GetStatus())))

    def graph_ending(self) -> None:
        """The graph shuts down: answer the calls still waiting for the planner now."""
        with self._waiting_lock:
            self._graph_ending = True
        self._wake_waiting()

    def _wake_waiting(self) -> None:
        """Answer the calls waiting for the planner now (the graph ends, or the planner
        went down: no answer will come)."""
        with self._waiting_lock:
            for done in self._waiting:
                done.set()

    def status_line(self) -> str:
        # None only when the planner went down before its first word (the port opened for
        # ESTOP and QUIT): what the hardware says, no angles.
        status = self._status or RobotStatus(state=RobotStatus.STATE_STANDBY, speed=1.0)
        listed = status.state != RobotStatus.STATE_STANDBY
        state = status.state
        if not self.liveness.alive(PLANNER_NODE):  # its last word is stale: the hardware's
            hardware = self._hardware
            state = (
                RobotStatus.STATE_ESTOP
                if hardware is not None and hardware.estop
                else RobotStatus.STATE_FAULT
            )
        return format_status(
            state,
            list(status.commanded_positions_rad) if listed else None,
            status.speed,
            status.resume_play_id if status.resume_valid else None,
            status.resume_bar,
        )


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
        idle_timeout_s = float(self.declare_parameter('idle_timeout_s', 3600.0).value)
        max_lines_per_s = float(self.declare_parameter('max_lines_per_s', 100.0).value)
        max_commands_per_s = float(self.declare_parameter('max_commands_per_s', 20.0).value)
        log_dir = str(self.declare_parameter('log_dir', '').value)
        if not timeout_s > 0:  # the server's config checks the others
            raise ValueError(f'parameter reply_timeout_s = {timeout_s} must be > 0 s')
        liveness_timeout_s = float(
            self.declare_parameter('liveness_timeout_s', DEFAULT_LIVENESS_TIMEOUT_S).value
        )
        # The port also opens when the planner goes down before it did: ESTOP and QUIT (which
        # then ends the graph at once) must reach the robot whatever else is wrong.
        self._handler = PlannerHandler(
            self,
            timeout_s,
            liveness_timeout_s,
            GraphKey.from_environment(),
            on_planner_down=lambda: self._listen(),
        )
        self._probe = None
        self._listening = False
        self._closing = False
        self.create_subscription(RobotStatus, '/phil/status', self._on_status, LATCHED)
        self.create_subscription(
            HardwareStatus, '/hardware/status', self._handler.set_hardware, LATCHED
        )
        self._log = CommandCsvLog(Path(log_dir) / 'commands.csv') if log_dir else None
        vocabulary = ProtocolVocabulary.from_robot_model(
            default_robot_model(), look_joints=('head_yaw', 'head_pitch')
        )
        self._server = TcpServer(
            self._handler,
            vocabulary,
            TcpServerConfig(
                host=address,
                port=port,
                max_line_bytes=max_line,
                max_clients=max_clients,
                idle_timeout_s=idle_timeout_s,
                max_lines_per_s=max_lines_per_s,
                max_commands_per_s=max_commands_per_s,
            ),
            command_log=self._log,
            clock=time.monotonic,
        )
        host, bound_port = self._server.bind()
        self._probe_timer = self.create_timer(PROBE_ATTEMPT_S, self._ask_planner)
        self.get_logger().info(
            f'{host}:{bound_port} taken; listening once the robot is in STANDBY'
        )

    def _on_status(self, status: RobotStatus) -> None:
        self._handler.set_status(status)
        if self._probe is None:
            self._ask_planner()

    def _ask_planner(self) -> None:
        """Open the port once the planner is in STANDBY (its first /phil/status) and has
        answered one GET_STATUS, as upstream's controller opened it after its start-up: the
        first command a client sends is then carried out at once. Asked again each
        PROBE_ATTEMPT_S: rmw_fastrtps drops the answer to a request that reaches a server
        before it has matched the client's reader ("client will not receive response")."""
        if self._listening or not self._handler.has_status:
            return
        self._probe = self._handler.ask_planner()
        self._probe.add_done_callback(self._listen)

    def _listen(self, answer=None) -> None:
        """Listen (once; an unanswered probe is asked again by the timer)."""
        if (
            self._listening
            or self._closing
            or (answer is not None and (answer.cancelled() or answer.exception() is not None))
        ):
            return
        self._listening = True
        self._probe_timer.cancel()
        try:
            host, bound_port = self._server.start()
        except (OSError, RuntimeError) as error:
            # Another server took the port between our bind and listen (two graphs started
            # on one port). Like a refused parameter: one line, status 78, and the launcher
            # stops the graph; exiting from here is the one way out of a done callback.
            self.get_logger().fatal(
                f'configuration refused: cannot listen on the TCP port: {error}'
            )
            os._exit(CONFIG_ERROR_EXIT)
        self.get_logger().info(
            f'listening on {host}:{bound_port} (brain protocol; send '
            f'PROTOCOL|2 for acknowledged mode)'
        )

    def on_graph_shutdown(self) -> None:
        self._closing = True
        self._handler.graph_ending()
        self._server.stop()  # after the replies of the commands being handled

    def destroy_node(self) -> None:
        # Also runs on a node Ctrl-C interrupted in __init__ (rclpy's shutdown destroys it).
        if hasattr(self, '_server'):
            self._server.stop()
        if getattr(self, '_log', None) is not None:
            self._log.close()
        handler = getattr(self, '_handler', None)
        if handler is not None and handler.shutdown_sent and self.context.ok():
            handler.shutdown.wait_delivered()  # every node must hold it before we leave
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    # No callback here blocks (the TCP server has its own threads): a single-threaded executor
    # delivers the planner's answers with the least delay.
    run_node(TcpBridge, args)


if __name__ == '__main__':
    main()
