"""Heartbeats and the liveness watch of a node (``phil_description.core.liveness``).

Every node of the graph sends ``/phil/heartbeat`` twice a second from its executor, with its
process id; nodes that must know whether others run (the hardware, the planner, the score
player, the TCP bridge) watch those they depend on. A watched node whose process exited or is
stopped is down at the next check (ten a second, from /proc: no message needed); one that runs
but has sent nothing for the liveness timeout (its executor hangs) is down then. Heartbeats
are few on purpose: every one wakes the executors of the watchers, which carry commands.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

from rclpy.node import Node

from phil_description.core.liveness import (
    DEFAULT_LIVENESS_TIMEOUT_S,
    LivenessMonitor,
    NodeDown,
    process_space,
)
from phil_msgs.msg import Heartbeat as HeartbeatMsg
from phil_ros.qos import HEARTBEAT_QOS

HEARTBEAT_TOPIC = '/phil/heartbeat'
HEARTBEAT_PERIOD_S = 0.5
CHECK_PERIOD_S = 0.1


class Liveness:
    """The heartbeat of ``owner`` and its watch of the ``watched`` nodes, on the executor of
    ``spins`` (default ``owner``; the hardware node's command node, since rclpy runs its
    lifecycle transitions on the main executor for seconds).

    Args:
        owner: The node whose heartbeat this is (its fully qualified name is sent).
        watched: Nodes to watch (names with or without the leading '/'); none: only send.
        timeout_s: Silence that makes a running watched node down [s].
        on_down: Called with a :class:`NodeDown` when a watched node goes down (the executor's
            thread; use the owner's locks).
        on_back: Called with the node name when a down node sends heartbeats again.
        required: Watched nodes that are down if they never appear at all.
        on_beat: Runs at every heartbeat sent (the hardware counts it for its bus loop).
        spins: The node whose executor sends and watches.
        clock: Monotonic time source [s].
    """

    def __init__(
        self,
        owner: Node,
        watched: Iterable[str] = (),
        timeout_s: float = DEFAULT_LIVENESS_TIMEOUT_S,
        on_down: Callable[[NodeDown], None] | None = None,
        on_back: Callable[[str], None] | None = None,
        required: Iterable[str] = (),
        on_beat: Callable[[], None] | None = None,
        spins: Node | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        node = spins or owner
        space = process_space()
        self._clock = clock
        self._lock = threading.Lock()
        self._monitor = LivenessMonitor(
            watched,
            timeout_s,
            clock(),
            required,
            own=owner.get_fully_qualified_name(),
            space=space,
        )
        self._on_down, self._on_back, self._on_beat = on_down, on_back, on_beat
        self._msg = HeartbeatMsg(
            node=owner.get_fully_qualified_name(), pid=os.getpid(), process_space=space
        )
        self._publisher = node.create_publisher(HeartbeatMsg, HEARTBEAT_TOPIC, HEARTBEAT_QOS)
        if self._monitor.watched:
            node.create_subscription(
                HeartbeatMsg, HEARTBEAT_TOPIC, self._on_heartbeat, HEARTBEAT_QOS
            )
        node.create_timer(HEARTBEAT_PERIOD_S, self._beat)
        if self._monitor.watched:
            node.create_timer(CHECK_PERIOD_S, self.check)

    @property
    def watched(self) -> frozenset[str]:
        return self._monitor.watched

    def _beat(self) -> None:
        self._publisher.publish(self._msg)
        self._msg.sequence += 1
        if self._on_beat is not None:
            self._on_beat()

    def _on_heartbeat(self, msg: HeartbeatMsg) -> None:
        with self._lock:
            back = self._monitor.beat(msg.node, self._clock(), msg.pid, msg.process_space)
        if back and self._on_back is not None:
            self._on_back(msg.node)

    def check(self) -> list[NodeDown]:
        """Report (``on_down``) and return the nodes that went down since the last check."""
        with self._lock:
            newly = self._monitor.check(self._clock())
        if self._on_down is not None:
            for down in newly:
                self._on_down(down)
        return newly

    def down(self) -> list[NodeDown]:
        """Every watched node that is down now."""
        with self._lock:
            return self._monitor.down(self._clock())

    def alive(self, node: str) -> bool:
        """False when the watched ``node`` is down (unwatched nodes are alive)."""
        with self._lock:
            return self._monitor.alive(node, self._clock())

    def last_seen_s(self, node: str) -> float:
        """Monotonic time of the node's last heartbeat (-inf: never)."""
        with self._lock:
            return self._monitor.last_seen_s(node)
