"""Trajectory types shared by the control and hardware packages (ROS-free).

The values mirror ``phil_msgs/TrajectoryChunk``, so a conversion is a plain copy.
"""

from __future__ import annotations

from enum import IntEnum


class ControlMode(IntEnum):
    """Per-joint control mode of a chunk (the values of phil_msgs/TrajectoryChunk MODE_*)."""

    POSITION = 0  # TMotor velocity law, EPOS4 CSP, Dynamixel goal position
    TORQUE = 1  # EPOS4 CST: kp/kd tracking plus gravity compensation
