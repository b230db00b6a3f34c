"""Device-level simulators of Phil's motors, speaking the real wire protocols (ROS-free).

* :class:`TMotorDevice` - TMotor AK servo mode on CAN (status broadcast, SET_RPM/POS/ORIGIN).
* :class:`Epos4Device` - Maxon EPOS4 on CANopen (NMT, SDO server, CiA 402, CSP/CST/HMM, PDOs).
* :class:`DynamixelBank` of :class:`DynamixelServo` - Protocol 2.0 on a :class:`PtyPort`.
* :class:`SimulatedRobot` - all devices of a robot model on injected buses, one device loop,
  joint-space truth, history and impact detection (:mod:`.impacts`).
* Fault injection per device (:mod:`.faults`); the process entry is ``python -m
  phil_hardware.sim`` (:mod:`.runner`).

Nothing here imports rclpy; the optional ROS bridge (:mod:`.ros_bridge`) runs in its own process.
"""

from phil_hardware.core.clock import Clock, ManualClock, MonotonicClock
from phil_hardware.sim.actuator import Axis, AxisLimits, TorqueLoad
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.dynamixel_bank import DynamixelBank
from phil_hardware.sim.dynamixel_servo import DynamixelConfig, DynamixelServo
from phil_hardware.sim.epos4_device import Epos4Device, Epos4DeviceConfig, NmtState
from phil_hardware.sim.faults import FaultKind, FaultSet, InjectedFault, parse_fault_spec
from phil_hardware.sim.impacts import (
    Impact,
    ImpactConfig,
    ImpactDetector,
    Limb,
    detect_impacts,
    velocity_grade,
)
from phil_hardware.sim.pty_port import PtyPort
from phil_hardware.sim.robot import SimulatedRobot
from phil_hardware.sim.tmotor_device import TMotorDevice, TMotorDeviceConfig

__all__ = [
    'Axis',
    'AxisLimits',
    'Clock',
    'DynamixelBank',
    'DynamixelConfig',
    'DynamixelServo',
    'Epos4Device',
    'Epos4DeviceConfig',
    'InjectedFault',
    'FaultKind',
    'FaultSet',
    'Impact',
    'ImpactConfig',
    'ImpactDetector',
    'Limb',
    'ManualClock',
    'MonotonicClock',
    'NmtState',
    'PtyPort',
    'SimConfig',
    'SimulatedRobot',
    'TMotorDevice',
    'TMotorDeviceConfig',
    'TorqueLoad',
    'detect_impacts',
    'parse_fault_spec',
    'velocity_grade',
]
