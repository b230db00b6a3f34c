"""State generator: elbow lift and wrist strike offsets added on top of the arm IK.

Time is cut into sub-steps of 0.05 beat units (each score row's interval split into
round(beat / 0.05) equal parts, at least one). At every sub-step boundary of the generated
interval each arm picks a segment: the next strike is looked for within 0.5 s; a strike
preparation already under way continues to its hit. T is the segment length, v the intensity
(1..7) of the strike at its end.

* Elbow: lift factor f_e = 0 for v <= 3, else 0.1 v + 0.5; lift 0 for T < 0.2 s, 15 deg * T / 0.5
  for T <= 0.5 s, 15 deg above; t_l = max(0.5 T, T - 0.2). REST->HIT and HIT->HIT: cubic 0 -> lift
  by t_l, cubic lift -> 0 at T (zero end velocities). Otherwise 0.
* Wrist: stay +20 deg, press -5 deg; lift magnitude 40 T + 10 deg for T < 0.5 s, else 30 deg;
  f_w = 0.25 v - 0.25 for v < 5, v / 3 - 2 / 3 from 5; lift = stay + magnitude * f_w (v = 1: no
  lift). REST->HIT: hold stay until 0.4 T, cubic to lift by max(0.7 T, T - 0.2), then a parabola
  from rest down to press at T. HIT->HIT: parabola press -> lift (arriving at rest) by 0.5 T, hold
  lift until 0.5 T (T <= 0.5 s) or T - 0.25, parabola from rest down to press at T. HIT->REST:
  parabola press -> stay arriving at rest at T.

Strike intensity: a stick hit always has v >= 1. A drum written with velocity 0 (upstream files
contain it) is played as velocity 1 (no lift, the stick falls from the stay height); a velocity
without a drum is ignored. Upstream let the arm travel to a velocity-0 drum without striking and
struck the air for a velocity without a drum.

A time exactly on a sub-step boundary belongs to the sub-step that ends there, so the offset at
a hit is that of the strike (press) and backward differences stay within one segment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.play.base_generator import struck_drum
from phil_control.core.play.shapes import (
    Transition,
    cubic_rest_to_rest,
    quadratic_from_rest,
    quadratic_to_rest,
)
from phil_control.core.score import ScoreEvent

SUB_STEP_BEAT_UNITS = 0.05
STRIKE_LOOKAHEAD_S = 0.5
ELBOW_STAY_DEG = 0.0
ELBOW_LIFT_DEG = 15.0
WRIST_STAY_DEG = 20.0
WRIST_PRESS_DEG = -5.0
WRIST_LIFT_DEG = 30.0
_TICKS_PER_S = 10_000


@dataclass(frozen=True)
class StrikeContext:
    """The strike segment of one arm in progress at a sub-step boundary.

    Attributes:
        transition: Segment kind.
        start_time_s: Segment start, score time, s.
        end_time_s: Segment end (the hit for REST->HIT / HIT->HIT), score time, s.
        intensity: Velocity 1..7 of the hit at the end (0 when none).
    """

    transition: Transition = Transition.REST_TO_REST
    start_time_s: float = 0.0
    end_time_s: float = 0.0
    intensity: int = 0

    def elbow_offset_rad(self, times_s: ArrayLike) -> np.ndarray:
        """Elbow offset (M,) in rad at score times (M,)."""
        return np.radians(elbow_offset_deg(self._relative(times_s), self.duration_s, self))

    def wrist_offset_rad(self, times_s: ArrayLike) -> np.ndarray:
        """Wrist offset (M,) in rad at score times (M,)."""
        return np.radians(wrist_offset_deg(self._relative(times_s), self.duration_s, self))

    @property
    def duration_s(self) -> float:
        """Segment length T, s."""
        return self.end_time_s - self.start_time_s

    def _relative(self, times_s: ArrayLike) -> np.ndarray:
        return np.atleast_1d(np.asarray(times_s, dtype=float)) - self.start_time_s


def strike_velocity(event: ScoreEvent, hand: str) -> int:
    """Intensity of a hand's stick hit at an event: 0 without a drum, else at least 1."""
    if not struck_drum(event, hand):
        return 0
    velocity = event.right_velocity if hand == 'right' else event.left_velocity
    return max(1, velocity)


def elbow_offset_deg(t: np.ndarray, duration_s: float, segment: StrikeContext) -> np.ndarray:
    """Elbow offset in degrees at times relative to the segment start."""
    t = np.asarray(t, dtype=float)
    if not segment.transition.ends_in_hit:
        return np.full(t.shape, ELBOW_STAY_DEG)
    v = segment.intensity
    factor = 0.0 if v <= 3 else 0.1 * v + 0.5
    if duration_s < 0.2:
        lift = 0.0
    elif duration_s <= 0.5:
        lift = ELBOW_LIFT_DEG * duration_s / 0.5
    else:
        lift = ELBOW_LIFT_DEG
    lift *= factor
    if lift == 0.0:
        return np.full(t.shape, ELBOW_STAY_DEG)
    t_lift = max(0.5 * duration_s, duration_s - 0.2)
    rising = cubic_rest_to_rest(t, 0.0, ELBOW_STAY_DEG, t_lift, ELBOW_STAY_DEG + lift)
    falling = cubic_rest_to_rest(t, t_lift, ELBOW_STAY_DEG + lift, duration_s, 0.0)
    return np.where(t < t_lift, rising, falling)


def wrist_lift_deg(duration_s: float, intensity: int) -> float:
    """Top of the wrist stroke, degrees above the impact angle, for a segment of length T."""
    if intensity <= 1:
        return WRIST_STAY_DEG
    factor = 0.25 * intensity - 0.25 if intensity < 5 else intensity / 3.0 - 2.0 / 3.0
    magnitude = 40.0 * duration_s + 10.0 if duration_s < 0.5 else WRIST_LIFT_DEG
    return WRIST_STAY_DEG + magnitude * factor


def wrist_offset_deg(t: np.ndarray, duration_s: float, segment: StrikeContext) -> np.ndarray:
    """Wrist offset in degrees at times relative to the segment start."""
    t = np.asarray(t, dtype=float)
    stay, press, duration = WRIST_STAY_DEG, WRIST_PRESS_DEG, duration_s
    transition = segment.transition
    if transition is Transition.REST_TO_REST:
        return np.full(t.shape, stay)
    if transition is Transition.HIT_TO_REST:
        return quadratic_to_rest(t, 0.0, press, duration, stay)
    lift = wrist_lift_deg(duration, segment.intensity)
    if transition is Transition.REST_TO_HIT:
        t_stay, t_lift = 0.4 * duration, max(0.7 * duration, duration - 0.2)
        rising = cubic_rest_to_rest(t, t_stay, stay, t_lift, lift)
        first = np.where(t < t_stay, stay, rising)
    else:
        t_stay = 0.5 * duration
        t_lift = 0.5 * duration if duration <= 0.5 else duration - 0.25
        rising = quadratic_to_rest(t, 0.0, press, t_stay, lift)
        first = np.where(t < t_stay, rising, lift)
    striking = quadratic_from_rest(t, t_lift, lift, duration, press)
    return np.where(t < t_lift, first, striking)


@dataclass(frozen=True)
class SubSteps:
    """Sub-step boundaries of a window.

    Attributes:
        times_s: (K,) boundary times, score time, s; times_s[0] is events[0].
        velocities: {'right': (K,), 'left': (K,)} strike intensity at each boundary.
        generated: Number of sub-steps in the generated (first) interval.
    """

    times_s: np.ndarray
    velocities: dict[str, np.ndarray]
    generated: int


def split_sub_steps(events: Sequence[ScoreEvent]) -> SubSteps:
    """Cut the window into 0.05-beat sub-steps, far enough for a 0.5 s look-ahead.

    Args:
        events: The window (at least two events).
    """
    times = [events[0].time_s]
    velocities = {hand: [strike_velocity(events[0], hand)] for hand in ('right', 'left')}
    for line in range(1, len(events)):
        steps = max(1, round(events[line].beat_units / SUB_STEP_BEAT_UNITS))
        start = events[line - 1].time_s
        step = (events[line].time_s - start) / steps
        for index in range(1, steps + 1):
            times.append(events[line].time_s if index == steps else start + index * step)
            for hand in velocities:
                velocities[hand].append(
                    strike_velocity(events[line], hand) if index == steps else 0
                )
        if _ticks(events[line].time_s - events[1].time_s) > _ticks(STRIKE_LOOKAHEAD_S):
            break
    generated = max(1, round(events[1].beat_units / SUB_STEP_BEAT_UNITS))
    return SubSteps(
        np.array(times),
        {hand: np.array(v, dtype=int) for hand, v in velocities.items()},
        generated,
    )


def next_strike_segment(
    sub_steps: SubSteps, index: int, hand: str, context: StrikeContext
) -> StrikeContext:
    """The segment an arm follows from sub-step boundary `index` (upstream get_hit_segment)."""
    times, velocities = sub_steps.times_s, sub_steps.velocities[hand]
    now = float(times[index])
    hit_velocity, hit_time = 0, float(times[index + 1])
    for later in range(index + 1, len(times)):
        if later != index + 1 and _ticks(times[later] - now) > _ticks(STRIKE_LOOKAHEAD_S):
            break
        if velocities[later]:
            hit_velocity, hit_time = int(velocities[later]), float(times[later])
            break
    if velocities[index] == 0:
        if context.transition.ends_in_hit and context.end_time_s > now:
            return context
        if hit_velocity:
            return StrikeContext(Transition.REST_TO_HIT, now, hit_time, hit_velocity)
        return StrikeContext(Transition.REST_TO_REST, now, float(times[index + 1]), 0)
    if hit_velocity:
        return StrikeContext(Transition.HIT_TO_HIT, now, hit_time, hit_velocity)
    return StrikeContext(
        Transition.HIT_TO_REST, now, float(times[index + 1]), int(velocities[index])
    )


@dataclass(frozen=True)
class StrikePlan:
    """The strike segments of one arm over a window's generated interval.

    Attributes:
        boundaries_s: (S + 1,) sub-step boundaries of the interval, score time, s.
        segments: S segments, one per sub-step.
    """

    boundaries_s: np.ndarray
    segments: tuple[StrikeContext, ...]

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Elbow and wrist offsets (M,) in rad at score times (M,) inside the interval."""
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        owners = np.searchsorted(self.boundaries_s, times, side='left') - 1
        owners = np.clip(owners, 0, len(self.segments) - 1)
        elbow = np.zeros(times.shape)
        wrist = np.zeros(times.shape)
        done: set[StrikeContext] = set()
        for segment in self.segments:
            if segment in done:
                continue
            done.add(segment)
            mask = np.isin(owners, [i for i, s in enumerate(self.segments) if s == segment])
            if mask.any():
                elbow[mask] = segment.elbow_offset_rad(times[mask])
                wrist[mask] = segment.wrist_offset_rad(times[mask])
        return elbow, wrist


def plan_strikes(
    sub_steps: SubSteps, hand: str, context: StrikeContext
) -> tuple[StrikePlan, StrikeContext]:
    """Strike segments of one arm for the generated interval and the context at its end."""
    segments = []
    for index in range(sub_steps.generated):
        context = next_strike_segment(sub_steps, index, hand, context)
        segments.append(context)
    boundaries = sub_steps.times_s[: sub_steps.generated + 1]
    return StrikePlan(boundaries, tuple(segments)), context


def _ticks(seconds: float) -> int:
    return math.floor(seconds * _TICKS_PER_S + 0.5)
