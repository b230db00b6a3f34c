"""DRUM START / DRUM END moves and the score-time <-> wall-time map of a play.

DRUM START and DRUM END are 4.0 s COSINE moves (as upstream). When a move starts from a moving
pose (a STOP or an abort cutting a window), a decaying term v0 t (1 - t / tau)^2 over
tau = 0.15 s is added so that position and velocity stay continuous; it is zero from tau on, so
the move still ends exactly at its target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.profiles import Profile, profile_segment

TRANSFER_DURATION_S = 4.0
BRAKE_S = 0.15
#: Point spacing of DRUM START / END: cubic Hermite with exact velocities errs by less than
#: 1e-9 rad on a 4 s cosine at this spacing (h^4 max|fourth derivative| / 384).
TRANSFER_STEP_S = 0.02


@dataclass(frozen=True, eq=False)
class TransferMove:
    """A COSINE move between two poses, optionally leaving with a start velocity.

    Attributes:
        start_rad: (J,) start pose, rad.
        end_rad: (J,) target pose, rad.
        duration_s: Move duration, s.
        start_velocity_rad_s: (J,) velocity at the start, rad/s (zeros for a move from rest).
    """

    start_rad: np.ndarray
    end_rad: np.ndarray
    duration_s: float = TRANSFER_DURATION_S
    start_velocity_rad_s: np.ndarray | None = None

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions (M, J) and velocities (M, J) at times (M,) since the move start, s."""
        times = np.clip(np.atleast_1d(np.asarray(times_s, dtype=float)), 0.0, self.duration_s)
        segment = profile_segment(self.start_rad, self.end_rad, self.duration_s, Profile.COSINE)
        positions, velocities = segment.evaluate(times)
        if self.start_velocity_rad_s is not None:
            t = np.minimum(times, BRAKE_S)[:, np.newaxis]
            remaining = 1.0 - t / BRAKE_S
            velocity = np.asarray(self.start_velocity_rad_s, dtype=float)
            positions = positions + velocity * t * remaining**2
            velocities = velocities + velocity * remaining * (1.0 - 3.0 * t / BRAKE_S)
        return positions, velocities

    def sample(self, step_s: float = TRANSFER_STEP_S) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Points from 0 to T (both included) at most `step_s` apart, plus the end of the
        decaying term (where its second derivative jumps) when there is one.

        Returns:
            Times (n,) since the move start, s; positions (n, J); velocities (n, J).
        """
        count = max(1, math.ceil(self.duration_s / step_s - 1e-9))
        times = self.duration_s * np.arange(count + 1) / count
        times[-1] = self.duration_s
        if self.start_velocity_rad_s is not None and self.duration_s > BRAKE_S:
            times = np.union1d(times, [BRAKE_S])
        return (times, *self.evaluate(times))


@dataclass(frozen=True)
class _Breakpoint:
    score_s: float
    wall_s: float
    speed: float


class ScoreClock:
    """Piecewise-linear map between score time and wall time (speed = score s per wall s).

    A speed change takes effect at a given score time; earlier times keep their wall times, so
    no score time is lost or gained and nothing jumps.
    """

    def __init__(self, wall_at_zero_s: float, speed: float) -> None:
        """Start the map: score time 0 happens at `wall_at_zero_s` and runs at `speed`."""
        self._points = [_Breakpoint(0.0, wall_at_zero_s, speed)]

    def speed_at(self, score_s: float) -> float:
        """Speed in effect at a score time."""
        return self._point_for_score(score_s).speed

    def wall_at(self, score_s: float) -> float:
        """Wall time of a score time, s."""
        point = self._point_for_score(score_s)
        return point.wall_s + (score_s - point.score_s) / point.speed

    def score_at(self, wall_s: float) -> float:
        """Score time at a wall time, s (negative before the score starts)."""
        point = self._points[0]
        for candidate in self._points:
            if candidate.wall_s <= wall_s:
                point = candidate
        return point.score_s + (wall_s - point.wall_s) * point.speed

    def change(self, score_s: float, speed: float) -> None:
        """Use `speed` from `score_s` on (later changes are dropped)."""
        wall_s = self.wall_at(score_s)
        self._points = [point for point in self._points if point.score_s < score_s]
        self._points.append(_Breakpoint(score_s, wall_s, speed))

    def _point_for_score(self, score_s: float) -> _Breakpoint:
        point = self._points[0]
        for candidate in self._points:
            if candidate.score_s <= score_s:
                point = candidate
        return point
