"""The hardware node's lifecycle transitions (configure, activate, deactivate, cleanup,
shutdown, error processing) and the state it reports (~/get_state, the status).

rclpy's state machine is private: every transition runs through ``_transition_to`` (rclpy's
public ``trigger_<name>``), which records the transition state for ~/get_state while it runs
and the primary state the callbacks reached once it has ended.
"""

from __future__ import annotations

from concurrent import futures
from functools import partial

from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn

from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog
from phil_hardware.rt import BusLoopError
from phil_msgs.msg import Fault

# lifecycle_msgs/State of each primary state, and of the state each transition runs in.
PRIMARY_STATE_IDS = {
    'unconfigured': State.PRIMARY_STATE_UNCONFIGURED,
    'inactive': State.PRIMARY_STATE_INACTIVE,
    'active': State.PRIMARY_STATE_ACTIVE,
    'finalized': State.PRIMARY_STATE_FINALIZED,
}
TRANSITION_STATES = {
    'configure': (State.TRANSITION_STATE_CONFIGURING, 'configuring'),
    'activate': (State.TRANSITION_STATE_ACTIVATING, 'activating'),
    'deactivate': (State.TRANSITION_STATE_DEACTIVATING, 'deactivating'),
    'cleanup': (State.TRANSITION_STATE_CLEANINGUP, 'cleaningup'),
}
ERROR_PROCESSING = (State.TRANSITION_STATE_ERRORPROCESSING, 'errorprocessing')


class LifecycleTransitions:
    """The transitions of :class:`~phil_hardware.hardware.node.HardwareNode` (its state is set
    up there; it precedes ``LifecycleNode`` among the node's bases)."""

    _lifecycle: str
    _origins_set: bool
    _published_state: str
    _transition: tuple[int, str] | None
    _node_faults: list[Fault]
    _missing: tuple[str, ...]

    def _configure_once(self) -> None:
        self._start_timer.cancel()
        self._transition_to('configure')

    def _transition_to(self, name: str) -> TransitionCallbackReturn:
        """rclpy's ``trigger_<name>``, with the state followed here (rclpy's state machine is
        private): ~/get_state reports the transition while it runs, the status the state it
        left until it has ended; the callbacks set ``_lifecycle`` to the state it ends in."""
        self._transition = TRANSITION_STATES[name]
        try:
            return getattr(self, f'trigger_{name}')()
        finally:
            self._transition = None
            self._published_state = self._lifecycle

    def _run_transition(self, name: str, future_of, next_state: str) -> TransitionCallbackReturn:
        try:
            result = self._wait_for_loop(future_of())
        except (BusLoopError, futures.TimeoutError) as error:  # not the builtin before 3.11
            result = None
            reason = f'{name} failed: {error}'
        else:
            reason = f'{name} failed: {result.detail}'
        if result is None or not result.ok:
            self.get_logger().error(reason)
            if not self._loop_alive():
                # Nothing left to retry against: error processing (on_error) cleans up and
                # leaves the node unconfigured, from where configure starts a fresh bus loop.
                self._node_faults = [Fault(code=Fault.CODE_PROCESS_DIED, reason=reason)]
                self._publish_status(True)
                return TransitionCallbackReturn.ERROR
            self._node_faults = self._failure_faults(name, reason)
            self._publish_status(True)
            return TransitionCallbackReturn.FAILURE
        self._node_faults = []
        self._missing = ()
        self._lifecycle = next_state
        self.get_logger().info(f'{name}: {result.detail}')
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def _failure_faults(self, transition: str, reason: str) -> list[Fault]:
        """Faults for a failed transition: after a failed discovery one MOTOR_MISSING per joint
        not found (kept for the status after the bus loop has gone), else one BUS_ERROR."""
        snapshot = self._snapshot()
        if transition == 'configure' and snapshot is not None:
            self._missing = tuple(snapshot.missing_motors)
        if transition != 'configure' or not self._missing:
            return [Fault(code=Fault.CODE_BUS_ERROR, reason=reason)]
        motors = self._model.hardware.motors
        return [
            Fault(
                code=Fault.CODE_MOTOR_MISSING,
                joint=name,
                reason=(
                    f'{name} ({motors[name].family.value} {motors[name].model} id '
                    f'{motors[name].device_id} on {motors[name].bus}) not found at configure; '
                    'check power, wiring and the id, or list the joint in allow_missing'
                ),
            )
            for name in self._missing
        ]

    def on_configure(self, state) -> TransitionCallbackReturn:
        failure = self._start_bus_loop()
        if failure is not None:
            return failure
        # The TMotor origins are set at the first configure that succeeds (the pins are in):
        # a later one (after a dead bus loop) keeps them, the arms may have moved since.
        outcome = self._run_transition(
            'configure',
            partial(self._client.configure, zero_origins=not self._origins_set),
            'inactive',
        )
        if outcome is not TransitionCallbackReturn.SUCCESS:
            self._stop_client()
            return outcome
        self._origins_set = True
        log_dir = self._config.log_dir
        if log_dir is not None:
            self._motor_log = MotorCsvLog(log_dir / 'motors.csv')
            self._tick_log = TickCsvLog(log_dir / 'ticks.csv')
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
        self._origins_set = False  # see on_configure
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._stop_client()
        self._lifecycle = 'finalized'
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state) -> TransitionCallbackReturn:
        self._transition = ERROR_PROCESSING
        self._stop_client()
        self._lifecycle = 'unconfigured'
        self._origins_set = False  # see on_configure
        self._publish_status(True)
        return TransitionCallbackReturn.SUCCESS

    def _on_get_state(self, request, response):
        state = self._published_state
        current = self._transition or (PRIMARY_STATE_IDS[state], state)
        response.current_state.id, response.current_state.label = current
        return response
