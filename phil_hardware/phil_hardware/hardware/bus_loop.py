"""The hardware node's bus-loop process: started at configure (with the bus parameters of
that moment), waited on by the lifecycle transitions (failing at once when the process is gone),
read (its latest snapshot), told each heartbeat, and stopped with its CSV logs at cleanup, on
error, at shutdown and when the node is destroyed.
"""

from __future__ import annotations

import threading
import time
from concurrent import futures

from rclpy.lifecycle import TransitionCallbackReturn

from phil_hardware.hardware.config import Config
from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog
from phil_hardware.rt import BusLoopClient, BusLoopError
from phil_msgs.msg import Fault

TRANSITION_TIMEOUT_S = 30.0
LOOP_CHECK_PERIOD_S = 0.2


class BusLoopProcess:
    """The bus-loop part of :class:`~phil_hardware.hardware.node.HardwareNode` (its state is
    set up there)."""

    _lock: threading.Lock
    _client: BusLoopClient | None
    _motor_log: MotorCsvLog | None
    _tick_log: TickCsvLog | None
    _config: Config
    _node_faults: list[Fault]

    def _start_bus_loop(self) -> TransitionCallbackReturn | None:
        """Start a bus-loop process with the current parameters (configure's first step);
        FAILURE, said in the status, when it cannot be started."""
        try:  # the bus-loop parameters may have changed since start-up (allow_missing)
            self._bus_loop = self._config.current_bus_loop(self)
        except ValueError as error:
            self._node_faults = [
                Fault(code=Fault.CODE_BUS_ERROR, reason=f'configure failed: {error}')
            ]
            self.get_logger().error(f'configure failed: {error}')
            self._publish_status(True)
            return TransitionCallbackReturn.FAILURE
        try:
            self._client = BusLoopClient(self._bus_loop).start()
        except BusLoopError as error:
            self._node_faults = [
                Fault(code=Fault.CODE_PROCESS_DIED, reason=f'bus loop did not start: {error}')
            ]
            self.get_logger().error(str(error))
            self._publish_status(True)
            return TransitionCallbackReturn.FAILURE
        report = self._client.realtime_report or {}
        if not report.get('realtime', False):
            self.get_logger().warning(f'bus loop is NOT real-time: {report}')
        return None

    def _wait_for_loop(self, future):
        """The bus loop's answer; fails at once when the loop process is gone (a dead loop
        never answers, and its pipe may stay open)."""
        deadline = time.monotonic() + TRANSITION_TIMEOUT_S
        while True:
            try:
                return future.result(timeout=LOOP_CHECK_PERIOD_S)
            except futures.TimeoutError:
                if not self._loop_alive():
                    raise BusLoopError('the bus loop process is gone') from None
                if time.monotonic() > deadline:
                    raise

    def _loop_alive(self) -> bool:
        client = self._client
        return client is not None and client.alive

    def _stop_client(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            log, self._motor_log = self._motor_log, None
            ticks, self._tick_log = self._tick_log, None
        if client is not None:
            client.stop()
        if log is not None:
            log.close()
        if ticks is not None:
            ticks.close()

    def _snapshot(self):
        client = self._client
        return client.snapshot() if client is not None else None

    def _beat(self) -> None:
        client = self._client
        if client is not None:
            client.beat()
