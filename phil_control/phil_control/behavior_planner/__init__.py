"""behavior_planner: the robot's state machine behind the user-facing ROS API (``node``), the
dispatcher that carries out its decisions (``dispatcher``, ``goals``, ``hardware_link``) and
the waits they use (``waits``)."""
