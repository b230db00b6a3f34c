"""tcp_bridge: the brain's TCP protocol (port 1951) in front of the behavior planner: the node
(``node``) and its command handler (``planner_handler``); the TCP server itself is
``phil_control.tcp``."""
