"""Transitions between events and the vectorised curve pieces the play generators are built of.

Every function takes times as numpy arrays and returns arrays of the same shape. Curve pieces
are written so that they can be evaluated slightly outside their span (polynomials extend,
cosines are clamped), which the backward differences of `window_motion` rely on.
"""

from __future__ import annotations

import enum

import numpy as np
from numpy.typing import ArrayLike


class Transition(enum.Enum):
    """What a limb does between two instants (upstream's REST/HIT state pairs).

    The first word is the state at the start (a strike just happened or not), the second the
    state at the end (a strike is due or not).
    """

    REST_TO_REST = 'rest->rest'
    REST_TO_HIT = 'rest->hit'
    HIT_TO_REST = 'hit->rest'
    HIT_TO_HIT = 'hit->hit'

    @classmethod
    def between(cls, struck_now: bool, struck_next: bool) -> Transition:
        """The transition from a (struck or not) instant to a (struck or not) instant."""
        if struck_now:
            return cls.HIT_TO_HIT if struck_next else cls.HIT_TO_REST
        return cls.REST_TO_HIT if struck_next else cls.REST_TO_REST

    @property
    def ends_in_hit(self) -> bool:
        """True for REST_TO_HIT and HIT_TO_HIT."""
        return self in (Transition.REST_TO_HIT, Transition.HIT_TO_HIT)


def smoothstep(tau: ArrayLike) -> np.ndarray:
    """3 tau^2 - 2 tau^3 with tau clipped to [0, 1] (zero slope at both ends)."""
    tau = np.clip(np.asarray(tau, dtype=float), 0.0, 1.0)
    return tau * tau * (3.0 - 2.0 * tau)


def cubic_rest_to_rest(
    t: np.ndarray, t_a: float, q_a: float, t_b: float, q_b: float
) -> np.ndarray:
    """Cubic from q_a at t_a to q_b at t_b with zero velocity at both ends (not clamped).

    A zero or negative span returns q_a before t_b and q_b from t_b on.
    """
    span = t_b - t_a
    if span <= 0.0:
        return np.where(t < t_b, q_a, q_b)
    tau = (t - t_a) / span
    return q_a + (q_b - q_a) * tau * tau * (3.0 - 2.0 * tau)


def quadratic_from_rest(
    t: np.ndarray, t_a: float, q_a: float, t_b: float, q_b: float
) -> np.ndarray:
    """Parabola leaving q_a at t_a with zero velocity and reaching q_b at t_b (accelerating)."""
    span = t_b - t_a
    if span <= 0.0:
        return np.where(t < t_b, q_a, q_b)
    return q_a + (q_b - q_a) * ((t - t_a) / span) ** 2


def quadratic_to_rest(t: np.ndarray, t_a: float, q_a: float, t_b: float, q_b: float) -> np.ndarray:
    """Parabola leaving q_a at t_a and arriving at q_b at t_b with zero velocity (braking)."""
    span = t_b - t_a
    if span <= 0.0:
        return np.where(t < t_b, q_a, q_b)
    return q_b + (q_a - q_b) * ((t_b - t) / span) ** 2


def half_cosine(t: np.ndarray, t_a: float, q_a: float, t_b: float, q_b: float) -> np.ndarray:
    """Half-cosine from q_a at t_a to q_b at t_b (zero slope at both ends), clamped outside."""
    span = t_b - t_a
    if span <= 0.0:
        return np.where(t < t_b, q_a, q_b)
    phase = np.clip((t - t_a) / span, 0.0, 1.0)
    return q_a + (q_b - q_a) * 0.5 * (1.0 - np.cos(np.pi * phase))
