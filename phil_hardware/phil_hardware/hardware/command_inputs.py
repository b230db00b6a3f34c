"""The hardware node's command inputs: what may move or stop the robot, gated here, and
served on a node and executor thread of their own.

rclpy runs lifecycle transitions synchronously, and configure / activate wait seconds for the
drives. The trajectory chunks, ``joint_trajectory`` and ESTOP must not wait behind them, and a
MultiThreadedExecutor (which would let them) delays every delivery by milliseconds. So they
live on a companion node, ``<hardware node>_commands``, spun by a SingleThreadedExecutor in
its own thread, while the lifecycle node keeps its own executor. The names stay those of the
hardware node (``<node>/trajectory_chunks``, ``<node>/joint_trajectory``, ``<node>/estop``).
The companion ignores the process's ROS arguments: ``-r __node:=...`` names the lifecycle node.

The gate: chunks move the robot only when signed with the graph key (the trajectory
generator's); ``joint_trajectory`` only when enabled by parameter, permitted by the planner
(IDLE) and nothing is latched; ESTOP always, through the ESTOP word first.
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

from phil_description.core.estop_word import EstopWord
from phil_description.core.graph_key import GraphKey
from phil_hardware.hardware import conversions as convert
from phil_hardware.rt import BusLoopClient
from phil_msgs.msg import TrajectoryChunk
from phil_msgs.srv import Trigger
from phil_ros.executors import CompanionNode
from phil_ros.graph_safety import signed_by

REFUSAL_LOG_PERIOD_S = 2.0


def not_running_reason(client: BusLoopClient | None) -> str:
    if client is None:
        return 'bus loop is not running'
    return f'bus loop is not running (exit code {client.exitcode})'


class CommandInputs(CompanionNode):
    """The gated subscriptions and the ESTOP service of ``owner``, in a thread of their own.

    Args:
        owner: The hardware node (its context, name, namespace and logger are used).
        bus: () -> (the bus-loop client or None, the hardware's lifecycle state).
        estop_word: The graph's ESTOP word, triggered on every ESTOP.
        clock_bridge: ROS stamps to the bus loop's monotonic time.
        joint_trajectory_enabled: Off, ``joint_trajectory`` is refused whatever the planner says.
    """

    def __init__(
        self,
        owner: Node,
        bus: Callable[[], tuple[BusLoopClient | None, str]],
        estop_word: EstopWord,
        clock_bridge: convert.ClockBridge,
        joint_trajectory_enabled: bool,
    ) -> None:
        super().__init__(owner, 'commands')
        self._bus = bus
        self._estop_word = estop_word
        self._clock_bridge = clock_bridge
        self._key = GraphKey.from_environment()
        self._logger = owner.get_logger()
        self.refused = 0  # foreign or unpermitted inputs so far
        self._joint_trajectory_enabled = joint_trajectory_enabled
        #: The planner's permit (set from its signed requests; cleared when a node goes down).
        self.joint_trajectory_permitted = False
        base = owner.get_fully_qualified_name().rstrip('/')
        self.node.create_subscription(
            TrajectoryChunk, f'{base}/trajectory_chunks', self._on_chunk, 50
        )
        self.node.create_subscription(
            JointTrajectory, f'{base}/joint_trajectory', self._on_trajectory, 10
        )
        self.node.create_service(Trigger, f'{base}/estop', self._on_estop)
        self.start()

    def _active_client(self, what: str) -> BusLoopClient | None:
        client, lifecycle = self._bus()
        if client is None or lifecycle != 'active':
            self._logger.warning(
                f'{what} ignored: hardware is {lifecycle}, not active',
                throttle_duration_sec=REFUSAL_LOG_PERIOD_S,
            )
            return None
        return client

    def _send(self, make_chunk, what: str) -> None:
        client = self._active_client(what)
        if client is None:
            return
        try:
            chunk = make_chunk()
        except ValueError as error:
            self._logger.error(f'{what} rejected: {error}')
            return

        def report(future) -> None:
            result = future.result()
            if not result.ok:
                self._logger.error(f'{what} rejected by the bus loop: {result.detail}')

        client.send_chunk(chunk).add_done_callback(report)

    def _refuse(self, what: str, why: str) -> None:
        self.refused += 1
        self._logger.error(f'{what} refused: {why}', throttle_duration_sec=REFUSAL_LOG_PERIOD_S)

    def _on_chunk(self, msg: TrajectoryChunk) -> None:
        if not signed_by(self._key, msg):
            self._refuse(
                f'chunk {msg.sequence}',
                'not signed with the graph key (only the '
                "trajectory generator's chunks move the robot)",
            )
            return
        self._send(
            lambda: convert.chunk_from_msg(msg, self._clock_bridge), f'chunk {msg.sequence}'
        )

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        refusal = self._joint_trajectory_refusal()
        if refusal:
            self._refuse('joint_trajectory', refusal)
            return
        if not msg.points:
            client = self._active_client('joint_trajectory (hold)')
            if client is not None:
                client.halt()
            return
        self._send(
            lambda: convert.chunk_from_trajectory(msg, self._clock_bridge), 'joint_trajectory'
        )

    def _joint_trajectory_refusal(self) -> str:
        """Why ``joint_trajectory`` is not followed now ('' when it is)."""
        if not self._joint_trajectory_enabled:
            return 'disabled (set the parameter joint_trajectory_enabled to use it)'
        if not self.joint_trajectory_permitted:
            return 'the behavior planner is not IDLE (motions go through /phil/* then)'
        client, _ = self._bus()
        snapshot = client.snapshot() if client is not None else None
        if snapshot is not None and (snapshot.estop or snapshot.faults):
            return 'the hardware is latched (FAULT or ESTOP)'
        return ''

    def _on_estop(self, request, response):
        self._estop_word.trigger()  # latches even when the pipe is busy
        client, lifecycle = self._bus()
        if client is None or not client.alive:
            response.accepted, response.reason = False, not_running_reason(client)
        else:
            client.estop('emergency stop requested (/hardware/estop)')
            response.accepted = True
        response.state = lifecycle
        return response
