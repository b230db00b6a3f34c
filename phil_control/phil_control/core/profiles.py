"""Point-to-point time profiles and Hermite segments for joint trajectories.

A profile maps normalised time tau in [0, 1] to normalised progress s in [0, 1] with s(0) = 0,
s(1) = 1 and zero slope at both ends. A segment from q0 to q1 of duration T is
q(t) = q0 + s(t / T) (q1 - q0), qd(t) = s'(t / T) (q1 - q0) / T.

Sampling follows upstream: n = round(T / dt) samples at tau = k / n, k = 1..n, so the first sample
is one step after the start and the last one is exactly the target. Every segment can also be
evaluated at arbitrary times, e.g. at the actual send time of a set-point.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

#: Upstream's set-point period, s.
DEFAULT_DT_S = 0.005

# Trapezoidal profile: accelerate for a quarter, cruise for a half, decelerate for a quarter; the
# cruise speed that covers s = 1 in that shape is 4/3.
_TRAPEZOID_RAMP = 0.25
_TRAPEZOID_PEAK = 4.0 / 3.0
_TRAPEZOID_ACCEL = _TRAPEZOID_PEAK / _TRAPEZOID_RAMP


class Profile(enum.Enum):
    """Shape of a rest-to-rest move."""

    COSINE = 'cosine'
    CUBIC = 'cubic'
    QUINTIC = 'quintic'
    TRAPEZOIDAL = 'trapezoidal'


def profile_position(profile: Profile, tau: ArrayLike) -> np.ndarray:
    """Normalised progress s(tau); tau is clipped to [0, 1].

    Args:
        profile: The profile shape.
        tau: Normalised time (any shape).

    Returns:
        s with the shape of ``tau``.
    """
    tau = np.clip(np.asarray(tau, dtype=float), 0.0, 1.0)
    if profile is Profile.COSINE:
        return 0.5 * (1.0 - np.cos(np.pi * tau))
    if profile is Profile.CUBIC:
        return tau * tau * (3.0 - 2.0 * tau)
    if profile is Profile.QUINTIC:
        return tau**3 * (10.0 - 15.0 * tau + 6.0 * tau * tau)
    if profile is Profile.TRAPEZOIDAL:
        ramp_end = 0.5 * _TRAPEZOID_ACCEL * _TRAPEZOID_RAMP**2
        remaining = 1.0 - tau
        return np.select(
            [tau < _TRAPEZOID_RAMP, tau < 1.0 - _TRAPEZOID_RAMP],
            [
                0.5 * _TRAPEZOID_ACCEL * tau * tau,
                ramp_end + _TRAPEZOID_PEAK * (tau - _TRAPEZOID_RAMP),
            ],
            1.0 - 0.5 * _TRAPEZOID_ACCEL * remaining * remaining,
        )
    raise ValueError(f'profile must be a Profile, got {profile!r}')


def profile_velocity(profile: Profile, tau: ArrayLike) -> np.ndarray:
    """Normalised speed ds/dtau; exactly zero at tau <= 0 and tau >= 1.

    Args:
        profile: The profile shape.
        tau: Normalised time (any shape).

    Returns:
        ds/dtau with the shape of ``tau``.
    """
    tau = np.asarray(tau, dtype=float)
    # Exactly zero at and beyond both ends (sin(pi) is not), so a finished move reports rest.
    inside = (tau > 0.0) & (tau < 1.0)
    tau = np.clip(tau, 0.0, 1.0)
    if profile is Profile.COSINE:
        speed = 0.5 * np.pi * np.sin(np.pi * tau)
    elif profile is Profile.CUBIC:
        speed = 6.0 * tau * (1.0 - tau)
    elif profile is Profile.QUINTIC:
        speed = 30.0 * tau * tau * (1.0 - tau) ** 2
    elif profile is Profile.TRAPEZOIDAL:
        speed = np.select(
            [tau < _TRAPEZOID_RAMP, tau < 1.0 - _TRAPEZOID_RAMP],
            [_TRAPEZOID_ACCEL * tau, np.full_like(tau, _TRAPEZOID_PEAK)],
            _TRAPEZOID_ACCEL * (1.0 - tau),
        )
    else:
        raise ValueError(f'profile must be a Profile, got {profile!r}')
    return np.where(inside, speed, 0.0)


def sample_count(duration_s: float, dt_s: float = DEFAULT_DT_S) -> int:
    """Number of samples n = round(duration / dt), at least 1.

    Raises:
        ValueError: If an argument is not a positive finite number.
    """
    duration_s = _positive(duration_s, 'duration_s')
    dt_s = _positive(dt_s, 'dt_s')
    return max(1, round(duration_s / dt_s))


def sample_times(duration_s: float, dt_s: float = DEFAULT_DT_S) -> np.ndarray:
    """Sample times k T / n, k = 1..n, relative to the segment start, s.

    With T a whole number of steps (the usual case) these are exactly k dt as upstream; otherwise
    the step is stretched to T / n so that the last sample still lands at T.
    """
    count = sample_count(duration_s, dt_s)
    return np.arange(1, count + 1) * (float(duration_s) / count)


@dataclass(frozen=True, eq=False)
class ProfileSegment:
    """Rest-to-rest move from ``start_q`` to ``end_q``; build with ``profile_segment``.

    Attributes:
        start_q: (J,) start positions.
        end_q: (J,) end positions.
        duration_s: Duration T, s.
        profile: Time profile.
    """

    start_q: np.ndarray
    end_q: np.ndarray
    duration_s: float
    profile: Profile

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities at times relative to the start (clamped to [0, T]).

        Args:
            times_s: (M,) times, s.

        Returns:
            positions (M, J) and velocities (M, J) per second.
        """
        tau = _times(times_s) / self.duration_s
        progress = profile_position(self.profile, tau)[:, np.newaxis]
        # This blend form returns start_q and end_q bit-exactly at s = 0 and s = 1.
        positions = (1.0 - progress) * self.start_q + progress * self.end_q
        speeds = profile_velocity(self.profile, tau)[:, np.newaxis]
        return positions, speeds * (self.end_q - self.start_q) / self.duration_s

    def sample(self, dt_s: float = DEFAULT_DT_S) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Upstream sampling: returns times (n,), positions (n, J), velocities (n, J)."""
        times = sample_times(self.duration_s, dt_s)
        return (times, *self.evaluate(times))


def profile_segment(
    start_q: ArrayLike, end_q: ArrayLike, duration_s: float, profile: Profile = Profile.COSINE
) -> ProfileSegment:
    """Validate and build a ``ProfileSegment``.

    Raises:
        ValueError: Naming the argument: non-finite values, shapes that differ or are not (J,),
            a non-positive duration or an unknown profile.
    """
    start = _joint_vector(start_q, 'start_q')
    end = _joint_vector(end_q, 'end_q')
    if start.shape != end.shape:
        raise ValueError(f'end_q shape {end.shape} differs from start_q shape {start.shape}')
    if not isinstance(profile, Profile):
        raise ValueError(f'profile must be a Profile, got {profile!r}')
    return ProfileSegment(start, end, _positive(duration_s, 'duration_s'), profile)


def sample_segment(
    start_q: ArrayLike,
    end_q: ArrayLike,
    duration_s: float,
    profile: Profile = Profile.COSINE,
    dt_s: float = DEFAULT_DT_S,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample a rest-to-rest move like upstream's trajectory generator.

    Args:
        start_q: (J,) start positions (rad or any unit; velocities come out per second).
        end_q: (J,) target positions.
        duration_s: Duration, s (> 0).
        profile: Time profile (COSINE by default, as upstream).
        dt_s: Sample period, s (> 0).

    Returns:
        times_s (n,) relative to the start, positions (n, J), velocities (n, J); the last row is
        exactly ``end_q``.

    Raises:
        ValueError: Naming the bad argument.
    """
    return profile_segment(start_q, end_q, duration_s, profile).sample(dt_s)


@dataclass(frozen=True, eq=False)
class HermiteSegment:
    """Polynomial segment matching given start/end positions and velocities (and accelerations).

    Build with ``hermite_segment``. Stored as coefficients c_i of q(tau) = sum c_i tau^i.

    Attributes:
        coefficients: (degree + 1, J) coefficients in normalised time.
        duration_s: Duration T, s.
        end_q: (J,) end positions, returned bit-exactly at t >= T.
    """

    coefficients: np.ndarray
    duration_s: float
    end_q: np.ndarray

    @property
    def degree(self) -> int:
        """3 for a cubic, 5 for a quintic segment."""
        return self.coefficients.shape[0] - 1

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities at times relative to the start (clamped to [0, T]).

        Args:
            times_s: (M,) times, s.

        Returns:
            positions (M, J) and velocities (M, J) per second.
        """
        tau = np.clip(_times(times_s) / self.duration_s, 0.0, 1.0)[:, np.newaxis]
        positions = np.broadcast_to(
            self.coefficients[-1], (tau.shape[0], self.coefficients.shape[1])
        )
        slopes = np.zeros_like(positions)
        # Horner's scheme for the polynomial and its derivative together.
        for coefficient in self.coefficients[-2::-1]:
            slopes = slopes * tau + positions
            positions = positions * tau + coefficient
        positions = np.where(tau >= 1.0, self.end_q, positions)
        return positions, slopes / self.duration_s

    def sample(self, dt_s: float = DEFAULT_DT_S) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample like ``sample_segment``: times (n,), positions (n, J), velocities (n, J)."""
        times = sample_times(self.duration_s, dt_s)
        return (times, *self.evaluate(times))


def hermite_segment(
    start_q: ArrayLike,
    start_v: ArrayLike,
    end_q: ArrayLike,
    end_v: ArrayLike,
    duration_s: float,
    start_a: ArrayLike | None = None,
    end_a: ArrayLike | None = None,
) -> HermiteSegment:
    """Segment between arbitrary start and end states, for smooth joins of moves.

    Cubic when no accelerations are given, quintic when both are.

    Args:
        start_q: (J,) start positions.
        start_v: (J,) start velocities, per second.
        end_q: (J,) end positions.
        end_v: (J,) end velocities, per second.
        duration_s: Duration, s (> 0).
        start_a: Optional (J,) start accelerations, per second squared.
        end_a: Optional (J,) end accelerations (given together with ``start_a``).

    Raises:
        ValueError: Naming the argument: non-finite values, shape mismatch, non-positive
            duration, or only one of the accelerations.
    """
    duration = _positive(duration_s, 'duration_s')
    vectors = _hermite_vectors(start_q, start_v, end_q, end_v, start_a, end_a)
    return HermiteSegment(_hermite_coefficients(vectors, duration), duration, vectors['end_q'])


def _hermite_vectors(
    start_q: ArrayLike,
    start_v: ArrayLike,
    end_q: ArrayLike,
    end_v: ArrayLike,
    start_a: ArrayLike | None,
    end_a: ArrayLike | None,
) -> dict[str, np.ndarray]:
    """``hermite_segment``'s state vectors by argument name (accelerations only when given),
    checked to be finite and of start_q's shape.

    Raises:
        ValueError: As ``hermite_segment``.
    """
    start = _joint_vector(start_q, 'start_q')
    named = {'start_v': start_v, 'end_q': end_q, 'end_v': end_v}
    if (start_a is None) != (end_a is None):
        raise ValueError('start_a and end_a must be given together (quintic) or not at all')
    if start_a is not None:
        named.update(start_a=start_a, end_a=end_a)
    vectors = {'start_q': start}
    for name, value in named.items():
        vectors[name] = _joint_vector(value, name)
        if vectors[name].shape != start.shape:
            raise ValueError(
                f'{name} shape {vectors[name].shape} differs from start_q shape {start.shape}'
            )
    return vectors


def _hermite_coefficients(vectors: dict[str, np.ndarray], duration: float) -> np.ndarray:
    """(degree + 1, J) coefficients in normalised time (velocities scale by the duration,
    accelerations by its square); quintic when ``vectors`` holds the accelerations."""
    start = vectors['start_q']
    rise = vectors['end_q'] - start
    start_slope = vectors['start_v'] * duration
    end_slope = vectors['end_v'] * duration
    if 'start_a' not in vectors:
        return np.stack(
            [
                start,
                start_slope,
                3.0 * rise - 2.0 * start_slope - end_slope,
                -2.0 * rise + start_slope + end_slope,
            ]
        )
    start_curve = vectors['start_a'] * duration**2
    end_curve = vectors['end_a'] * duration**2
    return np.stack(
        [
            start,
            start_slope,
            0.5 * start_curve,
            10.0 * rise
            - 6.0 * start_slope
            - 4.0 * end_slope
            - 1.5 * start_curve
            + 0.5 * end_curve,
            -15.0 * rise + 8.0 * start_slope + 7.0 * end_slope + 1.5 * start_curve - end_curve,
            6.0 * rise - 3.0 * start_slope - 3.0 * end_slope - 0.5 * start_curve + 0.5 * end_curve,
        ]
    )


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f'{name} must be a number, got {value!r}')
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f'{name} must be positive and finite, got {value!r}')
    return float(value)


def _joint_vector(values: ArrayLike, name: str) -> np.ndarray:
    try:
        array = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be numbers, got {values!r}') from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f'{name} must be a non-empty (J,) vector, got shape {array.shape}')
    if not np.isfinite(array).all():
        raise ValueError(f'{name} contains NaN or Inf: {array.tolist()}')
    return array


def _times(times_s: ArrayLike) -> np.ndarray:
    try:
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f'times_s must be numbers, got {times_s!r}') from None
    if times.ndim != 1:
        raise ValueError(f'times_s must be (M,), got shape {times.shape}')
    if not np.isfinite(times).all():
        raise ValueError(f'times_s contains NaN or Inf: {times.tolist()}')
    return times
