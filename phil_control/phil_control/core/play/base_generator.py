"""Base (arm path) generator: where each stick tip is between drums, and the base wrist angle.

Per arm and window: the next stick hit of that arm is looked for within 1.2 s after
the window's first event. REST->HIT, HIT->HIT and HIT->REST / REST->REST follow; a motion that
started in an earlier window continues until its hit (start time = the time stored in the arm's
context). Between two different drums the tip follows a cubic Bezier curve P0..P3 whose inner
points sit at 1/3 and 2/3 of the way in x-y, with z(P1) = z0 and z(P2) = z3 + h,
h = 0.08 + 0.6 |z3 - z0| m, so the stick comes down onto the target from above; the same drum
means staying. Progress along the curve is s = 3 tau^2 - 2 tau^3 over [start, hit], and the base
wrist angle moves linearly in s between the two drums' impact wrist angles.

The motion towards a hit is stored in the context (target drum and time), so it continues to
the same place even when later look-ahead changes (a PAUSE truncating the score); upstream
re-derived it from the look-ahead, which gives the same result whenever the score is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.play.robot import PlayRobot, StrikeTarget
from phil_control.core.play.shapes import Transition, smoothstep
from phil_control.core.score import ScoreEvent, coordinate_id

#: How far ahead an arm looks for its next hit, s.
HIT_LOOKAHEAD_S = 1.2
#: Height of the second Bezier control point above the target: base + gain * |dz|, m.
CLEARANCE_BASE_M = 0.08
CLEARANCE_GAIN = 0.6
# Upstream compares times in 1e-4 s ticks and widens the look-ahead by 1e-5 s.
_TICKS_PER_S = 10_000
_LOOKAHEAD_SLACK_S = 1e-5


@dataclass(frozen=True)
class ArmContext:
    """What one arm is doing at the start of a window.

    Attributes:
        transition: The arm's current transition.
        drum: Coordinate id (1..9) the arm starts from (the last drum it struck or rests over).
        start_time_s: Start of the current motion, score time, s.
        target_drum: Drum of the hit the arm moves to (0 when resting).
        target_time_s: Time of that hit, score time, s (equal to start_time_s when resting).
    """

    drum: int
    transition: Transition = Transition.REST_TO_REST
    start_time_s: float = 0.0
    target_drum: int = 0
    target_time_s: float = 0.0


@dataclass(frozen=True)
class ArmSegment:
    """The tip path of one arm between two instants.

    Attributes:
        start: Drum target at the start.
        end: Drum target at the end (the same as start when staying).
        start_time_s: Start, score time, s.
        end_time_s: End (the hit, or the window end when staying), score time, s.
    """

    start: StrikeTarget
    end: StrikeTarget
    start_time_s: float
    end_time_s: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Tip positions (M, 3) in m and base wrist angles (M,) in rad at score times (M,)."""
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        span = self.end_time_s - self.start_time_s
        if span > 0.0:
            progress = smoothstep((times - self.start_time_s) / span)
        else:
            progress = np.where(times < self.end_time_s, 0.0, 1.0)
        wrists = self.start.wrist_rad + progress * (self.end.wrist_rad - self.start.wrist_rad)
        return bezier_path(self.start.position_m, self.end.position_m, progress), wrists


def bezier_path(
    start_m: Sequence[float], end_m: Sequence[float], progress: ArrayLike
) -> np.ndarray:
    """Points (M, 3) of the drum-to-drum curve at progress values s (M,) in [0, 1].

    Args:
        start_m: Start tip position, m.
        end_m: End tip position, m.
        progress: Path parameter s.

    Returns:
        The curve points; all equal to the start when start and end coincide.
    """
    s = np.atleast_1d(np.asarray(progress, dtype=float))[:, np.newaxis]
    p0 = np.asarray(start_m, dtype=float)
    p3 = np.asarray(end_m, dtype=float)
    if np.array_equal(p0, p3):
        return np.broadcast_to(p0, (s.shape[0], 3)).copy()
    clearance = CLEARANCE_BASE_M + CLEARANCE_GAIN * abs(p3[2] - p0[2])
    p1 = np.array([(2.0 * p0[0] + p3[0]) / 3.0, (2.0 * p0[1] + p3[1]) / 3.0, p0[2]])
    p2 = np.array([(p0[0] + 2.0 * p3[0]) / 3.0, (p0[1] + 2.0 * p3[1]) / 3.0, p3[2] + clearance])
    u = 1.0 - s
    return u**3 * p0 + 3.0 * u * u * s * p1 + 3.0 * u * s * s * p2 + s**3 * p3


def struck_drum(event: ScoreEvent, hand: str) -> int:
    """Coordinate id a hand strikes at an event (0 = none); hi-hat 5 with the pedal open is 9."""
    drum = event.right_drum if hand == 'right' else event.left_drum
    return coordinate_id(drum, event.hihat_closed)


def plan_arm_segment(
    robot: PlayRobot, events: Sequence[ScoreEvent], hand: str, context: ArmContext
) -> tuple[ArmSegment, ArmContext]:
    """Plan one arm's path for the first interval of a window.

    Args:
        robot: Strike targets.
        events: The window's events (at least two); events[0] -> events[1] is generated.
        hand: 'right' or 'left'.
        context: The arm's context at events[0].

    Returns:
        The segment covering [events[0], events[1]] (it may start earlier and end later) and
        the context at events[1].

    Raises:
        UnknownDrumError: A drum id without a strike point for this hand.
    """
    now = events[0].time_s
    hit_drum, hit_time = _next_hit(events, hand)
    current = struck_drum(events[0], hand)
    if current == 0 and context.transition.ends_in_hit:
        following = context
    elif current == 0:
        transition = Transition.REST_TO_HIT if hit_drum else Transition.REST_TO_REST
        following = _context(context.drum, transition, now, hit_drum, hit_time)
    else:
        transition = Transition.HIT_TO_HIT if hit_drum else Transition.HIT_TO_REST
        following = _context(current, transition, now, hit_drum, hit_time)
    start = robot.target(hand, following.drum)
    if following.target_drum:
        segment = ArmSegment(
            start,
            robot.target(hand, following.target_drum),
            following.start_time_s,
            following.target_time_s,
        )
    else:
        segment = ArmSegment(start, start, now, events[1].time_s)
    return segment, following


def arm_targets_at_events(
    robot: PlayRobot,
    events: Sequence[ScoreEvent],
    hand: str,
    context: ArmContext,
    count: int,
) -> list[tuple[np.ndarray, float]]:
    """Tip position and base wrist angle at events[1..count], planning ahead from `context`.

    Used for the waist choice of upcoming events; each step sees the window from that event on,
    as upstream does.

    Returns:
        Up to `count` (position (3,) m, wrist rad) pairs, fewer when the window is shorter.
    """
    targets = []
    for index in range(min(count, len(events) - 1)):
        segment, context = plan_arm_segment(robot, events[index:], hand, context)
        positions, wrists = segment.evaluate([events[index + 1].time_s])
        targets.append((positions[0], float(wrists[0])))
    return targets


def _context(
    drum: int, transition: Transition, now: float, hit_drum: int, hit_time: float
) -> ArmContext:
    if hit_drum:
        return ArmContext(drum, transition, now, hit_drum, hit_time)
    return ArmContext(drum, transition, now, 0, now)


def _next_hit(events: Sequence[ScoreEvent], hand: str) -> tuple[int, float]:
    """(drum, time) of the arm's first hit after events[0] within the look-ahead, else (0, 0)."""
    limit = _ticks(HIT_LOOKAHEAD_S + _LOOKAHEAD_SLACK_S)
    for event in events[1:]:
        if _ticks(event.time_s - events[0].time_s) > limit:
            break
        drum = struck_drum(event, hand)
        if drum:
            return drum, event.time_s
    return 0, 0.0


def _ticks(seconds: float) -> int:
    return math.floor(seconds * _TICKS_PER_S + 0.5)
