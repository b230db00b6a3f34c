"""Measured per-joint state kept by the bus controller (plain lists: cheap scalar updates)."""

from __future__ import annotations

import math
from enum import Enum

NAN = math.nan


class Lifecycle(str, Enum):
    """Lifecycle of the bus controller (mirrors the hardware node's lifecycle)."""

    UNCONFIGURED = 'unconfigured'
    CONFIGURING = 'configuring'
    INACTIVE = 'inactive'
    ACTIVATING = 'activating'
    ACTIVE = 'active'
    DEACTIVATING = 'deactivating'
    FINALIZED = 'finalized'


class Measurements:
    """Latest measured values per joint, index order; unmeasured values are NaN.

    Attributes:
        position_rad: Joint position.
        velocity_rad_s: Joint velocity (TMotor from ERPM; EPOS4/Dynamixel filtered difference).
        current_a: TMotor phase current.
        torque_mnm: EPOS4 actual motor torque.
        temperature_c: TMotor temperature.
        statusword: EPOS4 statusword (0 for other families).
        error_code: TMotor error code / Dynamixel status error byte.
        last_feedback_s: Robot time of the last feedback frame.
        feedback_count: Feedback frames per joint.
        status: Short text, e.g. 'operation enabled', 'missing', 'over-current'.
    """

    VELOCITY_FILTER_ALPHA = 0.3  # weight of a new finite-difference sample

    def __init__(self, count: int) -> None:
        """Create ``count`` joints with nothing measured."""
        self.count = count
        self.position_rad = [NAN] * count
        self.velocity_rad_s = [NAN] * count
        self.current_a = [NAN] * count
        self.torque_mnm = [NAN] * count
        self.temperature_c = [NAN] * count
        self.statusword = [0] * count
        self.error_code = [0] * count
        self.last_feedback_s = [NAN] * count
        self.feedback_count = [0] * count
        self.status = [''] * count

    def update_position(self, index: int, position_rad: float, now_s: float) -> None:
        """Store a position and derive a filtered velocity from the previous one."""
        previous = self.position_rad[index]
        previous_s = self.last_feedback_s[index]
        dt = now_s - previous_s
        if dt > 1e-4 and previous == previous:  # previous is not NaN
            sample = (position_rad - previous) / dt
            old = self.velocity_rad_s[index]
            alpha = self.VELOCITY_FILTER_ALPHA
            self.velocity_rad_s[index] = sample if old != old else old + alpha * (sample - old)
        self.position_rad[index] = position_rad
        self.last_feedback_s[index] = now_s
        self.feedback_count[index] += 1
