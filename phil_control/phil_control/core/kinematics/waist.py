"""Waist angle selection and waist trajectory while playing (upstream's base motion rules).

The waist is not solved by the IK: for each pair of stick targets it is chosen from a scan over
the waist range, preferring poses where both shoulder_1 angles add up to about 180 deg (arms spread
symmetrically around the target) and the middle of the feasible waist range. Between events the
waist follows a monotone cubic Hermite curve towards a look-ahead of the next optima.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.kinematics.geometry import ARM_JOINT_NAMES, ArmGeometry, JointLimits
from phil_control.core.kinematics.ik import IkFailure, solve_arms_batch
from phil_control.core.profiles import hermite_segment

#: Upstream scans the waist in 0.1 deg steps.
DEFAULT_WAIST_STEP_RAD = math.radians(0.1)

_SHOULDER_SUM_WEIGHT = 2.0
_RANGE_CENTRE_WEIGHT = 1.0
_LOOKAHEAD_EVENTS = 3
# Missing look-ahead events are padded one second apart with the last known optimum (upstream).
_PADDING_INTERVAL_S = 1.0
# Fritsch-Carlson: slopes with alpha^2 + beta^2 <= 9 keep a cubic Hermite piece monotone.
_MONOTONE_SLOPE_LIMIT = 3.0

_WAIST = ARM_JOINT_NAMES.index('waist')
_RIGHT_SHOULDER_1 = ARM_JOINT_NAMES.index('right_shoulder_1')
_LEFT_SHOULDER_1 = ARM_JOINT_NAMES.index('left_shoulder_1')


@dataclass(frozen=True)
class WaistChoice:
    """Best waist angle for one pair of targets and the feasible waist range.

    Attributes:
        optimal_rad: Chosen waist angle, rad.
        feasible_min_rad: First feasible angle of the scan, rad.
        feasible_max_rad: Last feasible angle of the scan, rad. Angles between the two are not
            all guaranteed feasible (upstream's definition of the range).
    """

    optimal_rad: float
    feasible_min_rad: float
    feasible_max_rad: float


@dataclass(frozen=True)
class WaistFailure:
    """No waist angle of the scan gives a valid IK solution.

    Attributes:
        detail: Human-readable summary.
        sample_failure: The IK failure at the scan angle closest to 0, as an example of why.
    """

    detail: str
    sample_failure: IkFailure


def waist_scan_angles(limits: JointLimits, step_rad: float = DEFAULT_WAIST_STEP_RAD) -> np.ndarray:
    """Angles of the waist scan: the waist joint range in steps of ``step_rad`` (ends included).

    With upstream's -90..90 deg limits and the default step these are upstream's 1801 angles.

    Raises:
        ValueError: If ``step_rad`` is not a positive finite number.
    """
    if not (math.isfinite(step_rad) and step_rad > 0.0):
        raise ValueError(f'step_rad must be positive and finite, got {step_rad!r}')
    lower, upper = limits.bounds_rad['waist']
    return np.linspace(lower, upper, round((upper - lower) / step_rad) + 1)


def choose_waist(
    geometry: ArmGeometry,
    limits: JointLimits,
    right_tip_m: ArrayLike,
    left_tip_m: ArrayLike,
    right_wrist_rad: float,
    left_wrist_rad: float,
    step_rad: float = DEFAULT_WAIST_STEP_RAD,
) -> WaistChoice | WaistFailure:
    """Pick the waist angle for one pair of stick targets (one vectorised IK call).

    Cost per feasible angle q0: 2 cos(q1 + q2) + cos(w |q0 - q_min|), w = 2 pi / (q_max - q_min),
    with q1, q2 the right and left shoulder_1 angles; the first minimum wins.

    Args:
        geometry: Link lengths.
        limits: Joint limits; the waist range is the scan range.
        right_tip_m: Right stick tip (x, y, z), m.
        left_tip_m: Left stick tip (x, y, z), m.
        right_wrist_rad: Right wrist angle, rad.
        left_wrist_rad: Left wrist angle, rad.
        step_rad: Scan step, rad.

    Returns:
        ``WaistChoice``, or ``WaistFailure`` when no scanned angle is feasible.
    """
    angles = waist_scan_angles(limits, step_rad)
    batch = solve_arms_batch(
        geometry, limits, right_tip_m, left_tip_m, angles, right_wrist_rad, left_wrist_rad
    )
    feasible = np.flatnonzero(batch.ok)
    if feasible.size == 0:
        sample = batch.result(int(np.argmin(np.abs(angles))))
        assert isinstance(sample, IkFailure)
        return WaistFailure(
            f'no waist angle in [{math.degrees(angles[0]):.1f}, {math.degrees(angles[-1]):.1f}] '
            f'deg reaches both targets; at {math.degrees(angles[np.argmin(np.abs(angles))]):.1f} '
            f'deg: {sample.detail}',
            sample,
        )
    solutions = batch.positions_rad[feasible]
    waist = solutions[:, _WAIST]
    feasible_min, feasible_max = float(waist[0]), float(waist[-1])
    span = feasible_max - feasible_min
    if span <= 0.0:
        return WaistChoice(feasible_min, feasible_min, feasible_max)
    costs = _SHOULDER_SUM_WEIGHT * np.cos(
        solutions[:, _RIGHT_SHOULDER_1] + solutions[:, _LEFT_SHOULDER_1]
    ) + _RANGE_CENTRE_WEIGHT * np.cos(2.0 * np.pi / span * np.abs(waist - feasible_min))
    return WaistChoice(float(waist[np.argmin(costs)]), feasible_min, feasible_max)


@dataclass(frozen=True)
class WaistKeyframe:
    """A waist angle at a time.

    Attributes:
        time_s: Time, s (any common origin, e.g. score time).
        angle_rad: Waist angle, rad.
    """

    time_s: float
    angle_rad: float


@dataclass(frozen=True)
class UpcomingWaist:
    """The waist choice for an upcoming event.

    Attributes:
        time_s: Event time, s.
        choice: ``choose_waist`` result for that event's targets.
    """

    time_s: float
    choice: WaistChoice


@dataclass(frozen=True)
class WaistSegment:
    """Cubic Hermite waist motion from ``start`` to ``end``.

    Attributes:
        start: Start time and angle.
        end: End time and angle; the next call's ``current``.
        start_velocity_rad_s: Slope at the start, rad/s.
        end_velocity_rad_s: Slope at the end, rad/s.
    """

    start: WaistKeyframe
    end: WaistKeyframe
    start_velocity_rad_s: float
    end_velocity_rad_s: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Waist angles (M,) in rad and velocities (M,) in rad/s at absolute times (M,) in s.

        Times outside the segment are clamped to it.
        """
        segment = hermite_segment(
            self.start.angle_rad,
            self.start_velocity_rad_s,
            self.end.angle_rad,
            self.end_velocity_rad_s,
            self.end.time_s - self.start.time_s,
        )
        relative = np.atleast_1d(np.asarray(times_s, dtype=float)) - self.start.time_s
        positions, velocities = segment.evaluate(relative)
        return positions[:, 0], velocities[:, 0]


def plan_waist_segment(
    current: WaistKeyframe,
    upcoming: Sequence[UpcomingWaist],
    previous: WaistKeyframe | None = None,
) -> WaistSegment:
    """Plan the waist from the current event to the next one.

    The next angle extrapolates the average slope from the current angle towards the optima of the
    next three events; if it leaves (or touches the edge of) that event's feasible range the middle
    of the range is used instead. The angle after it is found the same way and only shapes the end
    slope. Slopes follow Fritsch-Carlson: zero at local extrema, scaled down when
    sqrt(alpha^2 + beta^2) > 3 so the piece stays monotone.

    Args:
        current: Waist at the current event (the previous segment's ``end``).
        upcoming: Choices of the next events in time order; at least one, only the first three
            are used, missing ones are padded 1 s apart with the last optimum.
        previous: Waist at the event before ``current``; None at the start of a song (zero start
            slope).

    Returns:
        The segment from ``current`` to the next event.

    Raises:
        ValueError: If ``upcoming`` is empty, a number is not finite, or times do not increase.
    """
    if not upcoming:
        raise ValueError('upcoming must hold at least one event')
    events = list(upcoming[:_LOOKAHEAD_EVENTS])
    times = [current.time_s] + [event.time_s for event in events]
    optima = [current.angle_rad] + [event.choice.optimal_rad for event in events]
    ranges = [(math.nan, math.nan)] + [
        (event.choice.feasible_min_rad, event.choice.feasible_max_rad) for event in events
    ]
    while len(times) < _LOOKAHEAD_EVENTS + 1:
        times.append(times[-1] + _PADDING_INTERVAL_S)
        optima.append(optima[-1])
        ranges.append(ranges[-1])
    if previous is None:
        previous = WaistKeyframe(current.time_s - _PADDING_INTERVAL_S, current.angle_rad)
    _check_keyframes(previous, times, optima, ranges)

    next_angle = _extrapolate(current.angle_rad, times[0], times[1:], optima[1:], ranges[1])
    after_next = _extrapolate(next_angle, times[1], times[2:], optima[2:], ranges[2])
    start_slope, end_slope = monotone_slopes(
        (previous.time_s, times[0], times[1], times[2]),
        (previous.angle_rad, current.angle_rad, next_angle, after_next),
    )
    return WaistSegment(current, WaistKeyframe(times[1], next_angle), start_slope, end_slope)


def monotone_slopes(times_s: Sequence[float], angles_rad: Sequence[float]) -> tuple[float, float]:
    """Fritsch-Carlson slopes at the two middle points of four keyframes.

    Args:
        times_s: Four strictly increasing times, s.
        angles_rad: Four angles, rad.

    Returns:
        Slopes (rad/s) at keyframes 1 and 2 for a monotone cubic Hermite piece between them.
    """
    secants = [
        (angles_rad[i + 1] - angles_rad[i]) / (times_s[i + 1] - times_s[i]) for i in range(3)
    ]
    if angles_rad[1] == angles_rad[2]:
        return 0.0, 0.0
    start = 0.0 if secants[0] * secants[1] <= 0.0 else 0.5 * (secants[0] + secants[1])
    end = 0.0 if secants[1] * secants[2] <= 0.0 else 0.5 * (secants[1] + secants[2])
    alpha, beta = start / secants[1], end / secants[1]
    magnitude = math.hypot(alpha, beta)
    if magnitude > _MONOTONE_SLOPE_LIMIT:
        start *= _MONOTONE_SLOPE_LIMIT / magnitude
        end *= _MONOTONE_SLOPE_LIMIT / magnitude
    return start, end


def _extrapolate(
    angle: float,
    time: float,
    later_times: Sequence[float],
    later_optima: Sequence[float],
    feasible: tuple[float, float],
) -> float:
    """Angle at ``later_times[0]`` along the mean slope towards ``later_optima``."""
    slopes = [
        (optimum - angle) / (later - time)
        for later, optimum in zip(later_times, later_optima, strict=True)
    ]
    candidate = angle + sum(slopes) / len(slopes) * (later_times[0] - time)
    lower, upper = feasible
    if candidate <= lower or candidate >= upper:
        return 0.5 * (lower + upper)
    return candidate


def _check_keyframes(
    previous: WaistKeyframe,
    times: Sequence[float],
    optima: Sequence[float],
    ranges: Sequence[tuple[float, float]],
) -> None:
    numbers = [previous.time_s, previous.angle_rad, *times, *optima]
    numbers += [bound for feasible in ranges[1:] for bound in feasible]
    if not all(math.isfinite(number) for number in numbers):
        raise ValueError(
            f'waist keyframes must be finite: times {times}, optima {optima}, '
            f'ranges {ranges[1:]}, previous {previous}'
        )
    all_times = [previous.time_s, *times]
    if any(later <= earlier for earlier, later in zip(all_times[:-1], all_times[1:], strict=True)):
        raise ValueError(
            f'waist keyframe times must increase: previous {previous.time_s} s, '
            f'current and upcoming {times} s'
        )
