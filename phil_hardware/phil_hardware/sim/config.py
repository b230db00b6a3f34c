"""Configuration of the whole simulated robot (validated once, units in the names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phil_hardware.sim.dynamixel_servo import DynamixelConfig
from phil_hardware.sim.epos4_device import Epos4DeviceConfig
from phil_hardware.sim.impacts import ImpactConfig
from phil_hardware.sim.tmotor_device import TMotorDeviceConfig


@dataclass(frozen=True)
class SimConfig:
    """Configuration of the whole simulated robot.

    Attributes:
        tmotor: TMotor behaviour.
        epos4: EPOS4 behaviour.
        dynamixel: Dynamixel behaviour.
        impacts: Impact detection parameters, None to switch detection off.
        loop_period_s: Longest wait of the device loop between iterations [s].
        max_step_s: Longest physics step [s].
        arrival_resolution_s: Frames sent within this of the physics time act at that time
            (one physics step per burst of frames, not per frame) [s].
        history_period_s: Minimum spacing of history samples [s].
        history_capacity: History samples kept (ring buffer).
        impact_batch_s: Physics samples are handed to the impact detector in batches this long.
        seed: Seed of the fault garbage generators.
    """

    tmotor: TMotorDeviceConfig = field(default_factory=TMotorDeviceConfig)
    epos4: Epos4DeviceConfig = field(default_factory=Epos4DeviceConfig)
    dynamixel: DynamixelConfig = field(default_factory=DynamixelConfig)
    impacts: ImpactConfig | None = field(default_factory=ImpactConfig)
    loop_period_s: float = 0.005
    max_step_s: float = 0.001
    arrival_resolution_s: float = 0.0002
    history_period_s: float = 0.001
    history_capacity: int = 120_000
    impact_batch_s: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        """Validate once.

        Raises:
            ValueError: Naming the first field out of range.
        """
        if not 0 <= self.arrival_resolution_s <= self.max_step_s:
            raise ValueError('SimConfig.arrival_resolution_s must be in [0, max_step_s]')
        for name in ('loop_period_s', 'max_step_s', 'impact_batch_s'):
            if not getattr(self, name) > 0:
                raise ValueError(f'SimConfig.{name} must be > 0')
        if self.history_period_s < 0 or self.history_capacity < 1:
            raise ValueError('SimConfig.history_period_s must be >= 0, history_capacity >= 1')
