"""Bring every joint to rest from a moving state: bounded deceleration, no jump.

The stop starts from the commanded position and velocity at the halt time (not from a measured
state, which would step the command: the jump-on-cancel problem of joint_trajectory_controller)
and decelerates each joint at a constant rate, all joints together in one common time T:

    q(t) = q0 + v0 t - v0 t^2 / (2 T),  v(t) = v0 (1 - t / T),  0 <= t <= T,

which ends at rest at q0 + v0 T / 2. T = max_j |v0_j| / a_j keeps every joint's deceleration at
or below its bound a_j. Position and velocity are continuous at both ends; the acceleration steps
(to -v0 / T at the start, to 0 at the end), which is what "bounded deceleration" allows.

If stopping that gently would carry a joint past a hard limit, T is shortened so it stops exactly
at the limit; that joint (and the others, which share T) then decelerate harder than the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.motion.trajectory import HoldSegment, Trajectory

#: Default deceleration bound, rad/s^2: at or above the peak acceleration of upstream's moves
#: (a 0.4 s wave step of 50 deg peaks at about 27 rad/s^2), so a halt stops inside the envelope
#: of the motion it interrupts.
DEFAULT_HALT_DECELERATION_RAD_S2 = 50.0
#: Shortest halt, s; also the length of the hold sent when nothing is moving.
DEFAULT_MIN_HALT_DURATION_S = 0.02


@dataclass(frozen=True, eq=False)
class StopSegment:
    """Constant deceleration from (q0, v0) to rest in ``duration_s``; exactly at rest at the end.

    Attributes:
        start_q: (J,) start positions, rad.
        start_v: (J,) start velocities, rad/s.
        duration_s: Stop time T, s.
    """

    start_q: np.ndarray
    start_v: np.ndarray
    duration_s: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities at times relative to the start (clamped to [0, T])."""
        times = np.clip(np.atleast_1d(np.asarray(times_s, dtype=float)), 0.0, self.duration_s)
        remaining = (1.0 - times / self.duration_s)[:, np.newaxis]
        travelled = (times * (1.0 - 0.5 * times / self.duration_s))[:, np.newaxis]
        return self.start_q + self.start_v * travelled, self.start_v * remaining


@dataclass(frozen=True, eq=False)
class HaltPlan:
    """A planned stop.

    Attributes:
        trajectory: From the halt time to rest.
        duration_s: Stop time T, s.
        deceleration_rad_s2: (J,) deceleration each joint actually uses, rad/s^2.
        limited_by: Joint whose hard limit shortened the stop, or None.
    """

    trajectory: Trajectory
    duration_s: float
    deceleration_rad_s2: np.ndarray
    limited_by: str | None


def plan_halt(
    joint_names: tuple[str, ...],
    positions_rad: ArrayLike,
    velocities_rad_s: ArrayLike,
    start_s: float,
    deceleration_rad_s2: ArrayLike = DEFAULT_HALT_DECELERATION_RAD_S2,
    lower_rad: ArrayLike | None = None,
    upper_rad: ArrayLike | None = None,
    min_duration_s: float = DEFAULT_MIN_HALT_DURATION_S,
) -> HaltPlan:
    """Plan a constant-deceleration stop from (positions, velocities) at ``start_s``.

    Args:
        joint_names: The J joint names.
        positions_rad: (J,) commanded positions at the halt time, rad.
        velocities_rad_s: (J,) commanded velocities at the halt time, rad/s.
        start_s: Halt time, s.
        deceleration_rad_s2: Deceleration bound, scalar or (J,), rad/s^2 (> 0).
        lower_rad: Optional (J,) hard lower limits the stop must not pass, rad.
        upper_rad: Optional (J,) hard upper limits, rad.
        min_duration_s: Shortest stop, s (> 0).

    Returns:
        The stop. With every velocity zero it is a hold of ``min_duration_s``.

    Raises:
        ValueError: If a value is not finite or a bound is not positive.
    """
    positions = np.asarray(positions_rad, dtype=float)
    velocities = np.asarray(velocities_rad_s, dtype=float)
    bound = np.broadcast_to(np.asarray(deceleration_rad_s2, dtype=float), positions.shape)
    if not (np.isfinite(positions).all() and np.isfinite(velocities).all()):
        raise ValueError('halt needs finite positions and velocities')
    if not (np.isfinite(bound).all() and (bound > 0.0).all() and min_duration_s > 0.0):
        raise ValueError('halt deceleration bounds and min_duration_s must be positive')
    duration = max(min_duration_s, float(np.max(np.abs(velocities) / bound)))
    limited_by = None
    stops = positions + 0.5 * velocities * duration
    for index, velocity in enumerate(velocities):
        limit = None
        if upper_rad is not None and velocity > 0.0 and stops[index] > upper_rad[index]:
            limit = float(upper_rad[index])
        if lower_rad is not None and velocity < 0.0 and stops[index] < lower_rad[index]:
            limit = float(lower_rad[index])
        if limit is None:
            continue
        allowed = 2.0 * (limit - positions[index]) / velocity
        if 0.0 < allowed < duration:
            duration, limited_by = allowed, joint_names[index]
    if not np.any(velocities):
        segment = HoldSegment(positions.copy(), duration)
    else:
        segment = StopSegment(positions.copy(), velocities.copy(), duration)
    trajectory = Trajectory.from_segments(joint_names, start_s, [segment])
    return HaltPlan(trajectory, duration, np.abs(velocities) / duration, limited_by)
