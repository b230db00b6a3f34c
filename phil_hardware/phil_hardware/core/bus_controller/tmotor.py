"""Controller-side TMotor AK driver: discovery match, origin, velocity-law frames, feedback.

:class:`TMotorGroup` is pure (it builds frames and interprets received ones);
:class:`TMotorFamily` runs it on the controller's buses: status decoding, SET_ORIGIN at
configure, SET_RPM from the velocity law every ``slow_divider`` ticks, SET_RPM 0 at release.
TMotors broadcast their status unasked, so discovery and the inactive state need no requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from phil_hardware.core.codecs import tmotor
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.codecs.tmotor import ERROR_CODE_TEXT, TMotorFeedback, TMotorPacket
from phil_hardware.core.safety import SendCheck

from .base import BusAccess, ControllerError, FeedbackRoutes, MotorFamily
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
    """True when ``frame`` may be node ``node_id``'s status broadcast.

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
        """SET_RPM with the upstream velocity law (feed-forward ERPM + gain * position error).

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


class TMotorFamily(MotorFamily):
    """The TMotors on the controller's CAN buses (see module doc)."""

    def __init__(self, ctl: BusAccess, group: TMotorGroup) -> None:
        """Drive ``group`` through ``ctl``."""
        self.ctl = ctl
        self.group = group
        self._by_phase: dict[int, list[TMotorJoint]] = {}

    def bind_feedback(self, routes: FeedbackRoutes) -> None:
        """The status broadcast, standard (the SIL's form) and extended id."""
        for motor in self.group.motors:
            handler = partial(self._on_status, motor)
            routes.route_can(motor.bus, motor.node_id, handler, extended=False)
            routes.route_can(motor.bus, motor.node_id, handler, extended=True)

    def _present(self) -> list[TMotorJoint]:
        return [m for m in self.group.motors if self.ctl.present[m.index]]

    def configure(self, zero_origins: bool) -> None:
        """Fix the tick of each bus's SET_RPM; with ``zero_origins`` set the origins."""
        phases = self.ctl.config.cycle.tmotor_phases
        buses = sorted({m.bus for m in self.group.motors})
        self._by_phase = {}
        for motor in self._present():
            phase = phases[min(buses.index(motor.bus), len(phases) - 1)]
            self._by_phase.setdefault(phase, []).append(motor)
        if zero_origins:
            self._zero_origins()

    def _zero_origins(self) -> None:
        """SET_ORIGIN (temporary) on every TMotor: the pinned power-on pose becomes the joints'
        initial angles. Done at the hardware node's first configure only, not at every
        activation or configure: those after ESTOP, a fault or a restarted bus loop happen
        wherever the arms are, and a zero set there would be wrong (the motors keep the origin
        until they are powered off)."""
        ctl = self.ctl
        timing = ctl.config.timing
        last_feedback_s = ctl.measured.last_feedback_s
        motors = self._present()
        for motor in motors:
            ctl.send(motor.bus, tmotor.encode_set_origin(motor.node_id))
            ctl.forget_position(motor.index)  # the zero moves: the next report jumps legitimately
            if timing.origin_spacing_s:
                ctl.wait(timing.origin_spacing_s)
        ctl.wait(timing.origin_settle_s)
        mark = ctl.clock.now()
        if not ctl.wait(
            timing.feedback_wait_s, lambda: all(last_feedback_s[m.index] > mark for m in motors)
        ):
            silent = [
                ctl.describe_motor(m.index) for m in motors if not last_feedback_s[m.index] > mark
            ]
            raise ControllerError(f'no feedback after SET_ORIGIN from {", ".join(silent)}')

    def tick(self, phase: int, now: float, targets, velocities, modes) -> None:
        """SET_RPM from the velocity law for the motors whose bus sends on ``phase``."""
        motors = self._by_phase.get(phase)
        if not motors:
            return
        ctl = self.ctl
        safety = ctl.safety
        holding = ctl.holding
        measured = ctl.measured.position_rad
        for motor in motors:
            i = motor.index
            measured_rad: float | None = measured[i]
            if measured_rad != measured_rad:
                ctl.counters.tmotor_frames_skipped_no_feedback += 1
                continue
            target = targets[i]
            check = safety.check_send(i, target, now)
            if check == SendCheck.FEEDFORWARD_ONLY:
                measured_rad = None
            elif check != SendCheck.OK:
                # Skipping leaves the motor on its last speed command; while holding after a
                # fault that must be a standstill, not whatever was last sent.
                if holding:
                    ctl.send(motor.bus, TMotorGroup.stop_frame(motor))
                continue
            velocity = 0.0 if holding else float(velocities[i])
            ctl.send(motor.bus, TMotorGroup.velocity_frame(motor, target, velocity, measured_rad))

    def release(self) -> None:
        """SET_RPM 0 to every present motor on an open bus."""
        ctl = self.ctl
        for motor in self._present():
            if motor.bus in ctl.transports.can:
                ctl.send(motor.bus, TMotorGroup.stop_frame(motor))

    def _on_status(self, motor: TMotorJoint, frame: CanFrame, now: float) -> None:
        ctl = self.ctl
        if not is_status_frame(frame, motor.node_id):
            ctl.counters.frames_rejected += 1
            return
        feedback, position, velocity = TMotorGroup.decode(motor, frame)
        if feedback.error_code not in ERROR_CODE_TEXT:  # no such code: a garbled frame
            ctl.counters.frames_rejected += 1
            return
        i = motor.index
        m = ctl.measured
        if not ctl.plausible(i, position, now):
            return
        previous_error = m.error_code[i]
        m.position_rad[i] = position
        m.velocity_rad_s[i] = velocity
        m.current_a[i] = feedback.current_a
        m.temperature_c[i] = feedback.temperature_c
        m.error_code[i] = feedback.error_code
        m.last_feedback_s[i] = now
        m.feedback_count[i] += 1
        m.status[i] = feedback.error_text if feedback.error_code else 'ok'
        if ctl.supervising:
            safety = ctl.safety
            check = ctl.check_fault
            check(safety.on_position(i, position, now))
            check(safety.on_current(i, feedback.current_a, now))
            # A real motor error persists: two frames in a row with the same code latch it.
            code = feedback.error_code
            if not code:
                check(safety.on_motor_error(i, '', now))
            elif code == previous_error:
                check(safety.on_motor_error(i, f'motor error {code}: {feedback.error_text}', now))


__all__ = ['TMotorFamily', 'TMotorGroup', 'TMotorJoint', 'is_status_frame']
