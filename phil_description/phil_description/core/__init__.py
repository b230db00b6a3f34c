"""ROS-free robot model API: URDF joints and limits, hardware parameters, poses, kit, FK.

Nothing here imports rclpy; everything is plain Python + numpy.
"""

from phil_description.core.errors import DescriptionError
from phil_description.core.frames import BASE_FRAME, KINEMATIC_FRAME, transform_points
from phil_description.core.hardware import (
    CanBusParams,
    CanopenFrameForm,
    DynamixelParams,
    Epos4Params,
    HardwareConfig,
    MotorFamily,
    MotorParams,
    SerialBusParams,
    TMotorParams,
)
from phil_description.core.kit import HANDS, DrumKit, Instrument, StrikePoint
from phil_description.core.model import (
    ArmLengths,
    JointSpec,
    RobotModel,
    default_robot_model,
    expand_xacro,
    load_robot_model,
)

__all__ = [
    'BASE_FRAME',
    'HANDS',
    'KINEMATIC_FRAME',
    'ArmLengths',
    'CanBusParams',
    'CanopenFrameForm',
    'DescriptionError',
    'DrumKit',
    'DynamixelParams',
    'Epos4Params',
    'HardwareConfig',
    'Instrument',
    'JointSpec',
    'MotorFamily',
    'MotorParams',
    'RobotModel',
    'SerialBusParams',
    'StrikePoint',
    'TMotorParams',
    'default_robot_model',
    'expand_xacro',
    'load_robot_model',
    'transform_points',
]
