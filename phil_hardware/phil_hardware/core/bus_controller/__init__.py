"""Controller side of the buses below the ROS node: per-family drivers and the bus controller.

Each motor family is one :class:`MotorFamily` (:mod:`.tmotor`, :mod:`.epos4_family` over the
frames of :mod:`.epos4`, :mod:`.dynamixel`); the controller runs every lifecycle step and tick
over them in order.

:class:`BusController` is pure given a clock and transports: the bus-loop process
(:mod:`phil_hardware.rt`) calls :meth:`BusController.tick` every millisecond and the lifecycle
methods on command; tests drive it against the device simulators.
"""

from .base import (
    Clock,
    ControllerError,
    MonotonicClock,
    MotorFamily,
    MotorMissingError,
    Transports,
)
from .config import (
    ControllerConfig,
    CycleConfig,
    JointConfig,
    SequenceTiming,
    controller_config_from_model,
    relocate_buses,
)
from .controller import BusController
from .state import Lifecycle, Measurements

__all__ = [
    'BusController',
    'Clock',
    'ControllerConfig',
    'ControllerError',
    'CycleConfig',
    'JointConfig',
    'Lifecycle',
    'Measurements',
    'MonotonicClock',
    'MotorFamily',
    'MotorMissingError',
    'SequenceTiming',
    'Transports',
    'controller_config_from_model',
    'relocate_buses',
]
