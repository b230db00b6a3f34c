"""trajectory_generator: motion goals -> time-stamped chunks for the hardware."""
