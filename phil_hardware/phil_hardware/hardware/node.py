"""hardware: the lifecycle node that owns the CAN and serial buses (through the bus loop).

Lifecycle (like a ros2_control hardware component):
    configure   start the real-time bus-loop process, open the buses, discover the motors,
                configure the drives (EPOS4 in CSP, ready to switch on), set the TMotor
                origins at the pinned pose (the first configure that succeeds only); no
                torque. A missing motor fails the transition and is named in /hardware/status
                (unless listed in ``allow_missing``).
    activate    EPOS4 enable, Dynamixel torque (a few ms); cyclic sending holding the current
                pose.
    deactivate  stop motion, drives disabled (torque off); buses stay open.
    cleanup     stop the bus-loop process, close the buses.
The node configures itself at start-up (``configure_on_start``) so /hardware/status shows the
discovered motors before START. The bus configuration is read from the parameters at every
configure: after a failed discovery (status: ``missing_motors`` and one MOTOR_MISSING fault per
joint), set ``allow_missing`` and START again (it configures first). A bus loop that died
(PROCESS_DIED) makes the next transition an error transition, which ends unconfigured;
configure starts a new one.
``lifecycle_state`` in the status is the state machine's primary state, announced once a
lifecycle request would find the node in it (during a transition: the state it left).

Buses come from the URDF (``sim`` selects the simulator buses). ``can_channel_base`` ('' = the
URDF's) moves the udp_multicast CAN buses to that ff11:: group and the following ones (can0..3
on base+0..3, like the device simulator's ``--can-channel-base``) and ``dxl_port`` ('' = the
URDF's) replaces the Dynamixel port (the simulator's ``--dxl-port``), so several simulated
robots can run on one machine.

Topics: /joint_states (measured, ``joint_state_rate_hz``), ~/motor_states (MotorStates),
~/status (HardwareStatus, transient local, on change and at ``status_rate_hz``); subscribes
~/trajectory_chunks (phil_msgs/TrajectoryChunk) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory, joint_trajectory_controller style: stamp 0 = now, an empty
message holds). Services ~/estop (phil_msgs/Trigger, anyone: stopping is always allowed) and
~/request (phil_msgs/HardwareRequest).

One latch, owned here (its bus loop): the hardware moves and un-latches only for its own
command path. Chunks must carry the graph key's signature (the trajectory generator's);
lifecycle transitions and RESET happen only on a signed ~/request (the behavior planner's, at
START and QUIT): the node offers no change_state service, only ~/get_state.
~/joint_trajectory is off unless ``joint_trajectory_enabled``, and then followed only while the
planner has said it is IDLE (``allow_joint_trajectory``) and nothing is latched. Unsigned input
is dropped and said (throttled). ESTOP also reaches the bus loop through the ESTOP word
(``phil_description.core.estop_word``), which this node creates for the graph.

Liveness (``phil_ros.heartbeats``, on a companion node of its own): this node's
heartbeat, also counted into the bus loop's shared block (the loop holds the robot when this
node is stopped or silent), and the watch of ``watched_nodes`` (the motion path): one that dies,
is stopped or stays silent for ``liveness_timeout_s`` while the drives are active latches a
PROCESS_DIED fault naming it; RESET is refused until it is back, and activate waits (10 s at
most) until every watched node runs.

Nothing here waits on the loop except the lifecycle transitions and RESET (rclpy runs
transitions synchronously). The command inputs (chunks, joint_trajectory, ESTOP) are served
meanwhile by a companion node in a thread of its own (``command_inputs``). /joint_states (and
the status on change) is published from a thread of its own on absolute deadlines, not from an
executor timer: with a 200 Hz timer the node took ~30 % of a core, mostly executor overhead,
and the rate fell below 100 Hz as soon as the process was busy (~16 % and steady with it).
"""

from __future__ import annotations

import math
import threading
import time
from concurrent import futures

from lifecycle_msgs.srv import GetState
from rclpy.callback_groups import (
    CallbackGroup,
    MutuallyExclusiveCallbackGroup,
    ReentrantCallbackGroup,
)
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from phil_description.core.estop_word import EstopWord, estop_word_name
from phil_description.core.graph_key import GraphKey, ReplayGuard
from phil_description.core.liveness import NodeDown, node_name
from phil_hardware.hardware import conversions as convert
from phil_hardware.hardware.bus_loop import BusLoopProcess
from phil_hardware.hardware.command_inputs import CommandInputs, not_running_reason
from phil_hardware.hardware.config import Config
from phil_hardware.hardware.csv_logs import MotorCsvLog, TickCsvLog
from phil_hardware.hardware.lifecycle import LifecycleTransitions
from phil_hardware.hardware.publishing import StatePublishing
from phil_hardware.rt import BusLoopClient, BusLoopError
from phil_msgs.msg import Fault
from phil_msgs.srv import HardwareRequest
from phil_ros.executors import CompanionNode
from phil_ros.graph_safety import request_refusal
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node

RESET_TIMEOUT_S = 5.0
# How long activate waits for every watched node's first heartbeat.
NODES_WAIT_S = 10.0


class HardwareNode(LifecycleTransitions, StatePublishing, BusLoopProcess, LifecycleNode):
    """Lifecycle front end of the bus-loop process: its transitions (``lifecycle``), what it
    publishes (``publishing``) and the bus-loop process (``bus_loop``) live in modules of
    their own; the signed requests and the liveness watch are here."""

    def __init__(self, **node_options) -> None:
        # rclpy's lifecycle services would let any node switch torque: transitions come only
        # from a signed ~/request; ~/get_state is served here for lifecycle tools.
        super().__init__('hardware', enable_communication_interface=False, **node_options)
        # Everything destroy_node closes starts as None, before anything can fail: a node whose
        # construction stopped halfway (a refused parameter, Ctrl-C) is still destroyed by
        # rclpy's shutdown.
        self._lock = threading.Lock()
        self._client: BusLoopClient | None = None
        self._motor_log: MotorCsvLog | None = None
        self._tick_log: TickCsvLog | None = None
        self._estop_word: EstopWord | None = None
        self._watching: CompanionNode | None = None
        self._commands: CommandInputs | None = None
        self._joint_state_thread: threading.Thread | None = None
        self._stop_publishing = threading.Event()
        self._read_configuration()
        self._lifecycle = 'unconfigured'
        self._origins_set = False  # see on_configure
        self._published_state = 'unconfigured'
        self._transition: tuple[int, str] | None = None  # the state a running transition is in
        self._node_faults: list[Fault] = []
        self._missing: tuple[str, ...] = ()  # from a failed discovery, once the loop is gone
        self._last_status_key = None
        io_group = MutuallyExclusiveCallbackGroup()
        command_group = ReentrantCallbackGroup()
        self._create_publishers(io_group)
        self._create_services(command_group)
        self._start_joint_state_thread()
        self._start_command_inputs()
        self._start_liveness()
        if self._config.configure_on_start:
            self._start_timer = self.create_timer(
                0.0, self._configure_once, callback_group=command_group
            )

    def _read_configuration(self) -> None:
        """The parameters, the graph key and the ESTOP word this node creates for the graph."""
        self._key = GraphKey.from_environment()
        word = estop_word_name(
            self.context.get_domain_id(), self.get_fully_qualified_name(), self._key.tag
        )
        self._config = Config.from_parameters(self, word)
        self._model = self._config.model
        self._bus_loop = self._config.bus_loop
        self._replays = ReplayGuard()
        self._estop_word = EstopWord.create(self._bus_loop.estop_word)
        self._watched = tuple(node_name(name) for name in self._config.watched_nodes)
        self._clock_bridge = convert.ClockBridge()

    def _create_services(self, command_group: CallbackGroup) -> None:
        """~/request (signed) and ~/get_state."""
        self.create_service(
            HardwareRequest, '~/request', self._on_request, callback_group=command_group
        )
        self.create_service(
            GetState, '~/get_state', self._on_get_state, callback_group=command_group
        )

    def _start_command_inputs(self) -> None:
        """The chunks, joint_trajectory and ESTOP inputs, served on a thread of their own."""
        self._commands = CommandInputs(
            self,
            lambda: (self._client, self._lifecycle),
            self._estop_word,
            self._clock_bridge,
            self._config.joint_trajectory_enabled,
        )

    def _start_liveness(self) -> None:
        """Heartbeats and the watch on an executor thread of their own: transitions block the
        main one for seconds, and the command thread carries the chunks. Each heartbeat is
        counted into the bus loop's shared block too."""
        self._watching = CompanionNode(self, 'liveness')
        self._liveness = Liveness(
            self,
            self._watched,
            self._config.liveness_timeout_s,
            on_down=self._on_node_down,
            on_beat=self._beat,
            spins=self._watching.node,
        )
        self._watching.start()

    @property
    def refused_inputs(self) -> int:
        """Chunks and joint trajectories refused so far (foreign, or not permitted now)."""
        return self._commands.refused

    def on_graph_shutdown(self) -> None:
        self._stop_client()

    def release(self) -> None:
        """The node's own teardown: the companion threads and the joint-state publishing
        stop, the bus loop is stopped (``_stop_client``), the ESTOP word closes."""
        for companion in (self._watching, self._commands):
            if companion is not None:
                companion.stop()
        self._stop_publishing.set()
        if self._joint_state_thread is not None:
            self._joint_state_thread.join(2.0)
        self._stop_client()
        if self._estop_word is not None:
            self._estop_word.close()

    def destroy_node(self) -> None:
        self.release()
        for companion in (self._watching, self._commands):
            if companion is not None:
                companion.close()
        super().destroy_node()

    # ------------------------------------------------------------------ requests
    def _on_request(self, request, response):
        """A signed request of the behavior planner (lifecycle step, RESET, permit)."""
        name = request.request
        refusal = request_refusal(self._key, self._replays, request)
        if refusal:
            self.get_logger().error(f'request {name!r} refused: {refusal}')
            accepted, reason = False, refusal
        elif name in ('configure', 'activate', 'deactivate', 'cleanup'):
            accepted, reason = self._requested_transition(name)
        elif name == 'reset':
            accepted, reason = self._reset()
        elif name == 'nodes_ready':  # asked at start-up: activate will not have to wait
            absent = self._absent_nodes()
            accepted, reason = not absent, '; '.join(absent)
        elif name in ('allow_joint_trajectory', 'forbid_joint_trajectory'):
            self._commands.joint_trajectory_permitted = name == 'allow_joint_trajectory'
            accepted, reason = True, ''
        else:
            accepted, reason = False, f'unknown request {name!r}'
        response.accepted, response.reason = accepted, reason
        response.state = self._lifecycle
        return response

    def _requested_transition(self, name: str) -> tuple[bool, str]:
        if name == 'activate':
            # Right after start-up the other nodes may not have been discovered yet: give
            # them a moment (this runs in the transition's own wait, like rclpy's).
            deadline = time.monotonic() + NODES_WAIT_S
            while (absent := self._absent_nodes()) and time.monotonic() < deadline:
                time.sleep(0.05)
            if absent:
                return False, f'activate refused: {"; ".join(absent)}'
        outcome = self._transition_to(name)
        if outcome is TransitionCallbackReturn.SUCCESS:
            return True, ''
        faults = '; '.join(fault.reason for fault in self._node_faults)
        return False, f'{name} failed: {faults or "see /hardware/status"}'

    def _absent_nodes(self) -> list[str]:
        """Why each watched node is unavailable (not running yet, or down)."""
        watch = self._liveness
        down = {down.node: down.reason for down in watch.down()}
        for node in sorted(watch.watched):
            if node not in down and watch.last_seen_s(node) == -math.inf:
                down[node] = f'{node.lstrip("/")} is not running (no heartbeat yet)'
        return list(down.values())

    def _reset(self) -> tuple[bool, str]:
        client = self._client
        if client is None or not client.alive:
            return False, not_running_reason(self._client)
        down = [down.reason for down in self._liveness.down()]
        if down:
            return False, f'reset refused: {"; ".join(down)}'
        try:  # an exception escaping a service callback ends the executor's spin
            result = client.reset().result(timeout=RESET_TIMEOUT_S)
        except (BusLoopError, futures.TimeoutError) as error:
            result = None
            reason = f'reset failed: {error}'
        self._publish_status(True)
        if result is None:
            return False, reason
        return result.ok, result.detail

    # ------------------------------------------------------------------ liveness
    def _on_node_down(self, down: NodeDown) -> None:
        """A watched node went silent: with torque on, latch a fault naming it (the robot
        holds). Without torque nothing can move; activate then refuses until it is back."""
        self._commands.joint_trajectory_permitted = False
        self.get_logger().error(f'motion path: {down.reason}')
        client = self._client
        if client is not None and client.alive and self._lifecycle == 'active':
            client.fault(down.reason)


def main(args: list[str] | None = None) -> None:
    run_node(HardwareNode, args)


if __name__ == '__main__':
    main()
