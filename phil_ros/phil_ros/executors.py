"""Which executor a node spins on, and companion nodes spun beside it.

This is the one place that picks between rclpy versions' executors (the EventsExecutor exists
from rclpy 7.1 on; Humble's rclpy has none).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.context import Context
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

# How often the main thread looks at the shutdown flag when nothing else wakes the executor.
SHUTDOWN_POLL_PERIOD_S = 0.1


def fastest_executor(context: Context | None = None) -> Executor:
    """rclpy's EventsExecutor where it exists (rclpy 7.1 on: Jazzy's later releases and
    Kilted), else a SingleThreadedExecutor (Humble).

    Only for nodes whose callbacks all return promptly: the EventsExecutor runs a pending
    coroutine again at once, so a coroutine that awaits (an action goal waiting for its end)
    keeps a CPU busy for as long as it waits. Such nodes use :func:`waiting_executor`.
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def waiting_executor(context: Context | None = None) -> Executor:
    """A SingleThreadedExecutor: for nodes whose coroutines await (see ``waking_future``).

    It resumes a waiting coroutine only when the executor wakes (a done callback of the
    awaited future, a message, a timer), so waiting costs nothing.
    """
    return SingleThreadedExecutor(context=context)


def spin_until(
    executor: Executor,
    node: Node,
    requested: threading.Event,
    signalled: Callable[[], bool] = lambda: False,
) -> None:
    """Spin ``executor`` until ``requested`` is set, ``signalled()`` is true or the node's
    context shuts down."""
    while node.context.ok() and not requested.is_set() and not signalled():
        executor.spin_once(timeout_sec=SHUTDOWN_POLL_PERIOD_S)


class CompanionNode:
    """A node beside ``owner`` (same context and namespace, named ``<owner>_<suffix>``) spun by
    a SingleThreadedExecutor in a thread of its own: for what must be served while the owner's
    executor is busy (rclpy runs a lifecycle transition synchronously). It ignores the process's
    ROS arguments (``-r __node:=...`` names the owner)."""

    def __init__(self, owner: Node, suffix: str) -> None:
        self.node = Node(
            f'{owner.get_name()}_{suffix}',
            namespace=owner.get_namespace(),
            context=owner.context,
            use_global_arguments=False,
            start_parameter_services=False,
        )
        self._executor = SingleThreadedExecutor(context=owner.context)
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._destroyed = False
        self._thread = threading.Thread(target=self._spin, name=f'phil-{suffix}', daemon=True)

    def start(self) -> None:
        """Start spinning (once every entity is created)."""
        self._thread.start()

    def _spin(self) -> None:
        try:
            spin_until(self._executor, self.node, self._stop)
        except ExternalShutdownException:
            pass
        except Exception:  # Ctrl-C tears the context down under us: then it is a stop
            if self.node.context.ok() and not self._stop.is_set():
                raise

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread and its executor (idempotent); the node stays."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._executor.shutdown(timeout_sec=timeout_s)

    def close(self, timeout_s: float = 2.0) -> None:
        """:meth:`stop`, then destroy the companion node (idempotent)."""
        self.stop(timeout_s)
        if not self._destroyed:
            self._destroyed = True
            self.node.destroy_node()
