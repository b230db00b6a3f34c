"""The rclpy runtime every Phil node shares (the packages' ROS-free cores need none of it).

* :mod:`phil_ros.node_runner`: a node's ``main()``: init, spin, clean shutdown.
* :mod:`phil_ros.executors`: which executor a node spins on; companion nodes.
* :mod:`phil_ros.graph_shutdown`: QUIT ends the graph (`/phil/shutdown`).
* :mod:`phil_ros.qos`: the QoS profiles of the graph's topics.
* :mod:`phil_ros.heartbeats`: heartbeats and the liveness watch.
* :mod:`phil_ros.graph_safety`: graph-key signatures on messages, requests and goal ids.
* :mod:`phil_ros.waking_future`, :mod:`phil_ros.work_timer`: waiting and periodic work
  without busy executors.
* :mod:`phil_ros.testing`: rclpy contexts for tests.
"""
