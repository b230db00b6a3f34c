"""Simple actuator models: one rotational axis following a velocity, position or torque command.

These are deliberately small models, good enough for a controller to close its loops against:

* velocity command: first-order lag of the velocity (time constant of a few ms), clamped;
* position command: first-order lag of the position, velocity-limited, optionally with a
  trapezoidal profile (acceleration limit);
* torque command: inertia, viscous and Coulomb friction (with stiction), speed limit.

Not modelled: backlash, compliance, current loops, thermal behaviour, gravity on the TMotor and
Dynamixel joints. End stops are hard: the axis stops dead at them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_STILL_RAD_S = 1e-9


@dataclass(frozen=True)
class AxisLimits:
    """Limits of one axis, in the axis' own coordinate.

    Attributes:
        velocity_limit_rad_s: Largest speed the actuator reaches [rad/s].
        lower_stop_rad: Mechanical end stop below [rad].
        upper_stop_rad: Mechanical end stop above [rad].
    """

    velocity_limit_rad_s: float
    lower_stop_rad: float = -math.inf
    upper_stop_rad: float = math.inf

    def __post_init__(self) -> None:
        """Reject a non-positive speed limit or crossed end stops.

        Raises:
            ValueError: Naming the bad field.
        """
        if not self.velocity_limit_rad_s > 0:
            raise ValueError(f'velocity_limit_rad_s must be > 0, got {self.velocity_limit_rad_s}')
        if not self.lower_stop_rad < self.upper_stop_rad:
            raise ValueError(
                f'lower_stop_rad {self.lower_stop_rad} must be below upper_stop_rad '
                f'{self.upper_stop_rad}'
            )


@dataclass(frozen=True)
class TorqueLoad:
    """Mechanical parameters of a torque-driven axis, all on the axis side of the gear.

    Attributes:
        inertia_kg_m2: Total inertia (reflected rotor + link) [kg m^2].
        viscous_nm_s_per_rad: Viscous friction [N m s/rad].
        coulomb_nm: Coulomb (and break-away) friction [N m].
    """

    inertia_kg_m2: float
    viscous_nm_s_per_rad: float = 0.0
    coulomb_nm: float = 0.0


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


class Axis:
    """State of one rotational axis and the command-following step functions.

    Every step function advances the state by ``dt_s`` and records the mean acceleration of the
    step (used by the devices to report a plausible current or torque).

    Args:
        position_rad: Initial position [rad].
        limits: Speed limit and end stops.
    """

    def __init__(self, position_rad: float, limits: AxisLimits) -> None:
        self.limits = limits
        self.position_rad = float(position_rad)
        self.velocity_rad_s = 0.0
        self.acceleration_rad_s2 = 0.0

    def hold(self, dt_s: float) -> None:
        """Stop dead and stay (brake, or a drive without torque that friction holds)."""
        self._finish(0.0, dt_s)

    def follow_velocity(self, target_rad_s: float, time_constant_s: float, dt_s: float) -> None:
        """First-order lag towards a velocity command, clamped to the speed limit.

        Args:
            target_rad_s: Commanded velocity [rad/s].
            time_constant_s: Lag time constant [s]; 0 follows instantly.
            dt_s: Step [s].
        """
        target = _clamp(target_rad_s, self.limits.velocity_limit_rad_s)
        gain = 1.0 if time_constant_s <= 0 else 1.0 - math.exp(-dt_s / time_constant_s)
        velocity = self.velocity_rad_s + (target - self.velocity_rad_s) * gain
        # Trapezoidal integration: the position moves with the mean velocity of the step.
        self._finish(velocity, dt_s, mean_velocity=0.5 * (self.velocity_rad_s + velocity))

    def follow_position(
        self,
        target_rad: float,
        time_constant_s: float,
        dt_s: float,
        max_velocity_rad_s: float | None = None,
        max_acceleration_rad_s2: float | None = None,
    ) -> None:
        """Move towards a position command.

        Without an acceleration limit: first-order lag of the position, velocity-limited.
        With one: a trapezoidal profile (accelerate, cruise, brake to stop at the target).

        Args:
            target_rad: Commanded position [rad].
            time_constant_s: Lag time constant [s]; 0 jumps as far as the speed allows.
            dt_s: Step [s].
            max_velocity_rad_s: Speed limit of this move, capped by the axis limit.
            max_acceleration_rad_s2: Acceleration limit, None or <= 0 for none.
        """
        if dt_s <= 0:
            return
        speed = self.limits.velocity_limit_rad_s
        if max_velocity_rad_s is not None and max_velocity_rad_s > 0:
            speed = min(speed, max_velocity_rad_s)
        error = target_rad - self.position_rad
        if max_acceleration_rad_s2 is None or max_acceleration_rad_s2 <= 0:
            gain = 1.0 if time_constant_s <= 0 else 1.0 - math.exp(-dt_s / time_constant_s)
            velocity = _clamp(error * gain / dt_s, speed)
            self._finish(velocity, dt_s)
            return
        accel = max_acceleration_rad_s2
        # Fastest speed from which the axis can still brake to rest at the target.
        desired = math.copysign(min(speed, math.sqrt(2.0 * accel * abs(error))), error)
        velocity = self.velocity_rad_s + _clamp(desired - self.velocity_rad_s, accel * dt_s)
        if abs(velocity * dt_s) >= abs(error) and velocity * error >= 0:
            # The target is reached within this step: land on it instead of overshooting.
            self._finish(0.0, dt_s, mean_velocity=error / dt_s)
            return
        self._finish(velocity, dt_s)

    def apply_torque(self, torque_nm: float, load: TorqueLoad, dt_s: float) -> None:
        """Integrate ``J a = torque - viscous v - coulomb sign(v)`` (semi-implicit Euler).

        A standing axis stays put while the applied torque is within the Coulomb friction
        (stiction); a moving axis that friction brings to rest stops instead of reversing.

        Args:
            torque_nm: Applied torque incl. any external load [N m].
            load: Inertia and friction.
            dt_s: Step [s].
        """
        if dt_s <= 0:
            return
        velocity = self.velocity_rad_s
        driving = torque_nm - load.viscous_nm_s_per_rad * velocity
        if abs(velocity) < _STILL_RAD_S and abs(driving) <= load.coulomb_nm:
            self._finish(0.0, dt_s)
            return
        direction = velocity if abs(velocity) >= _STILL_RAD_S else driving
        friction = math.copysign(load.coulomb_nm, direction)
        new_velocity = velocity + (driving - friction) / load.inertia_kg_m2 * dt_s
        reverses = abs(velocity) >= _STILL_RAD_S and new_velocity * velocity < 0
        if reverses and abs(driving) <= load.coulomb_nm:
            new_velocity = 0.0
        self._finish(_clamp(new_velocity, self.limits.velocity_limit_rad_s), dt_s)

    def _finish(self, velocity: float, dt_s: float, mean_velocity: float | None = None) -> None:
        step_velocity = velocity if mean_velocity is None else mean_velocity
        position = self.position_rad + step_velocity * dt_s
        if position <= self.limits.lower_stop_rad or position >= self.limits.upper_stop_rad:
            position = min(max(position, self.limits.lower_stop_rad), self.limits.upper_stop_rad)
            velocity = 0.0
        if dt_s > 0:
            self.acceleration_rad_s2 = (velocity - self.velocity_rad_s) / dt_s
        self.position_rad = position
        self.velocity_rad_s = velocity
