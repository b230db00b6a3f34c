"""hardware: the lifecycle node that owns the CAN and serial buses (through the bus loop).

Lifecycle (like a ros2_control hardware component):
    configure   start the real-time bus-loop process, open the buses, discover the motors,
                configure the drives; no torque. A missing motor fails the transition and is
                named in /hardware/status (unless listed in ``allow_missing``).
    activate    TMotor origins at the pinned pose, EPOS4 NMT start + enable, Dynamixel torque;
                cyclic sending holding the current pose.
    deactivate  stop motion, drives disabled (torque off); buses stay open.
    cleanup     stop the bus-loop process, close the buses.
The node configures itself at start-up (``configure_on_start``) so /hardware/status shows the
discovered motors before START.

Topics: /joint_states (measured, ``joint_state_rate_hz``), ~/motor_states (MotorStates),
~/status (HardwareStatus, transient local, on change and at ``status_rate_hz``); subscribes
~/trajectory_chunks (phil_msgs/TrajectoryChunk) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory, joint_trajectory_controller style: stamp 0 = now, an empty
message holds). Services ~/estop and ~/reset (phil_msgs/Trigger).

Nothing here waits on the loop except the lifecycle transitions, which run on their own
callback group of a MultiThreadedExecutor while the publishers keep going.
"""

from __future__ import annotations

import csv
import math
import threading
from pathlib import Path

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from phil_description.core import default_robot_model
from phil_description.node_runner import run_node
from phil_hardware import hardware_conversions as convert
from phil_hardware.core.bus_controller import controller_config_from_model
from phil_hardware.core.realtime import RealtimeConfig
from phil_hardware.core.safety import SafetyConfig
from phil_hardware.rt import BusLoopClient, BusLoopConfig, BusLoopError
from phil_msgs.msg import Fault, HardwareStatus, MotorStates
from phil_msgs.msg import TrajectoryChunk as ChunkMsg
from phil_msgs.srv import Trigger

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
TRANSITION_TIMEOUT_S = 30.0
PARAMETERS = {
    'sim': False, 'sched_priority': 40, 'cpu_affinity': [-1], 'lock_memory': True,
    'allow_missing': [''], 'can_feedback_timeout_s': 0.05, 'serial_feedback_timeout_s': 0.1,
    'joint_state_rate_hz': 200.0, 'motor_state_rate_hz': 20.0, 'status_rate_hz': 5.0,
    'configure_on_start': True, 'log_dir': '',
}


class MotorCsvLog:
    """`motors.csv` like upstream's: one row per motor per state sample."""

    HEADER = ['t', 'id', 'mode', 'desired', 'actual', 'err', 'current_or_torque',
              'desired_velocity']

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open('w', newline='')
        self._writer = csv.writer(self._file)
        self._writer.writerow(self.HEADER)
        self._last_time = -math.inf

    def write(self, snapshot, start_s: float) -> None:
        if snapshot.time_s <= self._last_time:
            return
        self._last_time = snapshot.time_s
        t = f'{snapshot.time_s - start_s:.4f}'
        for index in range(len(snapshot.joint_names)):
            desired, actual = snapshot.targets_rad[index], snapshot.positions_rad[index]
            load = snapshot.torques_mnm[index]
            if not math.isfinite(load):
                load = snapshot.currents_a[index]
            self._writer.writerow([t, index, snapshot.modes[index], f'{desired:.4f}',
                                   f'{actual:.4f}', f'{desired - actual:.4f}', f'{load:.4f}',
                                   f'{snapshot.target_velocities_rad_s[index]:.4f}'])

    def close(self) -> None:
        self._file.close()


class HardwareNode(LifecycleNode):
    """Lifecycle front end of the bus-loop process."""

    def __init__(self, **node_options) -> None:
        super().__init__('hardware', **node_options)
        values = {name: self.declare_parameter(name, default).value
                  for name, default in PARAMETERS.items()}
        self._model = default_robot_model(sim=bool(values['sim']))
        affinity = tuple(int(c) for c in values['cpu_affinity'] if int(c) >= 0)
        missing = tuple(name for name in values['allow_missing'] if name)
        for name in missing:
            self._model.joint(name)  # KeyError names an unknown joint at start-up
        safety = SafetyConfig(can_feedback_timeout_s=float(values['can_feedback_timeout_s']),
                              serial_feedback_timeout_s=float(
                                  values['serial_feedback_timeout_s']))
        self._config = BusLoopConfig(
            controller=controller_config_from_model(self._model, safety=safety,
                                                    allow_missing=missing),
            realtime=RealtimeConfig(sched_priority=int(values['sched_priority']),
                                    cpu_affinity=affinity,
                                    lock_memory=bool(values['lock_memory'])))
        rates = {key: float(values[key]) for key in ('joint_state_rate_hz', 'motor_state_rate_hz',
                                                      'status_rate_hz')}
        if rates['joint_state_rate_hz'] < 100.0 or min(rates.values()) <= 0:
            raise ValueError(f'hardware: rates {rates} must be positive, joint states >= 100 Hz')
        self._log_dir = str(values['log_dir'])
        self._clock_bridge = convert.ClockBridge()
        self._client: BusLoopClient | None = None
        self._lifecycle = 'unconfigured'
        self._node_faults: list[Fault] = []
        self._last_status_key = None
        self._motor_log: MotorCsvLog | None = None
        self._lock = threading.Lock()
        io_group = MutuallyExclusiveCallbackGroup()
        command_group = ReentrantCallbackGroup()
        self._joint_pub = self.create_publisher(JointState, '/joint_states', 10)
        self._motor_pub = self.create_publisher(MotorStates, '~/motor_states', 10)
        self._status_pub = self.create_publisher(HardwareStatus, '~/status', LATCHED)
        self.create_subscription(ChunkMsg, '~/trajectory_chunks', self._on_chunk, 50,
                                 callback_group=command_group)
        self.create_subscription(JointTrajectory, '~/joint_trajectory', self._on_trajectory, 10,
                                 callback_group=command_group)
        self.create_service(Trigger, '~/estop', self._on_estop, callback_group=command_group)
        self.create_service(Trigger, '~/reset', self._on_reset, callback_group=command_group)
        self.create_timer(1.0 / rates['joint_state_rate_hz'], self._publish_joint_states,
                          callback_group=io_group)
        self.create_timer(1.0 / rates['motor_state_rate_hz'], self._publish_motor_states,
                          callback_group=io_group)
        self.create_timer(1.0 / rates['status_rate_hz'], lambda: self._publish_status(True),
                          callback_group=io_group)
        self._publish_status(True)
        if values['configure_on_start']:
            self._start_timer = self.create_timer(0.0, self._configure_once,
                                                  callback_group=command_group)

    # ------------------------------------------------------------------ lifecycle
    def _configure_once(self) -> None:
        self._start_timer.cancel()
        self.trigger_configure()

    def _run_transition(self, name: str, future_of, next_state: str) -> TransitionCallbackReturn:
        try:
            result = future_of().result(timeout=TRANSITION_TIMEOUT_S)
        except (BusLoopError, TimeoutError) as error:
            result = None
            reason = f'{name} failed: {error}'
        else:
            reason = f'{name} failed: {result.detail}'
        if result is None or not result.ok:
            self.get_logger().error(reason)
            self._node_faults = [Fault(code=Fault.CODE_BUS_ERROR, reason=reason)]
            self._publish_status(True)
            return TransitionCallbackReturn.FAILURE
        self._node_faults = []
        self._lifecycle = next_state
        self.get_logger().info(f'{name}: {result.detail}')
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            self._client = BusLoopClient(self._config).start()
        except BusLoopError as error:
            self._node_faults = [Fault(code=Fault.CODE_PROCESS_DIED,
                                       reason=f'bus loop did not start: {error}')]
            self.get_logger().error(str(error))
            self._publish_status(True)
            return TransitionCallbackReturn.FAILURE
        report = self._client.realtime_report or {}
        if not report.get('realtime', False):
            self.get_logger().warning(f'bus loop is NOT real-time: {report}')
        outcome = self._run_transition('configure', self._client.configure, 'inactive')
        if outcome is not TransitionCallbackReturn.SUCCESS:
            self._stop_client()
        elif self._log_dir:
            self._motor_log = MotorCsvLog(Path(self._log_dir) / 'motors.csv')
        return outcome

    def on_activate(self, state) -> TransitionCallbackReturn:
        outcome = self._run_transition('activate', self._client.activate, 'active')
        if outcome is TransitionCallbackReturn.SUCCESS:
            super().on_activate(state)
        return outcome

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        super().on_deactivate(state)
        return self._run_transition('deactivate', self._client.deactivate, 'inactive')

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._stop_client()
        self._lifecycle = 'unconfigured'
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._stop_client()
        self._lifecycle = 'finalized'
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state) -> TransitionCallbackReturn:
        self._stop_client()
        self._lifecycle = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def _stop_client(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            log, self._motor_log = self._motor_log, None
        if client is not None:
            client.stop()
        if log is not None:
            log.close()

    def on_graph_shutdown(self) -> None:
        self._stop_client()

    def destroy_node(self) -> None:
        self._stop_client()
        super().destroy_node()

    # ------------------------------------------------------------------ commands
    def _send(self, make_chunk, what: str) -> None:
        client = self._client
        if client is None or self._lifecycle != 'active':
            self.get_logger().warning(f'{what} ignored: hardware is {self._lifecycle}, not active',
                                      throttle_duration_sec=2.0)
            return
        try:
            chunk = make_chunk()
        except ValueError as error:
            self.get_logger().error(f'{what} rejected: {error}')
            return

        def report(future) -> None:
            result = future.result()
            if not result.ok:
                self.get_logger().error(f'{what} rejected by the bus loop: {result.detail}')

        client.send_chunk(chunk).add_done_callback(report)

    def _on_chunk(self, msg: ChunkMsg) -> None:
        self._send(lambda: convert.chunk_from_msg(msg, self._clock_bridge),
                   f'chunk {msg.sequence}')

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not msg.points:
            if self._client is not None and self._lifecycle == 'active':
                self._client.halt()
            return
        self._send(lambda: convert.chunk_from_trajectory(msg, self._clock_bridge),
                   'joint_trajectory')

    def _on_estop(self, request, response):
        client = self._client
        if client is None:
            response.accepted, response.reason = False, 'bus loop is not running'
        else:
            client.estop('emergency stop requested')
            response.accepted = True
        response.state = self._lifecycle
        return response

    def _on_reset(self, request, response):
        client = self._client
        if client is None:
            response.accepted, response.reason = False, 'bus loop is not running'
        else:
            result = client.reset().result(timeout=5.0)
            response.accepted, response.reason = result.ok, result.detail
        response.state = self._lifecycle
        self._publish_status(True)
        return response

    # ------------------------------------------------------------------ publishing
    def _snapshot(self):
        client = self._client
        return client.snapshot() if client is not None else None

    def _publish_joint_states(self) -> None:
        snapshot = self._snapshot()
        if snapshot is None:
            return
        self._joint_pub.publish(convert.joint_state_msg(snapshot, self._clock_bridge))
        log = self._motor_log
        if log is not None:
            log.write(snapshot, 0.0)
        self._publish_status(False, snapshot)

    def _publish_motor_states(self) -> None:
        snapshot = self._snapshot()
        if snapshot is not None:
            self._motor_pub.publish(convert.motor_states_msg(snapshot, self._clock_bridge,
                                                             self._model.hardware.motors))

    def _publish_status(self, always: bool, snapshot=None) -> None:
        snapshot = snapshot or self._snapshot()
        realtime = bool(snapshot.realtime) if snapshot is not None else False
        status = convert.hardware_status_msg(snapshot, self._lifecycle, realtime,
                                             self._clock_bridge, self._node_faults)
        key = (status.lifecycle_state, status.estop, tuple(f.reason for f in status.faults),
               tuple(status.missing_motors))
        if always or key != self._last_status_key:
            self._last_status_key = key
            self._status_pub.publish(status)


def main(args: list[str] | None = None) -> None:
    run_node(HardwareNode, args, make_executor=lambda: MultiThreadedExecutor(num_threads=4))


if __name__ == '__main__':
    main()
