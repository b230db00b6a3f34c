"""The main() of every Phil node: init, spin, shut down cleanly on Ctrl-C or external shutdown.

Written without ``with rclpy.init()`` so it also runs on Humble, where init is not a context
manager.
"""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node


def run_node(make_node: Callable[[], Node], args: list[str] | None = None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor) -> None:
    """Create the node after ``rclpy.init`` and spin it until shutdown."""
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        executor = make_executor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
