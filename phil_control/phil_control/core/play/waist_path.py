"""Waist motion inside a window as a piecewise cubic Hermite curve, and its repair.

Upstream plans the waist only at events (a monotone cubic from one event's angle to the next)
and aborts when the IK fails between them. Between two drums far apart (e.g. snare -> right
crash) the tip path can pass poses that the interpolated waist cannot reach. Improvement: when
the IK fails at some sample, a keyframe is inserted there at the angle nearest to the planned one
that lies a few degrees inside that sample's feasible waist range (the optimum when that does
not help), and the IK is retried; the window's start and end angles and velocities stay as
planned, so neighbouring windows are unaffected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.kinematics import WaistChoice, WaistSegment

#: How far inside the feasible waist range a repair keyframe is placed, rad.
REPAIR_MARGIN_RAD = math.radians(3.0)


@dataclass(frozen=True)
class WaistPath:
    """Keyframes (time, angle, velocity) joined by cubic Hermite pieces.

    Attributes:
        times_s: Strictly increasing keyframe times, score time, s.
        angles_rad: Waist angle at each keyframe, rad.
        velocities_rad_s: Waist velocity at each keyframe, rad per score second.
    """

    times_s: tuple[float, ...]
    angles_rad: tuple[float, ...]
    velocities_rad_s: tuple[float, ...]

    @classmethod
    def from_segment(cls, segment: WaistSegment) -> WaistPath:
        """The single piece of a planned waist segment."""
        return cls(
            (segment.start.time_s, segment.end.time_s),
            (segment.start.angle_rad, segment.end.angle_rad),
            (segment.start_velocity_rad_s, segment.end_velocity_rad_s),
        )

    @property
    def end_angle_rad(self) -> float:
        """Angle at the last keyframe, rad."""
        return self.angles_rad[-1]

    @property
    def end_velocity_rad_s(self) -> float:
        """Velocity at the last keyframe, rad/s."""
        return self.velocities_rad_s[-1]

    def evaluate(self, times_s: ArrayLike) -> np.ndarray:
        """Waist angles (M,) in rad at score times (M,), clamped to the keyframe span."""
        knots = np.array(self.times_s)
        angles, slopes = np.array(self.angles_rad), np.array(self.velocities_rad_s)
        t = np.clip(np.atleast_1d(np.asarray(times_s, dtype=float)), knots[0], knots[-1])
        piece = np.clip(np.searchsorted(knots, t, side='right') - 1, 0, knots.size - 2)
        step = knots[piece + 1] - knots[piece]
        tau = (t - knots[piece]) / step
        return (
            (2 * tau**3 - 3 * tau**2 + 1) * angles[piece]
            + (tau**3 - 2 * tau**2 + tau) * step * slopes[piece]
            + (-2 * tau**3 + 3 * tau**2) * angles[piece + 1]
            + (tau**3 - tau**2) * step * slopes[piece + 1]
        )

    def with_keyframe(self, time_s: float, angle_rad: float) -> WaistPath:
        """Insert an inner keyframe; inner slopes follow the neighbouring secants (zero at
        extrema), the end slopes are kept."""
        if not self.times_s[0] < time_s < self.times_s[-1] or time_s in self.times_s:
            return self
        index = int(np.searchsorted(self.times_s, time_s))
        times = list(self.times_s)
        angles = list(self.angles_rad)
        times.insert(index, time_s)
        angles.insert(index, angle_rad)
        slopes = [self.velocities_rad_s[0]]
        for inner in range(1, len(times) - 1):
            before = (angles[inner] - angles[inner - 1]) / (times[inner] - times[inner - 1])
            after = (angles[inner + 1] - angles[inner]) / (times[inner + 1] - times[inner])
            slopes.append(0.5 * (before + after) if before * after > 0.0 else 0.0)
        slopes.append(self.velocities_rad_s[-1])
        return WaistPath(tuple(times), tuple(angles), tuple(slopes))


def repair_angle(planned_rad: float, choice: WaistChoice) -> float:
    """Keyframe angle for a sample whose IK failed at `planned_rad`.

    The planned angle moved a few degrees inside the feasible range; the optimum when the
    planned angle is already inside (the range is not convex there).
    """
    lower, upper = choice.feasible_min_rad, choice.feasible_max_rad
    margin = min(REPAIR_MARGIN_RAD, 0.25 * (upper - lower))
    moved = min(max(planned_rad, lower + margin), upper - margin)
    return moved if moved != planned_rad else choice.optimal_rad
