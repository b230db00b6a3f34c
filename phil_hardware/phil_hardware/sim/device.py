"""What every simulated device shares: its joint, axis and faults, and the CAN device interface.

A device is a pure state machine driven by its owner (:class:`~phil_hardware.sim.robot.
SimulatedRobot` or a test): ``handle(frame, now_s)`` for every received frame (returns the
replies), ``advance(dt_s)`` to move the physics, ``poll(now_s)`` for unsolicited transmissions
that are due. It never touches a bus or a clock itself.

Coordinates: the device's axis lives in the motor (output-shaft) coordinate of the robot model,
``motor = (joint - initial_position_rad) * direction_sign``, so motor 0 is the pinned power-on
pose. What the device *reports* is relative to its own zero (origin, homing), like the real one.
"""

from __future__ import annotations

import logging
import math
import random

from phil_description.core import JointSpec
from phil_hardware.core.codecs import CanFrame, CodecError
from phil_hardware.sim.actuator import Axis, AxisLimits
from phil_hardware.sim.faults import FaultKind, FaultSet, mangle_frames

_LOG = logging.getLogger(__name__)

DEFAULT_OUT_OF_RANGE_MARGIN_RAD = 0.2


class SimDevice:
    """Base of the simulated devices (the CAN ones implement handle/advance/poll).

    Args:
        joint: The joint this device drives (limits, motor parameters).
        initial_joint_rad: Joint angle at power-on [rad]; default the motor's initial angle.
        end_stop_margin_rad: Mechanical end stops this far outside the hard limits [rad].
        seed: Seed of the garbage generator of the ``corrupt`` fault.

    Attributes:
        faults: Active injected faults (thread-safe).
        frames_rejected: Received frames addressed to this device that failed to decode.
        last_rejection: Why the last one was rejected ('' if none).
    """

    family = 'device'

    def __init__(
        self,
        joint: JointSpec,
        initial_joint_rad: float | None = None,
        end_stop_margin_rad: float = math.radians(10.0),
        seed: int = 0,
    ) -> None:
        self.joint = joint
        self.motor = joint.motor
        self.faults = FaultSet()
        self.frames_rejected = 0
        self.last_rejection = ''
        self._rng = random.Random(seed)
        start = self.motor.initial_position_rad if initial_joint_rad is None else initial_joint_rad
        stops = sorted(
            self.motor.joint_to_motor_rad(limit)
            for limit in (
                joint.lower_rad - end_stop_margin_rad,
                joint.upper_rad + end_stop_margin_rad,
            )
        )
        self.axis = Axis(
            self.motor.joint_to_motor_rad(start),
            AxisLimits(joint.velocity_limit_rad_s, stops[0], stops[1]),
        )

    @property
    def name(self) -> str:
        """Joint name (devices are named after the joint they drive)."""
        return self.joint.name

    @property
    def device_id(self) -> int:
        """Node id on the bus."""
        return self.motor.device_id

    @property
    def joint_position_rad(self) -> float:
        """True joint angle [rad] (not affected by injected faults)."""
        return self.motor.motor_to_joint_rad(self.axis.position_rad)

    @property
    def joint_velocity_rad_s(self) -> float:
        """True joint velocity [rad/s]."""
        return self.axis.velocity_rad_s * self.motor.direction_sign

    def describe(self) -> str:
        """One-line description for logs, e.g. ``'tmotor waist (node 0)'``."""
        return f'{self.family} {self.name} (node {self.device_id})'

    def handle(self, frame: CanFrame, now_s: float) -> list[CanFrame]:
        """Process one received frame; return the frames to send in reply (maybe none)."""
        raise NotImplementedError

    def advance(self, dt_s: float) -> None:
        """Advance the physics by ``dt_s`` [s]."""
        raise NotImplementedError

    def poll(self, now_s: float) -> list[CanFrame]:
        """Return the unsolicited frames due at ``now_s`` (status broadcasts)."""
        return []

    def next_due_s(self) -> float:
        """Time of the next unsolicited transmission [s]; inf when none is scheduled."""
        return math.inf

    def _reject(self, frame: CanFrame, error: CodecError | str) -> list[CanFrame]:
        self.frames_rejected += 1
        self.last_rejection = f'{self.describe()}: frame {frame.describe_id()}: {error}'
        _LOG.debug('%s', self.last_rejection)
        return []

    def _transmit(self, frames: list[CanFrame]) -> list[CanFrame]:
        return mangle_frames(frames, self.faults, self._rng)

    def _reported_motor_rad(self, zero_rad: float) -> float:
        """Motor angle to report relative to ``zero_rad``, honouring ``out_of_range``."""
        fault = self.faults.get(FaultKind.OUT_OF_RANGE)
        if fault is None:
            return self.axis.position_rad - zero_rad
        joint_rad = (
            self.joint.upper_rad + DEFAULT_OUT_OF_RANGE_MARGIN_RAD
            if fault.value is None
            else fault.value
        )
        return self.motor.joint_to_motor_rad(joint_rad) - zero_rad
