"""Stick-pad and pedal impact detection from time-stamped joint positions (pure, ROS-free).

Model: every stick instrument is a horizontal disc per hand, at the height of that hand's strike
point, centred on the instrument's ``center_m`` with its ``radius_m`` (kinematic frame). A hand
hits when its stick tip (URDF forward kinematics) crosses a disc's plane downward inside the
disc; the crossing time and point are interpolated linearly between samples, so the time is
resolved far below the sampling period. When one sample interval crosses several discs, the
instrument whose strike point is nearest to the crossing point wins. The hi-hat disc is the
open or the closed hi-hat depending on the hi-hat pedal. The discs and the pedals' hit angles
are built from the kit in :mod:`.impact_targets`.

Pedals: the bass drum is hit when its pedal reaches the end of its stroke, the press angle
(upstream -20 deg). Upstream strokes are half-cosines that arrive there with zero speed, and a
lagging drive never quite gets there, so a hit is either the downward crossing of the press
angle or, failing that, the pedal's turning point (a local minimum, time from a parabola
through three samples) within a tolerance above it. The hi-hat pedal can report its closing
(upstream closed angle -13 deg) the same way.

Debounce: after an impact a limb is re-armed only once it has risen above the hit level by a
margin and a minimum interval has passed, so one stroke gives one impact
(:mod:`.impact_debounce`).

Use :class:`ImpactDetector` for streaming (feed successive batches) and :func:`detect_impacts`
for a whole recorded ``(t, q)`` trajectory; both give the same events.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_description.core import RobotModel
from phil_hardware.sim.impact_debounce import Arming
from phil_hardware.sim.impact_targets import HAND_LIMBS, Limb, Pad, Pedal, build_pads, build_pedals

_KEPT_SAMPLES = 2  # samples carried to the next batch (a turning point needs three)


@dataclass(frozen=True)
class ImpactConfig:
    """Detection parameters.

    Attributes:
        radius_scale: Factor on every instrument radius (pad size used for detection). Half
            by default: the playing area around the strike points; full cymbal radii overlap
            in the upstream kit layout (the left crash covers the hi-hat, which the stick
            reaches below the crash's edge).
        hand_tolerance_m: A stick tip turning back up within this height above a pad hits it
            (a lagging arm arrives at the strike point with no downward speed left).
        rearm_height_m: A hand re-arms once its tip is this far above the last hit plane [m].
        min_interval_s: Minimum time between two impacts of one limb [s].
        bass_press_angle_rad: Pedal angle at which the bass beater hits (stroke end).
        pedal_tolerance_rad: A pedal turning back within this angle above its hit angle hits.
        pedal_rearm_rad: A pedal re-arms once this far back above its hit angle [rad].
        hihat_closed_below_rad: Hi-hat pedal angle below which the hi-hat counts as closed.
        hihat_close_event: Also report the hi-hat pedal closing (left foot, closed hi-hat).
        hihat_close_angle_rad: Pedal angle of that close event (stroke end).
        open_hihat: Kit name of the open hi-hat disc (the one moved by the pedal).
        closed_hihat: Kit name of the closed hi-hat disc.
        full_scale_speed_m_s: Tip speed that maps to the strongest velocity grade 7.
        full_scale_pedal_speed_rad_s: Pedal speed that maps to grade 7.
    """

    radius_scale: float = 0.5
    hand_tolerance_m: float = 0.01
    rearm_height_m: float = 0.01
    min_interval_s: float = 0.03
    bass_press_angle_rad: float = math.radians(-20.0)
    pedal_tolerance_rad: float = math.radians(1.0)
    pedal_rearm_rad: float = math.radians(5.0)
    hihat_closed_below_rad: float = math.radians(-8.0)
    hihat_close_event: bool = False
    hihat_close_angle_rad: float = math.radians(-13.0)
    open_hihat: str = 'open hihat'
    closed_hihat: str = 'closed hihat'
    full_scale_speed_m_s: float = 3.0
    full_scale_pedal_speed_rad_s: float = 10.0

    def __post_init__(self) -> None:
        """Validate once.

        Raises:
            ValueError: Naming the first field out of range.
        """
        for name in ('radius_scale', 'full_scale_speed_m_s', 'full_scale_pedal_speed_rad_s'):
            if not getattr(self, name) > 0:
                raise ValueError(f'ImpactConfig.{name} must be > 0')
        for name in (
            'rearm_height_m',
            'min_interval_s',
            'pedal_tolerance_rad',
            'pedal_rearm_rad',
            'hand_tolerance_m',
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f'ImpactConfig.{name} must be >= 0')


@dataclass(frozen=True)
class Impact:
    """One detected impact.

    Attributes:
        instrument: Kit instrument name.
        instrument_id: HIT table id of the instrument.
        limb: What struck.
        time_s: Interpolated crossing time, on the clock of the input samples [s].
        speed: Stick-tip speed [m/s] or pedal speed [rad/s] at the crossing.
        position_m: Stick-tip crossing point (kinematic frame) [m]; None for a pedal.
    """

    instrument: str
    instrument_id: int
    limb: Limb
    time_s: float
    speed: float
    position_m: tuple[float, float, float] | None = None

    def as_dict(self) -> dict:
        """JSON-ready mapping (limb as its string value)."""
        result = asdict(self)
        result['limb'] = self.limb.value
        return result


def velocity_grade(impact: Impact, config: ImpactConfig) -> int:
    """Map an impact's speed to the 1..7 strike intensity of the score format."""
    full_scale = (
        config.full_scale_speed_m_s
        if impact.position_m is not None
        else config.full_scale_pedal_speed_rad_s
    )
    return int(min(7, max(1, math.ceil(7.0 * impact.speed / full_scale))))


class ImpactDetector:
    """Streaming detector: feed time-ordered batches of joint samples, get impacts.

    Args:
        model: Robot model (FK, kit, joint order).
        config: Detection parameters.

    Raises:
        KeyError: If a configured hi-hat name or a pedal joint is not in the model.
    """

    def __init__(self, model: RobotModel, config: ImpactConfig | None = None) -> None:
        self.model = model
        self.config = config or ImpactConfig()
        self._pads = build_pads(model, self.config)
        self._pedals = build_pedals(model, self.config)
        self._arming = {limb: Arming() for limb in Limb}
        self._pedal_arming = [Arming() for _ in self._pedals]
        self._kept_t = np.empty(0)
        self._kept_q = np.empty((0, len(model.joint_names)))

    def reset(self) -> None:
        """Forget the previous samples and re-arm every limb."""
        self._arming = {limb: Arming() for limb in Limb}
        self._pedal_arming = [Arming() for _ in self._pedals]
        self._kept_t = np.empty(0)
        self._kept_q = np.empty((0, len(self.model.joint_names)))

    def feed(self, t_s: ArrayLike, q_rad: ArrayLike) -> list[Impact]:
        """Process the next samples (continuing from the previous call).

        Args:
            t_s: Sample times, shape (N,), non-decreasing and after the previous batch [s].
            q_rad: Joint positions, shape (N, joints) in model joint order [rad].

        Returns:
            Impacts found with these samples (a pedal turning point needs the sample after
            it, so it may come one call late), ordered by time.

        Raises:
            ValueError: On mismatched shapes, non-finite values or times going backwards.
        """
        t = np.asarray(t_s, dtype=float).reshape(-1)
        q = np.asarray(q_rad, dtype=float)
        joints = len(self.model.joint_names)
        if q.shape != (len(t), joints):
            raise ValueError(f'q_rad must have shape ({len(t)}, {joints}), got {q.shape}')
        if len(t) == 0:
            return []
        if not (np.isfinite(t).all() and np.isfinite(q).all()):
            raise ValueError('impact detection needs finite times and joint positions')
        # The last samples of the previous call join this one, so crossings and turning points
        # across the boundary are seen; ``kept`` of them were examined already.
        kept = len(self._kept_t)
        t = np.concatenate((self._kept_t, t))
        q = np.vstack((self._kept_q, q))
        if np.any(np.diff(t) < 0):
            raise ValueError('sample times must not decrease')
        self._kept_t, self._kept_q = t[-_KEPT_SAMPLES:].copy(), q[-_KEPT_SAMPLES:].copy()
        if len(t) < 2:
            return []
        first = max(kept - 1, 0)  # first new sample interval
        for arming in (*self._arming.values(), *self._pedal_arming):
            arming.start = kept
        dt = np.diff(t)
        impacts = []
        for hand_index, tips in enumerate(self.model.stick_tip_positions(q)):
            impacts += self._stick_impacts(hand_index, t, dt, q, np.asarray(tips), first)
        for pedal, arming in zip(self._pedals, self._pedal_arming, strict=True):
            impacts += self._pedal_impacts(pedal, arming, t, q[:, pedal.joint], first)
        return sorted(impacts, key=lambda impact: impact.time_s)

    def _stick_impacts(
        self,
        hand_index: int,
        t: np.ndarray,
        dt: np.ndarray,
        q: np.ndarray,
        tips: np.ndarray,
        first: int,
    ) -> list[Impact]:
        z = tips[:, 2]
        best = self._nearest_pad_crossings(hand_index, t, dt, q, tips, first)
        limb = HAND_LIMBS[hand_index]
        arming = self._arming[limb]
        impacts = []
        for i in sorted(best):
            frac, pad, point, _ = best[i]
            time_s = float(t[i] + frac * dt[i])
            if arming.try_accept(
                int(i),
                time_s,
                pad.height_m,
                z,
                self.config.rearm_height_m,
                self.config.min_interval_s,
            ):
                speed = float(np.linalg.norm(tips[i + 1] - tips[i]) / dt[i]) if dt[i] else 0.0
                impacts.append(
                    Impact(
                        pad.instrument,
                        pad.instrument_id,
                        limb,
                        time_s,
                        speed,
                        tuple(float(v) for v in point),
                    )
                )
        arming.end_batch(z, self.config.rearm_height_m)
        return impacts

    def _nearest_pad_crossings(
        self,
        hand_index: int,
        t: np.ndarray,
        dt: np.ndarray,
        q: np.ndarray,
        tips: np.ndarray,
        first: int,
    ) -> dict[int, tuple[float, Pad, np.ndarray, float]]:
        """Per sample interval from ``first``, the pad the tip reaches nearest its strike point.

        Returns:
            ``{interval: (fraction of the interval, pad, crossing point, distance to strike)}``.
        """
        z = tips[:, 2]
        best: dict[int, tuple[float, Pad, np.ndarray, float]] = {}
        turning = _lowest_points(z, first)
        tolerance = self.config.hand_tolerance_m
        for pad in self._pads[hand_index]:
            crossing = (z[:-1] > pad.height_m) & (z[1:] <= pad.height_m)
            crossing[:first] = False
            near = turning & (z[1:] > pad.height_m) & (z[1:] <= pad.height_m + tolerance)
            for i in np.nonzero(crossing | near)[0]:
                if crossing[i]:
                    frac = (z[i] - pad.height_m) / (z[i] - z[i + 1])
                else:  # the vertex of the turn, within this interval or the next
                    vertex = _vertex_time(t[i : i + 3], z[i : i + 3])
                    frac = min(1.0, (vertex - t[i]) / dt[i]) if dt[i] else 1.0
                point = tips[i] + frac * (tips[i + 1] - tips[i])
                if not self._pad_present(pad, point, q, i, frac):
                    continue
                distance = float(np.linalg.norm(point - pad.strike_m))
                if i not in best or distance < best[i][3]:
                    best[i] = (frac, pad, point, distance)
        return best

    def _pad_present(
        self, pad: Pad, point: np.ndarray, q: np.ndarray, i: int, frac: float
    ) -> bool:
        """Whether ``point`` is on ``pad``, a hi-hat disc counting only in its pedal state."""
        if np.hypot(*(point[:2] - pad.center_xy)) > pad.radius_m:
            return False
        if pad.gate_joint < 0:
            return True
        gate = q[:, pad.gate_joint]
        pedal = gate[i] + frac * (gate[i + 1] - gate[i])
        return (pedal > self.config.hihat_closed_below_rad) == pad.gate_open

    def _pedal_impacts(
        self, pedal: Pedal, arming: Arming, t: np.ndarray, angle: np.ndarray, first: int
    ) -> list[Impact]:
        level = pedal.angle_rad
        step = np.diff(angle)
        candidates = []  # (time, sample index, speed)
        crossing = (angle[:-1] > level) & (angle[1:] <= level)
        for i in np.nonzero(crossing[first:])[0] + first:
            frac = (angle[i] - level) / (angle[i] - angle[i + 1])
            duration = t[i + 1] - t[i]
            speed = float(-step[i] / duration) if duration else 0.0
            candidates.append((float(t[i] + frac * duration), int(i), speed))
        # Turning points that stay above the level but within the tolerance of it.
        turning = _lowest_points(angle, first)[:-1]
        near = (angle[1:-1] > level) & (angle[1:-1] <= level + self.config.pedal_tolerance_rad)
        for j in np.nonzero(turning & near)[0] + 1:
            candidates.append((_vertex_time(t[j - 1 : j + 2], angle[j - 1 : j + 2]), int(j), 0.0))
        impacts = []
        for time_s, index, speed in sorted(candidates):
            if arming.try_accept(
                index,
                time_s,
                level,
                angle,
                self.config.pedal_rearm_rad,
                self.config.min_interval_s,
            ):
                impacts.append(
                    Impact(pedal.instrument, pedal.instrument_id, pedal.limb, time_s, speed)
                )
        arming.end_batch(angle, self.config.pedal_rearm_rad)
        return impacts


def _lowest_points(values: np.ndarray, first: int) -> np.ndarray:
    """Per sample interval ``i``: whether sample ``i + 1`` is a lowest point of ``values``.

    Telling needs the sample after it, so the last interval is never one, and the previous
    batch could not tell for its last interval: intervals are looked at from ``first - 1``.
    """
    step = np.diff(values)
    turning = np.zeros(len(step), dtype=bool)
    turning[:-1] = (step[:-1] < 0) & (step[1:] >= 0)
    turning[: max(first - 1, 0)] = False
    return turning


def _vertex_time(t: np.ndarray, value: np.ndarray) -> float:
    """Time of the extremum of the parabola through three samples, kept within them."""
    t0, t1, t2 = t
    v0, v1, v2 = value
    slope_left = (v1 - v0) / (t1 - t0) if t1 > t0 else 0.0
    slope_right = (v2 - v1) / (t2 - t1) if t2 > t1 else 0.0
    curvature = (slope_right - slope_left) / (t2 - t0) if t2 > t0 else 0.0
    if curvature <= 0:
        return float(t1)
    # The derivative of the parabola is zero where the mean slopes balance.
    vertex = 0.5 * (t0 + t1) - slope_left / (2.0 * curvature)
    return float(min(max(vertex, t0), t2))


def detect_impacts(
    model: RobotModel, t_s: ArrayLike, q_rad: ArrayLike, config: ImpactConfig | None = None
) -> list[Impact]:
    """Detect every impact of a recorded trajectory (offline use: benchmarks, plots).

    Args:
        model: Robot model.
        t_s: Sample times, shape (N,) [s].
        q_rad: Joint positions, shape (N, joints) [rad].
        config: Detection parameters.

    Returns:
        Impacts ordered by time.
    """
    return ImpactDetector(model, config).feed(t_s, q_rad)
