"""What the hardware node publishes: /joint_states from a thread of its own on absolute
deadlines (and the status on change with it), ~/motor_states and the periodic ~/status on
executor timers; the status's faults are logged once each as they appear.
"""

from __future__ import annotations

import threading
import time

from rclpy.callback_groups import CallbackGroup
from sensor_msgs.msg import JointState

from phil_hardware.hardware import conversions as convert
from phil_hardware.hardware.config import Config
from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog
from phil_msgs.msg import Fault, HardwareStatus, MotorStates
from phil_ros.qos import LATCHED


class StatePublishing:
    """The publishing of :class:`~phil_hardware.hardware.node.HardwareNode` (its state is set
    up there)."""

    _config: Config
    _clock_bridge: convert.ClockBridge
    _motor_log: MotorCsvLog | None
    _tick_log: TickCsvLog | None
    _joint_state_thread: threading.Thread | None
    _stop_publishing: threading.Event
    _published_state: str
    _node_faults: list[Fault]
    _missing: tuple[str, ...]

    def _create_publishers(self, io_group: CallbackGroup) -> None:
        """The publishers, and the timers of the motor states and the periodic status."""
        self._joint_pub = self.create_publisher(JointState, '/joint_states', 10)
        self._motor_pub = self.create_publisher(MotorStates, '~/motor_states', 10)
        self._status_pub = self.create_publisher(HardwareStatus, '~/status', LATCHED)
        self.create_timer(
            1.0 / self._config.motor_state_rate_hz,
            self._publish_motor_states,
            callback_group=io_group,
        )
        self.create_timer(
            1.0 / self._config.status_rate_hz,
            lambda: self._publish_status(True),
            callback_group=io_group,
        )

    def _start_joint_state_thread(self) -> None:
        """Publish the first status, then /joint_states from a thread of its own."""
        self._publish_status(True)
        self._joint_state_thread = threading.Thread(
            target=self._joint_state_loop,
            args=(1.0 / self._config.joint_state_rate_hz,),
            name='phil-joint-states',
            daemon=True,
        )
        self._joint_state_thread.start()

    def _joint_state_loop(self, period_s: float) -> None:
        """Publish /joint_states every ``period_s`` on absolute deadlines until the node is
        destroyed or its context shut down; a late deadline is skipped, never caught up."""
        deadline = time.monotonic()
        while not self._stop_publishing.wait(max(0.0, deadline - time.monotonic())):
            deadline += period_s
            now = time.monotonic()
            if now - deadline > period_s:
                deadline = now
            try:
                self._publish_joint_states()
            except Exception as error:  # a publisher error must not end the state stream
                if not self.context.ok():
                    return
                self.get_logger().error(
                    f'publishing joint states failed: {error}', throttle_duration_sec=5.0
                )

    def _publish_joint_states(self) -> None:
        snapshot = self._snapshot()
        if snapshot is not None:
            self._joint_pub.publish(convert.joint_state_msg(snapshot, self._clock_bridge))
            log = self._motor_log
            if log is not None:
                log.write(snapshot, 0.0)
            ticks = self._tick_log
            if ticks is not None:
                ticks.write(snapshot)
        self._publish_status(False, snapshot)  # changes go out within one joint-state period

    def _publish_motor_states(self) -> None:
        snapshot = self._snapshot()
        if snapshot is not None:
            self._motor_pub.publish(
                convert.motor_states_msg(snapshot, self._clock_bridge, self._model.hardware.motors)
            )

    def _lifecycle_state(self) -> str:
        """The primary state; during a transition the previous one, so the status never
        announces a state before a lifecycle request would find the node in it."""
        return self._published_state

    def _publish_status(self, always: bool, snapshot=None) -> None:
        snapshot = snapshot or self._snapshot()
        realtime = bool(snapshot.realtime) if snapshot is not None else False
        status = convert.hardware_status_msg(
            snapshot, self._lifecycle_state(), realtime, self._clock_bridge, self._node_faults
        )
        if snapshot is None:
            status.missing_motors = list(self._missing)
        key = (
            status.lifecycle_state,
            status.estop,
            tuple(f.reason for f in status.faults),
            tuple(status.missing_motors),
            status.resets_granted,  # a latch that came and went: said at once
        )
        if always or key != self._last_status_key:
            if key != self._last_status_key:
                self._log_new_faults(status.faults)
            self._last_status_key = key
            self._status_pub.publish(status)

    def _log_new_faults(self, faults) -> None:
        """One ERROR line per fault that was not in the previous status: the run log says
        why the robot stopped, not only that chunks were refused afterwards."""
        before = set(self._last_status_key[2]) if self._last_status_key else set()
        for fault in faults:
            if fault.reason not in before:
                self.get_logger().error(f'fault: {fault.reason}')
