"""The main() of every Phil node: init, spin, shut down cleanly on Ctrl-C, on an external
shutdown, or when the graph is told to shut down (QUIT) on `/phil/shutdown`.

Written without ``with rclpy.init()`` so it also runs on Humble, where init is not a context
manager.
"""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Empty

GRAPH_SHUTDOWN_TOPIC = '/phil/shutdown'
GRAPH_SHUTDOWN_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                reliability=ReliabilityPolicy.RELIABLE)


def exit_on_graph_shutdown(node: Node, before_exit: Callable[[], None] | None = None) -> None:
    """Make ``node``'s process end cleanly once `/phil/shutdown` is published."""

    def shut_down(_: Empty) -> None:
        node.get_logger().info('graph shutdown requested; exiting')
        if before_exit is not None:
            before_exit()
        rclpy.try_shutdown(context=node.context)

    node.create_subscription(Empty, GRAPH_SHUTDOWN_TOPIC, shut_down, GRAPH_SHUTDOWN_QOS)


def run_node(make_node: Callable[[], Node], args: list[str] | None = None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor,
             graph_shutdown: bool = True) -> None:
    """Create the node after ``rclpy.init`` and spin it until shutdown."""
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        if graph_shutdown:
            exit_on_graph_shutdown(node, getattr(node, 'on_graph_shutdown', None))
        executor = make_executor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
