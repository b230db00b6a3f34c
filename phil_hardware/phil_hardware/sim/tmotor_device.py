"""A simulated TMotor (CubeMars) AK actuator in servo mode.

Receives extended-id frames ``node | packet << 8``: SET_RPM (velocity with a first-order lag),
SET_POS and SET_POS_SPD (position, velocity/acceleration-limited), SET_ORIGIN_HERE (the current
position becomes 0), SET_CURRENT (torque), SET_CURRENT_BRAKE (hold), SET_DUTY (velocity
proportional to duty). Broadcasts its 8-byte status frame by itself at a fixed rate, by default
200 Hz with the 11-bit id = node like the upstream SIL; optionally with the extended id
``node | 0x29 << 8`` that CubeMars firmware uses.

At power-on the reported position is 0 (the pinned pose is motor 0 = the initial joint angle).
The reported current is ``(J a + b v + c sign v) / kt`` on the output side, so ordinary motion
stays far below the current limit; over-current is reached only by fault injection.
Not modelled: MIT mode frames (ignored), gravity, temperature rise, a command watchdog.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phil_description.core import JointSpec, TMotorParams
from phil_hardware.core.codecs import CanFrame, CodecError, tmotor
from phil_hardware.core.codecs.tmotor import TMotorPacket
from phil_hardware.sim.actuator import TorqueLoad
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.faults import FaultKind

STATUS_PACKET_ID = 0x29
"""Packet number in the extended status id of CubeMars firmware (``node | 0x29 << 8``)."""

OVER_CURRENT_FACTOR = 1.5
# Spreads the motors' broadcast phases evenly over the period whatever their count (the
# golden-ratio sequence: ids 0..6 fall on 0, 3.1, 1.2, 4.3, 2.4, 0.5 and 3.5 ms of 5 ms).
_PHASE_STEP = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class TMotorDeviceConfig:
    """Behaviour of every simulated TMotor.

    Attributes:
        status_period_s: Interval of the unsolicited status broadcast [s] (200 Hz).
        status_extended_id: Send the status with the extended id ``node | 0x29 << 8`` instead
            of the 11-bit id = node.
        velocity_time_constant_s: Lag of the speed loop behind SET_RPM [s].
        position_time_constant_s: Lag of the position loop behind SET_POS [s].
        inertia_kg_m2: Output-side inertia used for the current estimate and SET_CURRENT.
        torque_constant_nm_per_a: Output-side torque constant [N m/A].
        viscous_nm_s_per_rad: Viscous friction [N m s/rad].
        coulomb_nm: Coulomb friction [N m].
        temperature_c: Reported driver temperature [degC].
        end_stop_margin_rad: Mechanical end stops beyond the hard joint limits [rad].
    """

    status_period_s: float = 0.005
    status_extended_id: bool = False
    velocity_time_constant_s: float = 0.004
    position_time_constant_s: float = 0.01
    inertia_kg_m2: float = 0.05
    torque_constant_nm_per_a: float = 1.2
    viscous_nm_s_per_rad: float = 0.05
    coulomb_nm: float = 0.3
    temperature_c: float = 30.0
    end_stop_margin_rad: float = math.radians(10.0)

    def __post_init__(self) -> None:
        """Validate once.

        Raises:
            ValueError: Naming the first field that is not a positive (or >= 0) number.
        """
        for name in ('status_period_s', 'inertia_kg_m2', 'torque_constant_nm_per_a'):
            if not getattr(self, name) > 0:
                raise ValueError(f'TMotorDeviceConfig.{name} must be > 0')
        for name in (
            'velocity_time_constant_s',
            'position_time_constant_s',
            'viscous_nm_s_per_rad',
            'coulomb_nm',
            'end_stop_margin_rad',
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f'TMotorDeviceConfig.{name} must be >= 0')


class TMotorDevice(SimDevice):
    """One AK servo on a CAN bus.

    Args:
        joint: Joint with :class:`TMotorParams`.
        config: Behaviour shared by all TMotors.
        initial_joint_rad: Joint angle at power-on (default: the motor's initial angle).
        seed: Seed for the ``corrupt`` fault's garbage.

    Raises:
        TypeError: If the joint's motor is not a TMotor.
    """

    family = 'tmotor'

    def __init__(
        self,
        joint: JointSpec,
        config: TMotorDeviceConfig | None = None,
        initial_joint_rad: float | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(joint.motor, TMotorParams):
            raise TypeError(f'joint {joint.name!r} is not driven by a TMotor: {joint.motor}')
        self.config = config or TMotorDeviceConfig()
        super().__init__(joint, initial_joint_rad, self.config.end_stop_margin_rad, seed)
        self.params: TMotorParams = joint.motor
        self._load = TorqueLoad(
            self.config.inertia_kg_m2, self.config.viscous_nm_s_per_rad, self.config.coulomb_nm
        )
        # Servo mode reports relative to the power-on position until SET_ORIGIN moves the zero.
        self.origin_rad = self.axis.position_rad
        self._mode = TMotorPacket.SET_CURRENT_BRAKE  # powered up holding, no command yet
        self._velocity_target_rad_s = 0.0
        self._position_target_rad = self.axis.position_rad
        self._position_speed_rad_s: float | None = None
        self._position_accel_rad_s2: float | None = None
        self._current_command_a = 0.0
        self._next_status_s: float | None = None
        # Real motors power up at different instants, so each broadcasts on a rhythm of its
        # own, not all in the same millisecond.
        self._status_phase_s = self.config.status_period_s * ((self.device_id * _PHASE_STEP) % 1.0)
        self.commands_received = 0

    @property
    def mode(self) -> TMotorPacket:
        """Kind of the last accepted command (SET_CURRENT_BRAKE = holding)."""
        return self._mode

    def _erpm_per_rad_s(self) -> float:
        return self.params.pole_pairs * self.params.gear_ratio * 60.0 / (2.0 * math.pi)

    def handle(self, frame: CanFrame, now_s: float) -> list[CanFrame]:
        """Accept a servo-mode command addressed to this node; never replies directly."""
        if not frame.is_extended_id or frame.arbitration_id & 0xFF != self.device_id:
            return []
        if (frame.arbitration_id >> 8) & 0xFF == STATUS_PACKET_ID:
            return []  # an extended status frame (our own echo on a multicast bus)
        try:
            command = tmotor.decode_servo_command(frame)
        except CodecError as error:
            return self._reject(frame, error)
        self.commands_received += 1
        packet = command.packet
        if packet is TMotorPacket.SET_RPM:
            self._mode = packet
            self._velocity_target_rad_s = command.erpm / self._erpm_per_rad_s()
        elif packet in (TMotorPacket.SET_POS, TMotorPacket.SET_POS_SPD):
            self._mode = packet
            self._position_target_rad = command.position_rad + self.origin_rad
            self._position_speed_rad_s = None
            self._position_accel_rad_s2 = None
            if packet is TMotorPacket.SET_POS_SPD:
                # Zero speed or acceleration means "no limit of its own" here.
                self._position_speed_rad_s = abs(command.speed_erpm) / self._erpm_per_rad_s()
                self._position_accel_rad_s2 = abs(command.accel_erpm_s) / self._erpm_per_rad_s()
        elif packet is TMotorPacket.SET_ORIGIN_HERE:
            # Temporary and permanent origins behave the same until a power cycle.
            self.origin_rad = self.axis.position_rad
            self._position_target_rad = self.axis.position_rad
        elif packet is TMotorPacket.SET_CURRENT:
            self._mode = packet
            self._current_command_a = command.current_a
        elif packet is TMotorPacket.SET_CURRENT_BRAKE:
            self._mode = packet
        elif packet is TMotorPacket.SET_DUTY:
            self._mode = packet
            self._velocity_target_rad_s = command.duty * self.joint.velocity_limit_rad_s
        return []

    def advance(self, dt_s: float) -> None:
        """Follow the active command for ``dt_s`` [s]."""
        if dt_s <= 0:
            return
        config = self.config
        if self._mode in (TMotorPacket.SET_RPM, TMotorPacket.SET_DUTY):
            self.axis.follow_velocity(
                self._velocity_target_rad_s, config.velocity_time_constant_s, dt_s
            )
        elif self._mode in (TMotorPacket.SET_POS, TMotorPacket.SET_POS_SPD):
            self.axis.follow_position(
                self._position_target_rad,
                config.position_time_constant_s,
                dt_s,
                self._position_speed_rad_s,
                self._position_accel_rad_s2,
            )
        elif self._mode is TMotorPacket.SET_CURRENT:
            torque = self._current_command_a * config.torque_constant_nm_per_a
            self.axis.apply_torque(torque, self._load, dt_s)
        else:
            self.axis.hold(dt_s)

    def current_a(self) -> float:
        """Current the motor would draw for the present motion [A] (motor coordinate, signed)."""
        if self._mode is TMotorPacket.SET_CURRENT:
            return self._current_command_a
        velocity = self.axis.velocity_rad_s
        torque = (
            self._load.inertia_kg_m2 * self.axis.acceleration_rad_s2
            + self._load.viscous_nm_s_per_rad * velocity
            + (math.copysign(self._load.coulomb_nm, velocity) if velocity else 0.0)
        )
        return torque / self.config.torque_constant_nm_per_a

    def status_frame(self) -> CanFrame:
        """The status frame as it would be sent now (faults on values applied, not on framing)."""
        current = self.current_a()
        over_current = self.faults.get(FaultKind.OVER_CURRENT)
        if over_current is not None:
            current = (
                OVER_CURRENT_FACTOR * self.params.current_limit_a
                if over_current.value is None
                else over_current.value
            )
        frame = tmotor.encode_feedback(
            self.device_id,
            self._reported_motor_rad(self.origin_rad),
            speed_erpm=self.axis.velocity_rad_s * self._erpm_per_rad_s(),
            current_a=current,
            temperature_c=self.config.temperature_c,
            error_code=0,
        )
        if self.config.status_extended_id:
            status_id = self.device_id | (STATUS_PACKET_ID << 8)
            return CanFrame(status_id, frame.data, is_extended_id=True)
        return frame

    def next_due_s(self) -> float:
        """Time the next status broadcast is due [s] (-inf before the first poll)."""
        return -math.inf if self._next_status_s is None else self._next_status_s

    def poll(self, now_s: float) -> list[CanFrame]:
        """Return the status broadcast when it is due (at most one per call)."""
        period = self.config.status_period_s
        if self._next_status_s is None:
            self._next_status_s = now_s + self._status_phase_s
        if now_s < self._next_status_s:
            return []
        self._next_status_s += period
        if self._next_status_s <= now_s:
            # Far behind (loop stalled): skip the missed broadcasts instead of bursting.
            missed = math.floor((now_s - self._next_status_s) / period) + 1
            self._next_status_s += missed * period
        return self._transmit([self.status_frame()])
