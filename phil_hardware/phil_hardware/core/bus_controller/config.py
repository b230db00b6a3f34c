"""Typed configuration of the bus controller, built once from the robot model and validated.

Everything here is plain frozen data (picklable), so the bus-loop process receives it whole and
never expands the URDF itself.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from phil_description.core import (
    CanBusParams,
    CanopenFrameForm,
    DynamixelParams,
    Epos4Params,
    MotorParams,
    RobotModel,
    SerialBusParams,
    TMotorParams,
)
from phil_hardware.core.safety import JointSafety, SafetyConfig


@dataclass(frozen=True)
class JointConfig:
    """One joint as the controller needs it.

    Attributes:
        name: Joint name.
        index: Joint index (robot order).
        lower_rad / upper_rad: URDF hard limits [rad].
        motor: Motor parameters (family-specific dataclass from the robot model).
        velocity_limit_rad_s: URDF velocity limit [rad/s] (feedback plausibility).
    """

    name: str
    index: int
    lower_rad: float
    upper_rad: float
    motor: MotorParams
    velocity_limit_rad_s: float = 30.0


@dataclass(frozen=True)
class SequenceTiming:
    """Waits and timeouts of the start-up and shut-down sequences [s].

    Upstream waited 100 ms between TMotor origins and 2 s after them; the origin is applied
    at once by the drive, so shorter values are the default here and the upstream ones remain
    available.
    """

    discovery_listen_s: float = 0.2
    sdo_timeout_s: float = 0.5
    origin_spacing_s: float = 0.005
    origin_settle_s: float = 0.2
    feedback_wait_s: float = 0.5
    dxl_reply_timeout_s: float = 0.1
    dxl_retries: int = 5
    enable_timeout_s: float = 0.5

    def __post_init__(self) -> None:
        """Refuse negative or non-finite durations."""
        for name, value in vars(self).items():
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'sequence timing {name} must be >= 0, got {value!r}')


@dataclass(frozen=True)
class CycleConfig:
    """Cyclic cadence (upstream's: Maxon every 1 ms, TMotor and Dynamixel every 5 ms).

    Attributes:
        tick_s: Bus-loop period (Maxon targets + SYNC every tick) [s].
        slow_divider: TMotor and Dynamixel every ``slow_divider`` ticks (5 -> 5 ms).
        tmotor_phases: Tick (mod divider) on which each CAN bus carrying TMotors sends, in bus
            name order (a bus beyond the tuple takes its last entry). One bus per tick: all
            seven TMotor frames in one tick made it the longest by ~0.2 ms.
        dxl_phase: Tick (mod divider) carrying the Dynamixel write and read request.
        inactive_poll_ticks: While configured but not active, SYNC and a Dynamixel read every
            this many ticks so the measured state stays readable.
        send_error_limit: Consecutive failed sends on one bus that latch BUS_ERROR.
    """

    tick_s: float = 0.001
    slow_divider: int = 5
    tmotor_phases: tuple[int, ...] = (0, 3)
    dxl_phase: int = 2
    inactive_poll_ticks: int = 10
    send_error_limit: int = 50

    def __post_init__(self) -> None:
        """Validate the cadence."""
        if not (math.isfinite(self.tick_s) and 0.0001 <= self.tick_s <= 0.1):
            raise ValueError(f'tick_s must be in [0.0001, 0.1] s, got {self.tick_s!r}')
        if self.slow_divider < 1:
            raise ValueError('slow_divider must be >= 1')
        if not self.tmotor_phases:
            raise ValueError('tmotor_phases needs at least one phase')
        for phase in (*self.tmotor_phases, self.dxl_phase):
            if not 0 <= phase < self.slow_divider:
                raise ValueError(
                    f'tmotor_phases and dxl_phase must be in '
                    f'0..{self.slow_divider - 1}, got {phase}'
                )
        object.__setattr__(self, 'tmotor_phases', tuple(int(p) for p in self.tmotor_phases))
        if self.inactive_poll_ticks < 1 or self.send_error_limit < 1:
            raise ValueError('inactive_poll_ticks and send_error_limit must be >= 1')


@dataclass(frozen=True)
class ControllerConfig:
    """Everything the bus controller needs.

    Attributes:
        joints: All robot joints in index order.
        can_buses / serial_buses: Bus parameters by name.
        safety: Safety thresholds.
        timing: Sequence waits and timeouts.
        cycle: Cyclic cadence.
        allow_missing: Joints that may be absent at discovery (excluded instead of an error).
        gravity_joints: Wrist joint -> (shoulder_2, elbow, wrist) names whose measured angles
            enter the CST gravity term.
        write_epos4_pdo_layout: Give every EPOS4 Phil's PDO layout at configure and read it
            back (``codecs/epos4_pdo_layout.py``). False trusts the drives to hold it, as
            upstream did: only for showing what a drive with another layout does.
    """

    joints: tuple[JointConfig, ...]
    can_buses: dict[str, CanBusParams]
    serial_buses: dict[str, SerialBusParams]
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    timing: SequenceTiming = field(default_factory=SequenceTiming)
    cycle: CycleConfig = field(default_factory=CycleConfig)
    allow_missing: frozenset[str] = frozenset()
    gravity_joints: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    write_epos4_pdo_layout: bool = True

    def __post_init__(self) -> None:
        """Cross-check joints, buses and the allow-missing subset."""
        names = [joint.name for joint in self.joints]
        unknown = sorted(set(self.allow_missing) - set(names))
        if unknown:
            raise ValueError(f'allow_missing names unknown joint(s): {", ".join(unknown)}')
        for joint in self.joints:
            buses = (
                self.serial_buses if isinstance(joint.motor, DynamixelParams) else self.can_buses
            )
            if joint.motor.bus not in buses:
                raise ValueError(f'joint {joint.name!r}: bus {joint.motor.bus!r} is not declared')
        for wrist, chain in self.gravity_joints.items():
            missing = [n for n in (wrist, *chain) if n not in names]
            if missing:
                raise ValueError(f'gravity chain of {wrist!r} names unknown joint(s) {missing}')

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joint names in index order."""
        return tuple(joint.name for joint in self.joints)

    def joints_of(self, family: type) -> list[JointConfig]:
        """Joints whose motor parameters are of ``family`` (e.g. TMotorParams)."""
        return [joint for joint in self.joints if isinstance(joint.motor, family)]

    def joint_safety(self) -> list[JointSafety]:
        """Per-joint safety description in index order."""
        result = []
        for joint in self.joints:
            motor = joint.motor
            serial = isinstance(motor, DynamixelParams)
            result.append(
                JointSafety(
                    name=joint.name,
                    lower_rad=joint.lower_rad,
                    upper_rad=joint.upper_rad,
                    feedback_timeout_s=(
                        self.safety.serial_feedback_timeout_s
                        if serial
                        else self.safety.can_feedback_timeout_s
                    ),
                    current_limit_a=(
                        motor.current_limit_a if isinstance(motor, TMotorParams) else math.inf
                    ),
                    pre_send_checks=isinstance(motor, TMotorParams),
                )
            )
        return result

    @property
    def torque_joints(self) -> frozenset[str]:
        """Joints that accept torque mode (EPOS4 CST)."""
        return frozenset(j.name for j in self.joints_of(Epos4Params))


def default_gravity_joints(names: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """Wrist -> arm chain by the naming convention ``<side>_shoulder_2/_elbow/_wrist``."""
    names = set(names)
    chains = {}
    for side in ('right', 'left'):
        chain = (f'{side}_shoulder_2', f'{side}_elbow', f'{side}_wrist')
        if all(name in names for name in chain):
            chains[chain[2]] = chain
    return chains


def motor_kind(motor: MotorParams) -> str:
    """E.g. "EPOS4 node 7", "TMotor node 0", "Dynamixel id 1"."""
    if isinstance(motor, TMotorParams):
        return f'TMotor node {motor.device_id}'
    if isinstance(motor, Epos4Params):
        return f'EPOS4 node {motor.device_id}'
    return f'Dynamixel id {motor.device_id}'


def controller_config_from_model(
    model: RobotModel,
    *,
    safety: SafetyConfig | None = None,
    timing: SequenceTiming | None = None,
    cycle: CycleConfig | None = None,
    allow_missing: Iterable[str] = (),
    can_buses: dict[str, CanBusParams] | None = None,
    serial_buses: dict[str, SerialBusParams] | None = None,
) -> ControllerConfig:
    """Build the controller configuration from the robot model.

    Args:
        model: The loaded robot model (URDF ``<ros2_control>`` parameters).
        safety / timing / cycle: Overrides of the defaults.
        allow_missing: Joints allowed to be absent at discovery.
        can_buses / serial_buses: Replace the model's bus parameters (e.g. per-test groups).
    """
    joints = tuple(
        JointConfig(
            spec.name,
            spec.index,
            spec.lower_rad,
            spec.upper_rad,
            spec.motor,
            spec.velocity_limit_rad_s,
        )
        for spec in model.joints
    )
    return ControllerConfig(
        joints=joints,
        can_buses=dict(can_buses if can_buses is not None else model.hardware.can_buses),
        serial_buses=dict(
            serial_buses if serial_buses is not None else model.hardware.serial_buses
        ),
        safety=safety or SafetyConfig(),
        timing=timing or SequenceTiming(),
        cycle=cycle or CycleConfig(),
        allow_missing=frozenset(allow_missing),
        gravity_joints=default_gravity_joints(model.joint_names),
    )


def relocate_buses(
    can_buses: dict[str, CanBusParams],
    serial_buses: dict[str, SerialBusParams],
    *,
    can_channel_base: str = '',
    serial_port: str = '',
) -> tuple[dict[str, CanBusParams], dict[str, SerialBusParams]]:
    """The buses moved to other channels, so several simulated robots can share a machine.

    Args:
        can_buses / serial_buses: The model's buses (``model.hardware.*``).
        can_channel_base: IPv6 multicast group of the first CAN bus; the others follow (+1,
            +2, ...) in the given order, exactly as the simulator runner's
            ``--can-channel-base``. Only for ``udp_multicast`` buses. '' keeps the channels.
        serial_port: Device path of the (single) Dynamixel bus, e.g. the simulator's
            ``--dxl-port`` link. '' keeps the port.

    Returns:
        New ``(can_buses, serial_buses)`` dicts.

    Raises:
        ValueError: A base that is not an IPv6 address, a CAN bus that is not udp_multicast,
            or a port for several serial buses.
    """
    can_buses, serial_buses = dict(can_buses), dict(serial_buses)
    if can_channel_base:
        try:
            first = ipaddress.IPv6Address(can_channel_base)
        except ValueError:
            raise ValueError(
                f'CAN channel base {can_channel_base!r} is not an IPv6 address'
            ) from None
        for index, (name, params) in enumerate(can_buses.items()):
            if params.interface != 'udp_multicast':
                raise ValueError(
                    f'CAN channel base given, but bus {name!r} is '
                    f'{params.interface}, not udp_multicast (sim:=true only)'
                )
            can_buses[name] = replace(params, channel=str(first + index))
    if serial_port:
        if len(serial_buses) != 1:
            raise ValueError(
                f'a serial port override needs exactly one serial bus, the '
                f'model has {len(serial_buses)}'
            )
        name, params = next(iter(serial_buses.items()))
        serial_buses[name] = replace(params, port=serial_port)
    return can_buses, serial_buses


__all__ = [
    'CanopenFrameForm',
    'ControllerConfig',
    'CycleConfig',
    'Epos4Params',
    'JointConfig',
    'SequenceTiming',
    'TMotorParams',
    'controller_config_from_model',
    'default_gravity_joints',
    'relocate_buses',
]
