"""The main() of every Phil node: init, spin, shut down cleanly on Ctrl-C, on an external
shutdown, or when the graph is told to shut down (QUIT) on `/phil/shutdown`.

The graph shutdown only raises a flag in its callback; the main thread sees it between two
executor rounds and tears the node down itself. Shutting the context down from inside a
callback instead races the executor's other threads, which then fail on destroyed handles.

Ctrl-C and SIGTERM are requests, not exceptions: rclpy's signal handler shuts the context down
and the main thread leaves the spin between two callbacks. A KeyboardInterrupt raised wherever
the main thread happens to be (halfway through starting the bus loop, say) would leave things
half built.

A node follows only a graph shutdown signed with the graph key. (Its heartbeat is its own:
``phil_description.heartbeats.Liveness``.)

Written without ``with rclpy.init()`` so it also runs on Humble, where init is not a context
manager.
"""

from __future__ import annotations

import faulthandler
import gc
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable

import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from phil_description.core.exit_status import CONFIG_ERROR_EXIT
from phil_description.core.graph_key import GraphKey, GraphKeyError
from phil_description.graph_safety import sign_message, signed_by
from phil_msgs.msg import GraphShutdown

GRAPH_SHUTDOWN_TOPIC = '/phil/shutdown'
GRAPH_SHUTDOWN_QOS = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
# How long the node that ends the graph waits, as it stops, for every other node to hold the
# shutdown message; one stopped or starved longer gets its stop from the launcher instead.
GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S = 5.0
ACK_POLL_S = 0.05
# How often the main thread looks at the shutdown flag when nothing else wakes the executor.
SHUTDOWN_POLL_PERIOD_S = 0.1
# Longest teardown after spinning: the hardware node stops its bus loop (at most ~15 s) within it.
TEARDOWN_TIMEOUT_S = 20.0
#: What a refused configuration raises while a node is built: our own checks (ValueError,
#: naming the parameter and what is allowed) and rclpy's (a value of the wrong type).
CONFIG_ERRORS = (ValueError, ParameterException)


def exit_on_graph_shutdown(
    node: Node,
    requested: threading.Event,
    key: GraphKey,
    before_exit: Callable[[], None] | None = None,
) -> None:
    """Set ``requested`` (after ``before_exit``) once `/phil/shutdown` is published signed with
    ``key``; an unsigned one (a foreign node) is ignored and said."""

    def shut_down(msg: GraphShutdown) -> None:
        if requested.is_set():
            return
        if not signed_by(key, msg):
            node.get_logger().warning(
                'ignored a /phil/shutdown not signed with the graph key '
                '(from outside the graph); QUIT ends the graph'
            )
            return
        node.get_logger().info(f'graph shutdown requested ({msg.reason}); exiting')
        if before_exit is not None:
            before_exit()
        requested.set()

    # Its own group: a long callback of the node's default group (a lifecycle transition)
    # must not hold the shutdown back.
    node.create_subscription(
        GraphShutdown,
        GRAPH_SHUTDOWN_TOPIC,
        shut_down,
        GRAPH_SHUTDOWN_QOS,
        callback_group=MutuallyExclusiveCallbackGroup(),
    )


class GraphShutdownSender:
    """Publishes `/phil/shutdown`, which ends every node of the graph (latched, signed).

    Only the sender's writer holds the message. Call ``wait_delivered`` before the sending node
    is destroyed: a node that had not received it yet (a slower process; the sender runs
    real-time and stops at once) would otherwise never hear it and run on.
    """

    def __init__(self, node: Node, key: GraphKey) -> None:
        self._key = key
        self._publisher = node.create_publisher(
            GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
        )

    def send(self, reason: str = 'QUIT') -> None:
        msg = GraphShutdown(reason=reason, nonce=secrets.token_hex(8))
        self._publisher.publish(sign_message(self._key, msg))

    def wait_delivered(
        self, subscribers: int = 0, *, timeout_s: float = GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S
    ) -> bool:
        """True once every matched node acknowledged what was sent (at once if nothing was)
        and at least ``subscribers`` nodes have been matched meanwhile: a QUIT right after
        start-up can come before discovery has finished, and a node that matches only after
        this writer has gone never gets the message. (A node that got it may leave at once,
        so the most matched at any time counts.)"""
        deadline = time.monotonic() + timeout_s
        most = 0
        while True:
            most = max(most, self._publisher.get_subscription_count())
            remaining = deadline - time.monotonic()
            acked = self._publisher.wait_for_all_acked(
                Duration(seconds=max(0.0, min(remaining, ACK_POLL_S)))
            )
            if acked and most >= subscribers:
                return True
            if remaining <= 0:
                return False
            time.sleep(ACK_POLL_S)


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

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread and destroy the companion node (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._executor.shutdown(timeout_sec=timeout_s)
        self.node.destroy_node()


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


def run_node(
    make_node: Callable[[], Node],
    args: list[str] | None = None,
    make_executor: Callable[[], Executor] = fastest_executor,
    graph_shutdown: bool = True,
) -> None:
    """Create the node after ``rclpy.init`` and spin it until shutdown.

    The node follows the graph shutdown (``graph_shutdown``; needs ``PHIL_GRAPH_KEY``, without
    it the node says so and runs until stopped). Once spinning ends, teardown has
    ``TEARDOWN_TIMEOUT_S``; if it hangs, the process prints every thread's stack to stderr and
    exits with status 1 (see :func:`exit_if_stuck`).
    """
    stop_signals = StopSignals().install()
    rclpy.init(args=args)
    node = executor = None
    requested = threading.Event()
    try:
        try:
            try:
                node = make_node()
            except CONFIG_ERRORS as error:
                if not rclpy.ok() or stop_signals.received:
                    raise  # Ctrl-C while it was being built (see below)
                # One line, no traceback: the launcher shows it and stops the graph.
                sys.stderr.write(f'configuration refused: {error}\n')
                sys.stderr.flush()
                raise SystemExit(CONFIG_ERROR_EXIT) from None
            if graph_shutdown:
                try:
                    key = GraphKey.from_environment()
                except GraphKeyError as error:
                    node.get_logger().warning(f'not following the graph shutdown: {error}')
                else:
                    exit_on_graph_shutdown(
                        node, requested, key, getattr(node, 'on_graph_shutdown', None)
                    )
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
