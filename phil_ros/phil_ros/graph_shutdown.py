"""QUIT ends the graph: `/phil/shutdown`, latched and signed with the graph key.

The node that ends the graph publishes it (:class:`GraphShutdownSender`); every node follows it
(:func:`exit_on_graph_shutdown`, armed by ``node_runner.run_node``). Following only raises a
flag in the callback; the main thread sees it between two executor rounds and tears the node
down itself. Shutting the context down from inside a callback instead races the executor's
other threads, which then fail on destroyed handles.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node

from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import GraphShutdown
from phil_ros.graph_safety import sign_message, signed_by
from phil_ros.qos import LATCHED

GRAPH_SHUTDOWN_TOPIC = '/phil/shutdown'
GRAPH_SHUTDOWN_QOS = LATCHED
# How long the node that ends the graph waits, as it stops, for every other node to hold the
# shutdown message; one stopped or starved longer gets its stop from the launcher instead.
GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S = 5.0
ACK_POLL_S = 0.05


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
        self._context = node.context
        self._publisher = node.create_publisher(
            GraphShutdown, GRAPH_SHUTDOWN_TOPIC, GRAPH_SHUTDOWN_QOS
        )
        self.sent = False
        self._matched_at_send = 0

    @property
    def matched(self) -> int:
        """Subscriptions this sender's writer has matched now."""
        return self._publisher.get_subscription_count()

    def send(self, reason: str = 'QUIT') -> None:
        msg = GraphShutdown(reason=reason, nonce=secrets.token_hex(8))
        # Counted before the message goes: the nodes that get it at once leave at once.
        self._matched_at_send = self._publisher.get_subscription_count()
        self._publisher.publish(sign_message(self._key, msg))
        self.sent = True

    def wait_delivered(
        self, subscribers: int = 0, *, timeout_s: float = GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S
    ) -> bool:
        """True once every matched node acknowledged what was sent (at once if nothing was)
        and at least ``subscribers`` nodes have been matched meanwhile: a QUIT right after
        start-up can come before discovery has finished, and a node that matches only after
        this writer has gone never gets the message. (A node that got it may leave at once,
        so the most matched at any time from the send on counts.) False when the time is up,
        or when the process's context is shut down meanwhile (Ctrl-C: the launcher stops every
        node)."""
        if not self.sent:
            return True
        deadline = time.monotonic() + timeout_s
        most = self._matched_at_send
        while True:
            if not self._context.ok():
                return False
            remaining = deadline - time.monotonic()
            try:
                most = max(most, self._publisher.get_subscription_count())
                acked = self._publisher.wait_for_all_acked(
                    Duration(seconds=max(0.0, min(remaining, ACK_POLL_S)))
                )
            except Exception:  # the context went down between the look and the call
                if self._context.ok():
                    raise
                return False
            if acked and most >= subscribers:
                return True
            if remaining <= 0:
                return False
            time.sleep(ACK_POLL_S)
