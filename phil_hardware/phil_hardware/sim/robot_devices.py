"""The simulated robot at power-on: its joint angles and the device of each joint.

A joint gets a device only if its bus is simulated: TMotor and EPOS4 drives need their CAN bus,
Dynamixels the serial line. An EPOS4 with a gravity mass (a wrist) gets the gravity load of its
arm's present pose.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from phil_description.core import RobotModel
from phil_description.core.hardware import DynamixelParams, Epos4Params, TMotorParams
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.dynamixel_servo import DynamixelServo
from phil_hardware.sim.epos4_device import Epos4Device
from phil_hardware.sim.tmotor_device import TMotorDevice
from phil_hardware.sim.wrist_gravity import arm_gravity_load


def initial_positions(model: RobotModel, initial_positions_rad: np.ndarray | None) -> np.ndarray:
    """Power-on joint angles: the given ones, else the model's 'init' pose, else the motors'.

    Raises:
        ValueError: If their count is not the model's joint count.
    """
    if initial_positions_rad is not None:
        initial = np.asarray(initial_positions_rad, dtype=float)
    elif 'init' in model.poses:
        initial = model.poses['init']
    else:
        initial = np.array([joint.motor.initial_position_rad for joint in model.joints])
    if initial.shape != (len(model.joints),):
        raise ValueError(
            f'initial_positions_rad must have {len(model.joints)} values, '
            f'got shape {initial.shape}'
        )
    return np.array(initial, dtype=float)


def build_devices(
    model: RobotModel,
    config: SimConfig,
    initial_rad: np.ndarray,
    can_buses: Collection[str],
    has_serial_line: bool,
    joint_positions_rad: Callable[[], np.ndarray],
) -> dict[str, SimDevice]:
    """The devices by joint name, in model joint order.

    Args:
        model: Robot model (joints and their motor parameters).
        config: Behaviour of every device family; its seed seeds the fault generators.
        initial_rad: Joint angles at power-on, model joint order [rad].
        can_buses: Names of the simulated CAN buses.
        has_serial_line: Whether the Dynamixel line is simulated.
        joint_positions_rad: Present joint angles (for the wrists' gravity load).
    """
    devices: dict[str, SimDevice] = {}
    for index, joint in enumerate(model.joints):
        motor, start = joint.motor, float(initial_rad[index])
        seed = config.seed * 100 + index
        if isinstance(motor, TMotorParams) and motor.bus in can_buses:
            device: SimDevice = TMotorDevice(joint, config.tmotor, start, seed)
        elif isinstance(motor, Epos4Params) and motor.bus in can_buses:
            device = Epos4Device(joint, config.epos4, start, seed)
            if motor.gravity_mass_kg > 0:
                device.external_torque_nm = arm_gravity_load(
                    model, joint.name, motor, config.epos4.gravity_m_s2, joint_positions_rad
                )
        elif isinstance(motor, DynamixelParams) and has_serial_line:
            device = DynamixelServo(joint, config.dynamixel, start)
        else:
            continue
        devices[joint.name] = device
    return devices
