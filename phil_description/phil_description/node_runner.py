"""The main() of every Phil node: init, spin, shut down cleanly on Ctrl-C, on an external
shutdown, or when the graph is told to shut down (QUIT) on `/phil/shutdown`.

The graph shutdown only raises a flag in its callback; the main thread sees it between two
executor rounds and tears the node down itself. Shutting the context down from inside a
callback instead races the executor's other threads, which then fail on destroyed handles.

Ctrl-C and SIGTERM are requests, not exceptions: rclpy's signal handler shuts the context down
and the main thread leaves the spin between two callbacks. A KeyboardInterrupt raised wherever
the main thread happens to be (halfway through starting the bus loop, say) would leave things
half built.

Written without ``with rclpy.init()`` so it also runs on Humble, where init is not a context
manager.
"""

from __future__ import annotations

import faulthandler
import gc
import signal
import threading
from collections.abc import Callable

import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Empty

GRAPH_SHUTDOWN_TOPIC = '/phil/shutdown'
GRAPH_SHUTDOWN_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                reliability=ReliabilityPolicy.RELIABLE)
# How long the node that ends the graph waits, as it stops, for every other node to hold the
# shutdown message; one stopped or starved longer gets its stop from the launcher instead.
GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S = 5.0
# How often the main thread looks at the shutdown flag when nothing else wakes the executor.
SHUTDOWN_POLL_PERIOD_S = 0.1
# Longest teardown after spinning: the hardware node stops its bus loop (at most ~15 s) within it.
TEARDOWN_TIMEOUT_S = 20.0


def exit_on_graph_shutdown(node: Node, requested: threading.Event,
                           before_exit: Callable[[], None] | None = None) -> None:
    """Set ``requested`` (after ``before_exit``) once `/phil/shutdown` is published."""

    def shut_down(_: Empty) -> None:
        if requested.is_set():
            return
        node.get_logger().info('graph shutdown requested; exiting')
        if before_exit is not None:
            before_exit()
        requested.set()

    # Its own group: a long callback of the node's default group (a lifecycle transition)
    # must not hold the shutdown back.
    node.create_subscription(Empty, GRAPH_SHUTDOWN_TOPIC, shut_down, GRAPH_SHUTDOWN_QOS,
                             callback_group=MutuallyExclusiveCallbackGroup())


class GraphShutdownSender:
    """Publishes `/phil/shutdown`, which ends every node of the graph (latched).

    Only the sender's writer holds the message. Call ``wait_delivered`` before the sending node
    is destroyed: a node that had not received it yet (a slower process; the sender runs
    real-time and stops at once) would otherwise never hear it and run on.
    """

    def __init__(self, node: Node) -> None:
        self._publisher = node.create_publisher(Empty, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS)

    def send(self) -> None:
        self._publisher.publish(Empty())

    def wait_delivered(self, timeout_s: float = GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S) -> bool:
        """True once every matched node acknowledged what was sent (at once if nothing was)."""
        return self._publisher.wait_for_all_acked(Duration(seconds=timeout_s))


def spin_until(executor: Executor, node: Node, requested: threading.Event,
               signalled: Callable[[], bool] = lambda: False) -> None:
    """Spin ``executor`` until ``requested`` is set, ``signalled()`` is true or the node's
    context shuts down."""
    while node.context.ok() and not requested.is_set() and not signalled():
        executor.spin_once(timeout_sec=SHUTDOWN_POLL_PERIOD_S)


class StopSignals:
    """Ctrl-C and SIGTERM recorded as a stop request instead of raised as KeyboardInterrupt.

    Installed before ``rclpy.init``, whose handlers chain to these; a signal that comes before
    rclpy has a context is still seen (``received``).
    """

    def __init__(self) -> None:
        self.received = False

    def install(self) -> StopSignals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._note)
        return self

    def _note(self, signum: int, frame: object) -> None:
        self.received = True  # a plain store: safe whatever the main thread was doing


def fastest_executor() -> Executor:
    """rclpy's EventsExecutor where it exists (Kilted on), else a SingleThreadedExecutor.

    Only for nodes whose callbacks all return promptly: the EventsExecutor runs a pending
    coroutine again at once, so a coroutine that awaits (an action goal waiting for its end)
    keeps a CPU busy for as long as it waits. Such nodes use :func:`waiting_executor`.
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor()
    return EventsExecutor()


def waiting_executor(context: Context | None = None) -> Executor:
    """A SingleThreadedExecutor: for nodes whose coroutines await (see ``waking_future``).

    It resumes a waiting coroutine only when the executor wakes (a done callback of the
    awaited future, a message, a timer), so waiting costs nothing.
    """
    return SingleThreadedExecutor(context=context)


def run_node(make_node: Callable[[], Node], args: list[str] | None = None,
             make_executor: Callable[[], Executor] = fastest_executor,
             graph_shutdown: bool = True) -> None:
    """Create the node after ``rclpy.init`` and spin it until shutdown.

    Once spinning ends, teardown has ``TEARDOWN_TIMEOUT_S``; if it hangs, the process prints
    every thread's stack to stderr and exits with status 1 (see :func:`exit_if_stuck`).
    """
    stop_signals = StopSignals().install()
    rclpy.init(args=args)
    node = executor = None
    requested = threading.Event()
    try:
        try:
            node = make_node()
            if graph_shutdown:
                exit_on_graph_shutdown(node, requested, getattr(node, 'on_graph_shutdown', None))
            executor = make_executor()
            executor.add_node(node)
            freeze_start_up_objects()
            spin_until(executor, node, requested, lambda: stop_signals.received)
        finally:
            # Armed before the handlers below: clearing a caught exception can already free
            # rcl handles (its traceback holds the frames that own them).
            exit_if_stuck(TEARDOWN_TIMEOUT_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C shuts the context down from rclpy's signal handler; whatever was using it at
        # that moment (a node being built, a wait set) fails with RCLError. Only then is it a
        # normal stop.
        if rclpy.ok() and not stop_signals.received:
            raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        node = executor = None  # freed while the guard still watches
        faulthandler.cancel_dump_traceback_later()


def freeze_start_up_objects() -> None:
    """Collect once, then move every object alive (imports, the model, the node) out of the
    garbage collector's reach. They live as long as the process, yet each full collection
    walked them all: 35-167 ms per full collection in these nodes, a stall for whatever
    command or chunk was in flight."""
    gc.collect()
    gc.freeze()


def exit_if_stuck(timeout_s: float) -> None:
    """End the process (status 1, every thread's stack on stderr) unless
    ``faulthandler.cancel_dump_traceback_later()`` is called within ``timeout_s``.

    The watchdog is faulthandler's C thread, so it acts even when the hang holds the GIL, as
    rclpy's teardown does while Fast DDS destroys a participant: that can deadlock against a
    discovery callback when the whole graph stops at once, spinning forever on a CPU.
    """
    faulthandler.dump_traceback_later(timeout_s, exit=True)
