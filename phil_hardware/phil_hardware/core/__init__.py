"""ROS-free core of phil_hardware: importable and testable without rclpy."""
