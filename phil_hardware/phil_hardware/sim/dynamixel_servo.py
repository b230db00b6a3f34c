"""One simulated Dynamixel XM430 (Protocol 2.0 control table and motion).

The control table is a byte array with the XM430 layout; live fields (present position,
velocity, current, moving, hardware error) are refreshed before every read. Motion with torque
on: the goal is followed with a velocity-limited first-order lag when Profile Velocity and
Profile Acceleration are 0 (what the controller sends every cycle), otherwise with the profile
(velocity-based by default; time-based when Drive Mode bit 2 is set, then the two values are
the total and acceleration times in ms). Torque off: the servo holds still. Positions use this
robot's tick convention ``tick = 2048 - motor_deg * 4096 / 360``.

Not modelled: operating modes other than position, REG_WRITE/ACTION, indirect addresses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phil_description.core import DynamixelParams, JointSpec
from phil_hardware.core.codecs import dynamixel
from phil_hardware.core.codecs.dynamixel import ControlTable
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.faults import FaultKind

TABLE_SIZE = 147
EEPROM_END = 64
MODEL_NUMBER = 0
FIRMWARE_VERSION = 6
ID = 7
RETURN_DELAY_TIME = 9
DRIVE_MODE = 10
OPERATING_MODE = 11
CURRENT_LIMIT = 38
VELOCITY_LIMIT = 44
MAX_POSITION_LIMIT = 48
MIN_POSITION_LIMIT = 52
STATUS_RETURN_LEVEL = 68
MOVING = 122
PRESENT_VELOCITY = 128
PRESENT_INPUT_VOLTAGE = 144
PRESENT_TEMPERATURE = 146
_READ_ONLY = (range(0, 7), range(69, 71), range(120, TABLE_SIZE))

RETURN_DELAY_UNIT_S = 2e-6
VELOCITY_UNIT_RAD_S = 0.229 * 2.0 * math.pi / 60.0  # 0.229 rev/min
ACCELERATION_UNIT_RAD_S2 = 214.577 * 2.0 * math.pi / 3600.0  # 214.577 rev/min^2
CURRENT_UNIT_A = 0.00269
TIME_BASED_PROFILE_BIT = 0x04
OVERLOAD_ERROR_BIT = 0x20
TICKS_PER_RAD = dynamixel.TICKS_PER_REV / (2.0 * math.pi)

ERROR_INSTRUCTION = 2
ERROR_DATA_LIMIT = 6
ERROR_ACCESS = 7


@dataclass(frozen=True)
class DynamixelConfig:
    """Behaviour of every simulated Dynamixel.

    Attributes:
        model_number: Reported model (XM430-W210-T = 1030).
        firmware_version: Reported firmware version.
        return_delay_s: Initial Return Delay Time [s] (factory 500 us), rounded to 2 us.
        position_time_constant_s: Lag of the goal following without a profile [s].
        torque_per_accel_a_s2_per_rad: Present current per output acceleration [A s^2/rad].
        end_stop_margin_rad: Mechanical end stops beyond the hard joint limits [rad].
    """

    model_number: int = 1030
    firmware_version: int = 46
    return_delay_s: float = 500e-6
    position_time_constant_s: float = 0.02
    torque_per_accel_a_s2_per_rad: float = 0.002
    end_stop_margin_rad: float = math.radians(10.0)

    def __post_init__(self) -> None:
        """Validate once.

        Raises:
            ValueError: If the return delay does not fit the 1-byte field (0..508 us).
        """
        if not 0 <= self.return_delay_s <= 254 * RETURN_DELAY_UNIT_S:
            raise ValueError('DynamixelConfig.return_delay_s must be within 0..508 us')
        if not self.position_time_constant_s >= 0:
            raise ValueError('DynamixelConfig.position_time_constant_s must be >= 0')


class DynamixelServo(SimDevice):
    """One servo: control table, goal following, injected faults.

    Args:
        joint: Joint with :class:`DynamixelParams` (``device_id`` is the Dynamixel id).
        config: Behaviour shared by all servos.
        initial_joint_rad: Joint angle at power-on (default: the motor's initial angle).

    Raises:
        TypeError: If the joint's motor is not a Dynamixel.
    """

    family = 'dynamixel'

    def __init__(
        self,
        joint: JointSpec,
        config: DynamixelConfig | None = None,
        initial_joint_rad: float | None = None,
    ) -> None:
        if not isinstance(joint.motor, DynamixelParams):
            raise TypeError(f'joint {joint.name!r} is not driven by a Dynamixel: {joint.motor}')
        self.config = config or DynamixelConfig()
        super().__init__(joint, initial_joint_rad, self.config.end_stop_margin_rad)
        self.table = bytearray(TABLE_SIZE)
        self._put(MODEL_NUMBER, 2, self.config.model_number)
        self._put(FIRMWARE_VERSION, 1, self.config.firmware_version)
        self._put(ID, 1, self.device_id)
        self._put(RETURN_DELAY_TIME, 1, round(self.config.return_delay_s / RETURN_DELAY_UNIT_S))
        self._put(OPERATING_MODE, 1, 3)  # position control
        self._put(CURRENT_LIMIT, 2, 1193)
        self._put(VELOCITY_LIMIT, 4, round(joint.velocity_limit_rad_s / VELOCITY_UNIT_RAD_S))
        self._put(MAX_POSITION_LIMIT, 4, dynamixel.TICKS_PER_REV - 1)
        self._put(STATUS_RETURN_LEVEL, 1, 2)
        self._put(PRESENT_INPUT_VOLTAGE, 2, 120)
        self._put(PRESENT_TEMPERATURE, 1, 30)
        self._put(ControlTable.GOAL_POSITION, 4, self._present_tick())
        self._move_speed_rad_s: float | None = None
        self._move_accel_rad_s2: float | None = None
        self.refresh()

    def describe(self) -> str:
        """One-line description, e.g. ``'dynamixel head_yaw (id 1)'``."""
        return f'{self.family} {self.name} (id {self.device_id})'

    # ------------------------------------------------------------------------ table access
    def _put(self, address: int, size: int, value: int) -> None:
        self.table[address : address + size] = (value & ((1 << 8 * size) - 1)).to_bytes(
            size, 'little'
        )

    def get(self, address: int, size: int, signed: bool = False) -> int:
        """Integer value of ``size`` bytes at ``address`` (little-endian)."""
        return int.from_bytes(self.table[address : address + size], 'little', signed=signed)

    @property
    def torque_enabled(self) -> bool:
        """Torque Enable (64)."""
        return bool(self.table[ControlTable.TORQUE_ENABLE])

    @property
    def return_delay_s(self) -> float:
        """Return Delay Time (9) [s]."""
        return self.table[RETURN_DELAY_TIME] * RETURN_DELAY_UNIT_S

    @property
    def status_return_level(self) -> int:
        """Status Return Level (68): 0 = PING only, 1 = + READ, 2 = all instructions."""
        return self.table[STATUS_RETURN_LEVEL]

    def _present_tick(self, motor_rad: float | None = None) -> int:
        motor = self.axis.position_rad if motor_rad is None else motor_rad
        return round(dynamixel.CENTER_TICK - motor * TICKS_PER_RAD)

    def hardware_error_status(self) -> int:
        """Hardware Error Status (70): overload bit while ``over_current`` is injected."""
        return OVERLOAD_ERROR_BIT if FaultKind.OVER_CURRENT in self.faults else 0

    def refresh(self) -> None:
        """Update the live fields of the table from the axis and the injected faults."""
        axis = self.axis
        self._put(
            ControlTable.PRESENT_POSITION, 4, self._present_tick(self._reported_motor_rad(0.0))
        )
        # Ticks grow against the motor angle in this robot's convention, so does the velocity.
        self._put(PRESENT_VELOCITY, 4, round(-axis.velocity_rad_s / VELOCITY_UNIT_RAD_S))
        current_a = -axis.acceleration_rad_s2 * self.config.torque_per_accel_a_s2_per_rad
        if FaultKind.OVER_CURRENT in self.faults:
            current_a = 1.5 * self.get(CURRENT_LIMIT, 2) * CURRENT_UNIT_A
        self._put(ControlTable.PRESENT_CURRENT, 2, round(current_a / CURRENT_UNIT_A))
        self._put(MOVING, 1, int(abs(axis.velocity_rad_s) > 1e-3))
        self._put(ControlTable.HARDWARE_ERROR_STATUS, 1, self.hardware_error_status())

    def read(self, address: int, length: int) -> tuple[int, bytes]:
        """Read ``length`` bytes; returns (status error code, data)."""
        if address < 0 or length < 0 or address + length > TABLE_SIZE:
            return ERROR_ACCESS, b''
        self.refresh()
        return 0, bytes(self.table[address : address + length])

    def write(self, address: int, data: bytes) -> int:
        """Write bytes with the servo's rules; returns the status error code (0 = done).

        Refused (nothing written): outside the table or read-only bytes (access error), EEPROM
        while torque is on (access error), a goal outside the position limits (data limit).
        """
        end = address + len(data)
        if address < 0 or end > TABLE_SIZE:
            return ERROR_ACCESS
        if any(address < r.stop and r.start < end for r in _READ_ONLY):
            return ERROR_ACCESS
        if address < EEPROM_END and self.torque_enabled:
            return ERROR_ACCESS
        goal = ControlTable.GOAL_POSITION
        goal_touched = address < goal + 4 and end > goal
        old = bytes(self.table)
        self.table[address:end] = data
        if goal_touched:
            goal_tick = self.get(goal, 4, signed=True)
            if not self.get(MIN_POSITION_LIMIT, 4) <= goal_tick <= self.get(MAX_POSITION_LIMIT, 4):
                self.table[:] = old
                return ERROR_DATA_LIMIT
            self._plan_move(goal_tick)
        torque = ControlTable.TORQUE_ENABLE
        if address <= torque < end and not self.torque_enabled:
            self.axis.velocity_rad_s = 0.0  # unpowered: the model stops dead (see advance)
        if address <= torque < end and self.torque_enabled and not old[torque]:
            # Torque on: the goal becomes the present position so the servo cannot jump.
            self._put(ControlTable.GOAL_POSITION, 4, self._present_tick())
            self._plan_move(self._present_tick())
        return 0

    def _plan_move(self, goal_tick: int) -> None:
        acceleration = self.get(ControlTable.PROFILE_ACCELERATION, 4)
        velocity = self.get(ControlTable.PROFILE_VELOCITY, 4)
        self._move_speed_rad_s = None
        self._move_accel_rad_s2 = None
        if not velocity:
            return
        if self.table[DRIVE_MODE] & TIME_BASED_PROFILE_BIT:
            distance = abs(self._goal_motor_rad(goal_tick) - self.axis.position_rad)
            total_s = velocity / 1000.0
            accel_s = min(acceleration / 1000.0, total_s / 2.0)
            speed = distance / max(total_s - accel_s, 1e-6)
            self._move_speed_rad_s = max(speed, 1e-9)
            self._move_accel_rad_s2 = speed / accel_s if accel_s > 0 else None
        else:
            self._move_speed_rad_s = velocity * VELOCITY_UNIT_RAD_S
            if acceleration:
                self._move_accel_rad_s2 = acceleration * ACCELERATION_UNIT_RAD_S2

    @staticmethod
    def _goal_motor_rad(goal_tick: int) -> float:
        return (dynamixel.CENTER_TICK - goal_tick) / TICKS_PER_RAD

    def advance(self, dt_s: float) -> None:
        """Follow the goal for ``dt_s`` [s] when torque is on; hold otherwise."""
        if dt_s <= 0:
            return
        if not self.torque_enabled:
            self.axis.hold(dt_s)
            return
        goal = self._goal_motor_rad(self.get(ControlTable.GOAL_POSITION, 4, signed=True))
        self.axis.follow_position(
            goal,
            self.config.position_time_constant_s,
            dt_s,
            self._move_speed_rad_s,
            self._move_accel_rad_s2,
        )
