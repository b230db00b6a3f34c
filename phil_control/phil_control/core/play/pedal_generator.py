"""Pedal generator: bass drum (right_pedal) and hi-hat (left_pedal) angles.

Both pedals only look at the two events of the generated interval; T is its length.

* Bass: ready 0 deg, press -20 deg. t_lift = max(0.6 T, T - 0.2), t_stay = 0.45 T. A strike
  (REST->HIT, HIT->HIT) is a half-cosine 0 -> -20 deg over [t_lift, T], so the beater lands exactly
  at the event; a return (HIT->REST, HIT->HIT) is a half-cosine -20 -> 0 deg over [0, t_stay].
  For T <= 0.2 s the whole interval is used: HIT->HIT adds a full-length return and a strike over
  the second half.
* Hi-hat: open -3 deg, closed -13 deg, from (closed now, closed next). For T > 0.2 s a change
  (open <-> closed) is a half-cosine between 0.1 T and 0.9 T; for T <= 0.2 s it takes the whole
  interval. Closed -> closed stays closed, open -> open stays open. (Upstream's "splash" variant
  is off there and not implemented.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.play.shapes import Transition, half_cosine

BASS_READY_RAD = 0.0
BASS_PRESS_RAD = math.radians(-20.0)
HIHAT_OPEN_RAD = math.radians(-3.0)
HIHAT_CLOSED_RAD = math.radians(-13.0)
SHORT_INTERVAL_S = 0.2


@dataclass(frozen=True)
class PedalPlan:
    """Pedal motion over one interval.

    Attributes:
        start_time_s: Interval start, score time, s.
        end_time_s: Interval end, score time, s.
        bass: Bass drum transition (HIT = kick at that event).
        hihat: Hi-hat transition (HIT = pedal closed at that event).
    """

    start_time_s: float
    end_time_s: float
    bass: Transition
    hihat: Transition

    @classmethod
    def between(
        cls,
        start_time_s: float,
        end_time_s: float,
        kick: tuple[bool, bool],
        hihat_closed: tuple[bool, bool],
    ) -> PedalPlan:
        """Plan from the kick and hi-hat flags of the interval's two events."""
        return cls(
            start_time_s,
            end_time_s,
            Transition.between(*kick),
            Transition.between(*hihat_closed),
        )

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Right (bass) and left (hi-hat) pedal angles (M,) in rad at score times (M,)."""
        t = np.atleast_1d(np.asarray(times_s, dtype=float)) - self.start_time_s
        duration = self.end_time_s - self.start_time_s
        return bass_angle_rad(t, duration, self.bass), hihat_angle_rad(t, duration, self.hihat)


def bass_angle_rad(t: np.ndarray, duration_s: float, transition: Transition) -> np.ndarray:
    """Bass pedal angle at times relative to the interval start."""
    ready, press, duration = BASS_READY_RAD, BASS_PRESS_RAD, duration_s
    angle = np.full(t.shape, ready)
    if duration <= 0.0:
        return np.full(t.shape, press if transition.ends_in_hit else ready)
    starts_in_hit = transition in (Transition.HIT_TO_REST, Transition.HIT_TO_HIT)
    if duration <= SHORT_INTERVAL_S:
        strike_start = 0.5 * duration if transition is Transition.HIT_TO_HIT else 0.0
        return_end = duration
    else:
        strike_start = max(0.6 * duration, duration - 0.2)
        return_end = 0.45 * duration
    if starts_in_hit:
        returning = half_cosine(t, 0.0, press, return_end, ready) - ready
        angle += np.where(t < return_end, returning, 0.0)
    if transition.ends_in_hit:
        striking = half_cosine(t, strike_start, ready, duration, press) - ready
        angle += np.where(t > strike_start, striking, 0.0)
    return angle


def hihat_angle_rad(t: np.ndarray, duration_s: float, transition: Transition) -> np.ndarray:
    """Hi-hat pedal angle at times relative to the interval start."""
    closed, opened = HIHAT_CLOSED_RAD, HIHAT_OPEN_RAD
    if transition is Transition.REST_TO_REST:
        return np.full(t.shape, opened)
    if transition is Transition.HIT_TO_HIT:
        return np.full(t.shape, closed)
    start, end = (opened, closed) if transition is Transition.REST_TO_HIT else (closed, opened)
    if duration_s <= SHORT_INTERVAL_S:
        return half_cosine(t, 0.0, start, duration_s, end)
    return half_cosine(t, 0.1 * duration_s, start, 0.9 * duration_s, end)
