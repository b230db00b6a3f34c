"""Typed hardware parameters from the URDF <ros2_control> block, validated once.

Each actuated joint carries its motor family, bus, device id, conversion (gear, direction
sign, initial angle) and gains as <param>s; the hardware block carries the bus settings.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

from phil_description.core.errors import DescriptionError
from phil_description.core.urdf import Ros2ControlBlock, Ros2ControlJoint


class MotorFamily(str, enum.Enum):
    """Actuator families of Phil."""

    TMOTOR = 'tmotor'  # CubeMars/TMotor AK, CAN servo mode
    EPOS4 = 'epos4'  # Maxon motor on an EPOS4 drive, CANopen CiA 402
    DYNAMIXEL = 'dynamixel'  # ROBOTIS Dynamixel X series, Protocol 2.0 serial


class CanopenFrameForm(str, enum.Enum):
    """How an EPOS4's frames are laid out where CiA 301 and upstream's controller differ.

    ``cia301``: SDO downloads state their size (0x2F/0x2B/0x23 for 1/2/4 bytes); NMT and
    the controlword RPDO carry their 2 bytes. The EPOS4's CAN interface follows CiA 301 V4.2
    (EPOS4 Communication Guide, section 3.1), and its SDO abort codes include the length
    checks only a sized request allows (0x0607 0010 / 0x0607 0013, Table 6-20).
    ``upstream``: upstream's frames, SDO downloads without a size (0x22: the drive takes the
    object's size), NMT and controlword zero-padded to DLC 8.
    """

    CIA301 = 'cia301'
    UPSTREAM = 'upstream'

    @property
    def sdo_size_indicated(self) -> bool:
        return self is CanopenFrameForm.CIA301

    @property
    def pad_to_dlc8(self) -> bool:
        return self is CanopenFrameForm.UPSTREAM


@dataclass(frozen=True)
class MotorParams:
    """What every actuator has. Conversion: motor = (joint - initial_position_rad) * sign."""

    joint: str
    family: MotorFamily
    model: str
    bus: str
    device_id: int
    direction_sign: int
    initial_position_rad: float

    def joint_to_motor_rad(self, joint_rad: float) -> float:
        """Joint angle -> angle the actuator sees (output shaft, after sign and offset)."""
        return (joint_rad - self.initial_position_rad) * self.direction_sign

    def motor_to_joint_rad(self, motor_rad: float) -> float:
        """Actuator angle -> joint angle."""
        return motor_rad * self.direction_sign + self.initial_position_rad


@dataclass(frozen=True)
class TMotorParams(MotorParams):
    """TMotor AK servo mode: ERPM = feed-forward + control_gain * position error."""

    gear_ratio: float
    pole_pairs: int
    control_gain_erpm_per_rad: float
    current_limit_a: float


@dataclass(frozen=True)
class Epos4Params(MotorParams):
    """Maxon motor on an EPOS4: CSP, or CST with kp/kd plus gravity compensation."""

    gear_ratio: float
    encoder_counts_per_rev: int
    kp_mnm_per_rad: float
    kd_mnm_s_per_rad: float
    rated_torque_mnm: float
    max_torque_mnm: float
    gravity_mass_kg: float
    gravity_lever_m: float
    frame_form: CanopenFrameForm = CanopenFrameForm.CIA301

    @property
    def counts_per_output_rev(self) -> int:
        return round(self.encoder_counts_per_rev * self.gear_ratio)


@dataclass(frozen=True)
class DynamixelParams(MotorParams):
    """Dynamixel servo; ``device_id`` is the Dynamixel id."""


@dataclass(frozen=True)
class CanBusParams:
    """One CAN bus: the python-can interface and channel, the bitrate, and the interface
    settings ``phil bringup-can`` gives it (defaults: the kernel's for a new CAN interface)."""

    name: str
    interface: str
    channel: str
    bitrate: int
    restart_ms: int = 0  # automatic restart this long after bus-off (0: never)
    txqueuelen: int = 10  # transmit queue, frames


@dataclass(frozen=True)
class SerialBusParams:
    """One Dynamixel serial bus. The start profile (raw Profile Acceleration / Velocity) is
    written into every servo before its torque goes on, as upstream did (2000 / 1000); 0 / 0
    is no profile."""

    name: str
    port: str
    baudrate: int
    protocol_version: float
    latency_timer_ms: int
    start_profile_acceleration: int = 0
    start_profile_velocity: int = 0


@dataclass(frozen=True)
class HardwareConfig:
    """Everything the hardware layer needs, in the <ros2_control> joint order."""

    plugin: str
    can_buses: dict[str, CanBusParams]
    serial_buses: dict[str, SerialBusParams]
    motors: dict[str, MotorParams]

    def motors_on_bus(self, bus: str) -> list[MotorParams]:
        return [motor for motor in self.motors.values() if motor.bus == bus]


class _ParamReader:
    """Typed access to one element's string parameters, with errors naming file and item."""

    def __init__(self, params: dict[str, str], source: str, item: str) -> None:
        self._params = params
        self._source = source
        self._item = item

    def error(self, problem: str) -> DescriptionError:
        return DescriptionError(self._source, self._item, problem)

    def text(self, key: str) -> str:
        value = self._params.get(key)
        if value is None or value == '':
            raise self.error(f'parameter {key!r} is missing')
        return value

    def number(
        self,
        key: str,
        check: Callable[[float], bool] = math.isfinite,
        requirement: str = 'a finite number',
    ) -> float:
        text = self.text(key)
        try:
            value = float(text)
        except ValueError:
            raise self.error(f'parameter {key!r} = {text!r} is not a number') from None
        if not math.isfinite(value) or not check(value):
            raise self.error(f'parameter {key!r} = {text!r} must be {requirement}')
        return value

    def positive(self, key: str) -> float:
        return self.number(key, lambda v: v > 0, 'positive')

    def non_negative(self, key: str) -> float:
        return self.number(key, lambda v: v >= 0, 'zero or positive')

    def integer(self, key: str, lowest: int, highest: int) -> int:
        value = self.number(
            key,
            lambda v: v == int(v) and lowest <= v <= highest,
            f'an integer in {lowest}..{highest}',
        )
        return int(value)

    def choice(self, key: str, choices: type[enum.Enum]) -> enum.Enum:
        text = self.text(key)
        try:
            return choices(text)
        except ValueError:
            valid = ', '.join(choice.value for choice in choices)
            raise self.error(f'parameter {key!r} = {text!r} must be one of: {valid}') from None


def _motor_params(joint: Ros2ControlJoint, source: str) -> MotorParams:
    reader = _ParamReader(joint.params, source, f'ros2_control joint {joint.name!r}')
    family = reader.choice('family', MotorFamily)
    common = {
        'joint': joint.name,
        'family': family,
        'model': reader.text('model'),
        'bus': reader.text('bus'),
        'direction_sign': int(reader.number('direction_sign', lambda v: abs(v) == 1, '+1 or -1')),
        'initial_position_rad': reader.number('initial_position_rad'),
    }
    if family is MotorFamily.TMOTOR:
        return TMotorParams(
            **common,
            device_id=reader.integer('node_id', 0, 0xFF),
            gear_ratio=reader.positive('gear_ratio'),
            pole_pairs=reader.integer('pole_pairs', 1, 100),
            control_gain_erpm_per_rad=reader.non_negative('control_gain_erpm_per_rad'),
            current_limit_a=reader.positive('current_limit_a'),
        )
    if family is MotorFamily.EPOS4:
        return Epos4Params(
            **common,
            device_id=reader.integer('node_id', 1, 127),
            gear_ratio=reader.positive('gear_ratio'),
            encoder_counts_per_rev=reader.integer('encoder_counts_per_rev', 1, 1 << 24),
            kp_mnm_per_rad=reader.non_negative('kp_mnm_per_rad'),
            kd_mnm_s_per_rad=reader.non_negative('kd_mnm_s_per_rad'),
            rated_torque_mnm=reader.positive('rated_torque_mnm'),
            max_torque_mnm=reader.positive('max_torque_mnm'),
            gravity_mass_kg=reader.non_negative('gravity_mass_kg'),
            gravity_lever_m=reader.non_negative('gravity_lever_m'),
            frame_form=reader.choice('frame_form', CanopenFrameForm),
        )
    return DynamixelParams(**common, device_id=reader.integer('dxl_id', 0, 252))


def parse_hardware(block: Ros2ControlBlock, source: str) -> HardwareConfig:
    """Validate the <ros2_control> block into a HardwareConfig.

    Raises:
        DescriptionError: a missing or malformed parameter, an unknown family, a joint on an
            undeclared bus, or two devices sharing one id on one bus.
    """
    reader = _ParamReader(block.params, source, f'ros2_control {block.name!r} <hardware>')
    can_buses = {}
    for name in reader.text('can_buses').split():
        can_buses[name] = CanBusParams(
            name=name,
            interface=reader.text(f'{name}.interface'),
            channel=reader.text(f'{name}.channel'),
            bitrate=reader.integer(f'{name}.bitrate', 10_000, 8_000_000),
            restart_ms=reader.integer(f'{name}.restart_ms', 0, 60_000),
            txqueuelen=reader.integer(f'{name}.txqueuelen', 1, 1_000_000),
        )
    serial_buses = {}
    for name in reader.text('serial_buses').split():
        serial_buses[name] = SerialBusParams(
            name=name,
            port=reader.text(f'{name}.port'),
            baudrate=reader.integer(f'{name}.baudrate', 9600, 10_500_000),
            protocol_version=reader.number(f'{name}.protocol_version', lambda v: v == 2.0, '2.0'),
            latency_timer_ms=reader.integer(f'{name}.latency_timer_ms', 0, 255),
            start_profile_acceleration=reader.integer(
                f'{name}.start_profile_acceleration', 0, 32767
            ),
            start_profile_velocity=reader.integer(f'{name}.start_profile_velocity', 0, 32767),
        )
    motors: dict[str, MotorParams] = {}
    seen_ids: dict[tuple[str, int], str] = {}
    for joint in block.joints:
        motor = _motor_params(joint, source)
        item = f'ros2_control joint {joint.name!r}'
        family_buses = serial_buses if motor.family is MotorFamily.DYNAMIXEL else can_buses
        if motor.bus not in family_buses:
            declared = ', '.join(sorted(family_buses))
            raise DescriptionError(
                source,
                item,
                f'bus {motor.bus!r} is not a declared {motor.family.value} bus ({declared})',
            )
        key = (motor.bus, motor.device_id)
        if key in seen_ids:
            raise DescriptionError(
                source,
                item,
                f'device id {motor.device_id} on {motor.bus} is already used by {seen_ids[key]!r}',
            )
        seen_ids[key] = joint.name
        motors[joint.name] = motor
    return HardwareConfig(
        plugin=block.plugin, can_buses=can_buses, serial_buses=serial_buses, motors=motors
    )
