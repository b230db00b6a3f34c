"""control_tower: the page of the running robot (``server``), fed from the graph's topics and
sending the page's commands to the behavior planner exactly as the TCP bridge does.

Off the command path: its own process at normal priority, a client of the planner
(/behavior_planner/decide) like the TCP bridge, and for ESTOP the same fast path (the
hardware's ESTOP word, then the planner). Every command from the page is parsed by the TCP
protocol's parser and decided by the planner's state machine: the page can do nothing the TCP
port could not. A port it cannot take is logged and the robot runs on without the page.
Parameters: ``config.PARAMETERS``.
"""

from __future__ import annotations

import time

from rclpy.node import Node
from sensor_msgs.msg import JointState

from phil_bringup.control_tower.config import Config, page_directory
from phil_bringup.control_tower.server import TowerServer
from phil_bringup.control_tower.tower_state import TowerState
from phil_control.core.protocol import LOOK_JOINTS, ProtocolVocabulary, parse_line
from phil_control.core.protocol import commands as cmd
from phil_control.core.protocol.parser import ParseError
from phil_control.core.score import PlayListError, load_play_list
from phil_control.tcp.handler import HandlerReply, reply_line
from phil_control.tcp_bridge.planner_handler import PlannerHandler
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import HardwareStatus, HitEvent, MotorStates, RobotStatus
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED, RELIABLE_QUEUE

IMPACTS_TOPIC = '/phil/sim/impacts'


class ControlTower(Node):
    """Owns the web server; subscribes what the page shows."""

    def __init__(self, **node_options) -> None:
        super().__init__('control_tower', **node_options)
        self._server: TowerServer | None = None
        config = Config.from_parameters(self)
        model = default_robot_model()
        self._handler = PlannerHandler(
            self, config.reply_timeout_s, config.liveness_timeout_s, GraphKey.from_environment()
        )
        self._vocabulary = ProtocolVocabulary.from_robot_model(model, look_joints=LOOK_JOINTS)
        self.state = TowerState(model.joint_names)
        self._subscribe()
        try:
            ids = list(load_play_list(config.play_list)) if config.play_list else []
        except (PlayListError, OSError) as error:
            self.get_logger().error(f'no play list on the page: {error}')
            ids = []
        hello = {
            'type': 'hello',
            'urdf': model.urdf_xml,
            'joints': [
                {'name': j.name, 'lower_rad': j.lower_rad, 'upper_rad': j.upper_rad}
                for j in model.joints
            ],
            'play_ids': ids,
            'instruments': list(self._vocabulary.instrument_names),
            'plots_url': 'plots/',
        }
        page = page_directory()
        self._server = TowerServer(
            self.state,
            hello,
            self.handle_line,
            page,
            config.plots_dir,
            config.address,
            config.port,
            config.rate_hz,
            self._estop_now,
        )
        try:
            host, port = self._server.start()
        except OSError as error:
            self.get_logger().error(
                f'the page cannot be served on {config.address}:{config.port} ({error}); the '
                'robot runs on without it (set the control_tower port parameter)'
            )
            return
        if not (page / 'index.html').is_file():
            self.get_logger().error(f'the page is not built ({page}): run make setup')
        self.get_logger().info(f'control tower on http://{host}:{port}/')

    def _subscribe(self) -> None:
        state = self.state
        self.create_subscription(
            JointState, '/joint_states', lambda m: state.set_measured(m.name, m.position), 10
        )
        self.create_subscription(
            JointState,
            '/trajectory_generator/commanded_state',
            lambda m: state.set_commanded(m.name, m.position),
            LATCHED,
        )
        self.create_subscription(RobotStatus, '/phil/status', self._on_status, LATCHED)
        self.create_subscription(
            HardwareStatus, '/hardware/status', self._handler.set_hardware, LATCHED
        )
        self.create_subscription(MotorStates, '/hardware/motor_states', self._on_motors, 10)
        self.create_subscription(
            HitEvent, '/phil/hits', lambda m: self._on_hit('commanded', m), RELIABLE_QUEUE
        )
        self.create_subscription(
            HitEvent, IMPACTS_TOPIC, lambda m: self._on_hit('detected', m), RELIABLE_QUEUE
        )

    def _on_status(self, status: RobotStatus) -> None:
        self._handler.set_status(status)
        self.state.set_status(
            {
                'state': status.state,
                'speed': status.speed,
                'realtime': status.realtime,
                'play_id': status.play_id,
                'bar': status.bar,
                'total_bars': status.total_bars,
                'resume_valid': status.resume_valid,
                'resume_play_id': status.resume_play_id,
                'resume_bar': status.resume_bar,
                'faults': [{'joint': f.joint, 'reason': f.reason} for f in status.faults],
                'last_rejection': status.last_rejection,
                'unresponsive': list(status.unresponsive_nodes),
            }
        )

    def _on_motors(self, message: MotorStates) -> None:
        now = time.monotonic()
        self.state.set_motors(
            [
                {
                    'joint': m.joint,
                    'family': m.family,
                    'model': m.model,
                    'bus': m.bus,
                    'device_id': m.device_id,
                    'connected': m.connected,
                    'position_rad': m.position_rad,
                    'velocity_rad_s': m.velocity_rad_s,
                    'current_a': m.current_a,
                    'torque_nm': m.torque_nm,
                    'temperature_c': m.temperature_c,
                    'error_code': m.error_code,
                    'status': m.status,
                    'age_ms': (now - _seconds(m.last_feedback)) * 1e3,
                }
                for m in message.motors
            ]
        )

    def _on_hit(self, source: str, message: HitEvent) -> None:
        self.state.hit(source, message.instrument, _seconds(message.command_time))

    def handle_line(self, line: str) -> str:
        """One protocol line from the page, as the TCP port takes it (a worker thread of the
        server: it may wait for the planner); the acknowledged-mode reply."""
        command = parse_line(line, self._vocabulary)
        if isinstance(command, ParseError):
            return reply_line(command.opcode, HandlerReply(False, command.reason))
        if isinstance(command, cmd.GetStatus):
            return self._handler.status_line()
        if isinstance(command, cmd.Protocol):
            reply = HandlerReply(False, 'the page always has replies')
        else:
            reply = self._handler.handle(command, 0)
        return reply_line(command.opcode.value, reply)

    def _estop_now(self) -> None:
        """The page's ESTOP: the bus loop latches from the ESTOP word before anything else."""
        problem = self._handler.estop_now()
        if problem:
            self.get_logger().error(f'ESTOP from the page: {problem}')

    def release(self) -> None:
        """The node's own teardown: the page's server stops."""
        if self._server is not None:
            self._server.stop()

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def main(args: list[str] | None = None) -> None:
    run_node(ControlTower, args)


if __name__ == '__main__':
    main()
