"""tcp_bridge: the brain's TCP protocol (port 1951) in front of the behavior planner.

The bridge is where the text protocol is parsed: each valid line goes, typed, to
/behavior_planner/decide (phil_msgs/Decide), where the planner decides it exactly as for any
route; the reply (accepted, reason) is what acknowledged mode reports. GET_STATUS is answered
at once from the latest /phil/status.
Parameters: ``config.PARAMETERS``.

The TCP server runs on its own thread (asyncio) and calls the handler (``planner_handler``) in
a worker thread, which waits for the planner's answer while the other clients are served; ROS
callbacks never wait.

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
import time

from rclpy.node import Node

from phil_control.core.protocol import LOOK_JOINTS, ProtocolVocabulary
from phil_control.tcp.command_log import CommandCsvLog
from phil_control.tcp.server import TcpServer
from phil_control.tcp_bridge.config import Config
from phil_control.tcp_bridge.planner_handler import PlannerHandler, PlannerProbe
from phil_description.core import default_robot_model
from phil_description.core.exit_status import CONFIG_ERROR_EXIT
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import HardwareStatus, RobotStatus
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED


class TcpBridge(Node):
    """Owns the TCP server; subscribes /phil/status for GET_STATUS."""

    def __init__(self, **node_options) -> None:
        super().__init__('tcp_bridge', **node_options)
        # What destroy_node closes, before anything can fail (rclpy's shutdown also destroys a
        # node that Ctrl-C interrupted here).
        self._server: TcpServer | None = None
        self._log: CommandCsvLog | None = None
        self._handler: PlannerHandler | None = None
        config = Config.from_parameters(self)
        # The port also opens when the planner goes down before it did: ESTOP and QUIT (which
        # then ends the graph at once) must reach the robot whatever else is wrong.
        self._handler = PlannerHandler(
            self,
            config.reply_timeout_s,
            config.liveness_timeout_s,
            GraphKey.from_environment(),
            on_planner_down=lambda: self._listen(),
        )
        self._listening = False
        self._closing = False
        self.create_subscription(RobotStatus, '/phil/status', self._on_status, LATCHED)
        self.create_subscription(
            HardwareStatus, '/hardware/status', self._handler.set_hardware, LATCHED
        )
        if config.log_dir is not None:
            self._log = CommandCsvLog(config.log_dir / 'commands.csv')
        vocabulary = ProtocolVocabulary.from_robot_model(
            default_robot_model(), look_joints=LOOK_JOINTS
        )
        self._server = TcpServer(
            self._handler,
            vocabulary,
            config.server,
            command_log=self._log,
            clock=time.monotonic,
        )
        host, bound_port = self._server.bind()
        self._probe = PlannerProbe(self, self._handler, self._listen)
        self.get_logger().info(
            f'{host}:{bound_port} taken; listening once the robot is in STANDBY'
        )

    def _on_status(self, status: RobotStatus) -> None:
        first = not self._handler.has_status
        self._handler.set_status(status)
        if first:
            self._probe.poke()

    def _listen(self) -> None:
        """Listen (once): the planner answered (`PlannerProbe`), or went down first."""
        if self._listening or self._closing:
            return
        self._listening = True
        self._probe.stop()
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

    def release(self) -> None:
        """The node's own teardown: the server stops, the command log closes, and a graph
        shutdown this node sent reaches every node first."""
        if self._server is not None:
            self._server.stop()
        if self._log is not None:
            self._log.close()
        handler = self._handler
        if handler is not None:
            handler.shutdown.wait_delivered()  # every node must hold it before we leave

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    # No callback here blocks (the TCP server has its own threads): a single-threaded executor
    # delivers the planner's answers with the least delay.
    run_node(TcpBridge, args)


if __name__ == '__main__':
    main()
