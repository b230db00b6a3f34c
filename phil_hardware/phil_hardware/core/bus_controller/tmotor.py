"""Controller-side TMotor AK driver: discovery match, origin, velocity-law frames, feedback.

Pure: it builds frames and interprets received ones; the bus controller sends them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phil_hardware.core.codecs import tmotor
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.codecs.tmotor import TMotorFeedback, TMotorPacket

from .config import JointConfig, TMotorParams

# Extended ids whose packet byte is a servo command are commands, never a motor's status.
SERVO_COMMAND_PACKETS = frozenset(int(packet) for packet in TMotorPacket)


@dataclass(frozen=True)
class TMotorJoint:
    """One TMotor with everything precomputed for the cyclic path."""

    joint: str
    index: int
    bus: str
    node_id: int
    params: TMotorParams


def is_status_frame(frame: CanFrame, node_id: int) -> bool:
    """True when ``frame`` may be node ``node_id``'s status broadcast (FACTS section 2).

    Accepted: 8 data bytes and either the standard id equal to the node (the SIL's form) or an
    extended id with the node in the low byte and a packet byte that is not a servo command.
    """
    if len(frame.data) != tmotor.FEEDBACK_LENGTH or frame.arbitration_id & 0xFF != node_id:
        return False
    if frame.is_extended_id:
        return (frame.arbitration_id >> 8) & 0xFF not in SERVO_COMMAND_PACKETS
    return frame.arbitration_id == node_id


class TMotorGroup:
    """All TMotors of the robot."""

    def __init__(self, joints: Sequence[JointConfig]) -> None:
        """Collect the TMotor joints (others are ignored)."""
        self.motors = [
            TMotorJoint(j.name, j.index, j.motor.bus, j.motor.device_id, j.motor)
            for j in joints
            if isinstance(j.motor, TMotorParams)
        ]

    def origin_frames(self) -> list[tuple[TMotorJoint, CanFrame]]:
        """SET_ORIGIN (temporary) per motor: the pinned pose becomes motor angle 0."""
        return [(m, tmotor.encode_set_origin(m.node_id)) for m in self.motors]

    @staticmethod
    def velocity_frame(
        motor: TMotorJoint,
        target_rad: float,
        target_velocity_rad_s: float,
        measured_rad: float | None,
    ) -> CanFrame:
        """SET_RPM with the upstream velocity law (FACTS section 2).

        Args:
            motor: The motor.
            target_rad: Joint target [rad].
            target_velocity_rad_s: Joint target velocity (feed-forward) [rad/s].
            measured_rad: Last measured joint position [rad]; None drops the position term
                (the measurement is stale), leaving the feed-forward velocity.
        """
        params = motor.params
        target_motor_rad = params.joint_to_motor_rad(target_rad)
        erpm = tmotor.velocity_law_erpm(
            target_motor_rad,
            target_velocity_rad_s,
            target_motor_rad if measured_rad is None else params.joint_to_motor_rad(measured_rad),
            params.direction_sign,
            params.gear_ratio,
            params.pole_pairs,
            params.control_gain_erpm_per_rad,
        )
        return tmotor.encode_set_rpm(motor.node_id, erpm)

    @staticmethod
    def stop_frame(motor: TMotorJoint) -> CanFrame:
        """SET_RPM 0: the last command a motor gets when it must stand still."""
        return tmotor.encode_set_rpm(motor.node_id, 0)

    @staticmethod
    def decode(motor: TMotorJoint, frame: CanFrame) -> tuple[TMotorFeedback, float, float]:
        """Decode a status frame into (feedback, joint position [rad], joint velocity [rad/s]).

        Raises:
            CodecError: The frame is not a valid status frame.
        """
        feedback = tmotor.decode_feedback(frame)
        params = motor.params
        position = params.motor_to_joint_rad(feedback.position_rad)
        velocity = tmotor.erpm_to_joint_velocity_rad_s(
            feedback.speed_erpm, params.direction_sign, params.gear_ratio, params.pole_pairs
        )
        return feedback, position, velocity
