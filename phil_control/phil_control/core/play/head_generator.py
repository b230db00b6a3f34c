"""Head generator: yaw towards the right-hand drum and a nod on the beat.

* Yaw (world) = atan2(y, x) of the right-hand strike point of the drum the right stick plays next,
  minus 90 deg, reached with a smoothstep across the window (the previous drum is kept when the
  next right note is 0). The head_yaw joint is the world yaw minus the waist angle.
  Deviation from upstream: a window moves the yaw by at most `rate * T / 1.5` (the smoothstep's
  peak speed is 1.5 times its mean), `rate` being `PlayRobot.head_yaw_rate_rad_s`; the head then
  catches up over the next windows. Upstream commanded fast 16th-note drum changes the
  Dynamixel cannot follow.
* Pitch: base 20 deg (positive looks down). Per window intensity = min(1, mean over the events
  within one beat (cumulative beat >= 0.6) of 0.1 vR + 0.1 vL + 0.5 kick); the nod amplitude
  ramps linearly from the previous window's intensity; the phase advances one cycle per 0.6 beat
  units; the first 70 % of a cycle raises the head with a smoothstep, the last 30 % returns;
  pitch = 20 deg - amplitude * 20 deg * shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.play.robot import PlayRobot
from phil_control.core.play.shapes import smoothstep
from phil_control.core.play.state_generator import strike_velocity
from phil_control.core.score import ScoreEvent

PITCH_BASE_RAD = math.radians(20.0)
NOD_MAX_RAD = math.radians(20.0)
NOD_RISE_SHARE = 0.7
BEAT_UNITS_PER_NOD = 0.6
YAW_OFFSET_RAD = math.pi / 2.0
_SMOOTHSTEP_PEAK_RATIO = 1.5


@dataclass(frozen=True)
class HeadContext:
    """Head state at the start of a window.

    Attributes:
        drum: Drum id the head looks towards (the last right-hand drum).
        yaw_rad: Planned look direction atan2(y, x) at the window start, rad (before the
            -90 deg offset).
        nod_intensity: Nod intensity of the previous window, 0..1.
        nod_phase: Nod phase at the window start, cycles in [0, 1).
    """

    drum: int
    yaw_rad: float
    nod_intensity: float = 0.0
    nod_phase: float = 0.0

    @classmethod
    def looking_at(cls, robot: PlayRobot, drum: int) -> HeadContext:
        """The context of the reset pose: looking at `drum`, no nod."""
        return cls(drum=drum, yaw_rad=robot.look_angle_rad(drum))

    @property
    def world_yaw_rad(self) -> float:
        """World-frame head yaw (0 = straight ahead, positive = left), rad."""
        return self.yaw_rad - YAW_OFFSET_RAD


@dataclass(frozen=True)
class HeadPlan:
    """Head motion over one window's interval.

    Attributes:
        start_time_s: Interval start, score time, s.
        end_time_s: Interval end, score time, s.
        start: Context at the start.
        end: Context at the end.
        phase_cycles: Nod cycles advanced over the interval.
    """

    start_time_s: float
    end_time_s: float
    start: HeadContext
    end: HeadContext
    phase_cycles: float

    def evaluate(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """World yaw and pitch (M,) in rad at score times (M,)."""
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        span = self.end_time_s - self.start_time_s
        tau = (times - self.start_time_s) / span if span > 0.0 else np.ones(times.shape)
        yaw = self.start.yaw_rad + (self.end.yaw_rad - self.start.yaw_rad) * smoothstep(tau)
        amplitude = (
            self.start.nod_intensity + (self.end.nod_intensity - self.start.nod_intensity) * tau
        )
        phase = np.mod(self.start.nod_phase + self.phase_cycles * tau, 1.0)
        return yaw - YAW_OFFSET_RAD, PITCH_BASE_RAD - amplitude * NOD_MAX_RAD * nod_shape(phase)


def nod_shape(phase: np.ndarray) -> np.ndarray:
    """Nod profile 0 -> 1 -> 0 over one cycle (phase in [0, 1))."""
    rising = smoothstep(phase / NOD_RISE_SHARE)
    falling = 1.0 - smoothstep((phase - NOD_RISE_SHARE) / (1.0 - NOD_RISE_SHARE))
    return np.where(phase < NOD_RISE_SHARE, rising, falling)


def nod_intensity(events: Sequence[ScoreEvent]) -> float:
    """Mean loudness of the events of the next beat (events[1:]), capped at 1."""
    total, lines, beats = 0.0, 0, 0.0
    for event in events[1:]:
        total += (
            0.1 * strike_velocity(event, 'right')
            + 0.1 * strike_velocity(event, 'left')
            + 0.5 * event.kick
        )
        lines += 1
        beats += event.beat_units
        if beats >= BEAT_UNITS_PER_NOD:
            break
    return min(total / lines, 1.0) if lines else 0.0


def plan_head(
    robot: PlayRobot, events: Sequence[ScoreEvent], context: HeadContext
) -> tuple[HeadPlan, HeadContext]:
    """Plan the head over the window's first interval.

    Returns:
        The plan and the context at events[1].

    Raises:
        UnknownDrumError: The next right drum has no right-hand strike point.
    """
    start_s, end_s = events[0].time_s, events[1].time_s
    drum = events[1].right_drum or context.drum
    target = robot.look_angle_rad(drum) if drum else context.yaw_rad
    reach = robot.head_yaw_rate_rad_s * max(end_s - start_s, 0.0) / _SMOOTHSTEP_PEAK_RATIO
    yaw = context.yaw_rad + float(np.clip(target - context.yaw_rad, -reach, reach))
    cycles = events[1].beat_units / BEAT_UNITS_PER_NOD
    following = HeadContext(
        drum=drum,
        yaw_rad=yaw,
        nod_intensity=nod_intensity(events),
        nod_phase=math.fmod(context.nod_phase + cycles, 1.0),
    )
    return HeadPlan(start_s, end_s, context, following, cycles), following
