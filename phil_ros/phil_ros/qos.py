"""The QoS profiles of the graph's topics, defined once."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

#: State a late joiner must see at once (status, the robot description, the graph shutdown):
#: the last message is kept for readers that come later.
LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


#: Every message counts (trajectory chunks, hits): reliable, with room for a slow reader.
RELIABLE_QUEUE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


#: Best effort: a late heartbeat is worth nothing, and a reliable writer would queue them for
#: a stopped reader.
HEARTBEAT_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
