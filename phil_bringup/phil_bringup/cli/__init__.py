"""The `phil` command: talk to a running Phil graph over ROS 2 (and TCP for raw lines)."""
