"""The hardware node's command inputs, served on a node and executor thread of their own.

rclpy runs lifecycle transitions synchronously, and configure / activate wait seconds for the
drives. The trajectory chunks, ``joint_trajectory`` and ESTOP must not wait behind them, and a
MultiThreadedExecutor (which would let them) delays every delivery by milliseconds. So they
live on a companion node, ``<hardware node>_commands``, spun by a SingleThreadedExecutor in
its own thread, while the lifecycle node keeps its own executor. The names stay those of the
hardware node (``<node>/trajectory_chunks``, ``<node>/joint_trajectory``, ``<node>/estop``).
The companion ignores the process's ROS arguments: ``-r __node:=...`` names the lifecycle node.
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

from phil_description.node_runner import CompanionNode
from phil_msgs.msg import TrajectoryChunk
from phil_msgs.srv import Trigger


class CommandInputs(CompanionNode):
    """Subscriptions and the ESTOP service of ``owner``, spun in a thread of their own.

    Args:
        owner: The hardware node (its context, name and namespace are used).
        on_chunk: ``TrajectoryChunk`` callback.
        on_trajectory: ``trajectory_msgs/JointTrajectory`` callback.
        on_estop: ``Trigger`` service callback.
    """

    def __init__(self, owner: Node, on_chunk: Callable, on_trajectory: Callable,
                 on_estop: Callable) -> None:
        super().__init__(owner, 'commands')
        base = owner.get_fully_qualified_name().rstrip('/')
        self.node.create_subscription(TrajectoryChunk, f'{base}/trajectory_chunks', on_chunk, 50)
        self.node.create_subscription(JointTrajectory, f'{base}/joint_trajectory', on_trajectory,
                                      10)
        self.node.create_service(Trigger, f'{base}/estop', on_estop)
        self.start()
