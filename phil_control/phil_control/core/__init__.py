"""ROS-free core of phil_control: importable and testable without rclpy."""
