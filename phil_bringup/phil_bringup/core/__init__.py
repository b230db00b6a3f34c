"""ROS-free core of phil_bringup: importable and testable without rclpy."""
