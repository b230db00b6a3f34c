"""Types and checks shared by the play generators: control modes, hits, motion errors, the
cached waist choice and the IK / soft-limit checks."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from phil_control.core.kinematics import (
    ARM_JOINT_NAMES,
    IkBatchResult,
    IkFailure,
    WaistChoice,
    WaistFailure,
    choose_waist,
)
from phil_control.core.play.robot import PlayRobot
from phil_control.core.score import Hand
from phil_description.core.trajectory import ControlMode


def window_control_modes(robot: PlayRobot, wrist_torque: bool = True) -> tuple[ControlMode, ...]:
    """Control modes while playing: wrists in torque (EPOS4 CST) as upstream unless
    ``wrist_torque`` is off, every other joint in position."""
    torque = {robot.index('right_wrist'), robot.index('left_wrist')} if wrist_torque else set()
    return tuple(
        ControlMode.TORQUE if index in torque else ControlMode.POSITION
        for index in range(len(robot.joint_names))
    )


class MotionErrorKind(enum.Enum):
    """Why a window cannot be generated."""

    IK = 'ik'
    NO_WAIST = 'no waist angle'
    JOINT_LIMIT = 'joint limit'
    UNKNOWN_DRUM = 'unknown drum'


class MotionError(Exception):
    """A window (or the reset pose) cannot be played.

    Attributes:
        kind: The kind of failure.
        reason: Human-readable reason with the numbers involved.
        bar: Score bar of the window's target event (None for the reset pose).
        time_s: Score time of the failure, s.
    """

    def __init__(
        self, kind: MotionErrorKind, reason: str, bar: int | None = None, time_s: float = 0.0
    ) -> None:
        where = f'bar {bar}, t = {time_s:.3f} s' if bar is not None else 'reset pose'
        super().__init__(f'{where}: {kind.value}: {reason}')
        self.kind = kind
        self.reason = reason
        self.bar = bar
        self.time_s = time_s


@dataclass(frozen=True)
class CommandedHit:
    """One strike the trajectory commands.

    Attributes:
        instrument_id: HIT table id 0..9 (0 = bass drum, 5 closed / 9 open hi-hat).
        hand: Limb that strikes (KICK = bass pedal).
        velocity: Intensity 1..7 (kicks: 5).
        score_time_s: Event time, score time from the play start, s.
        bar: Score bar of the event.
        event_index: Index of the event in the played timeline.
    """

    instrument_id: int
    hand: Hand
    velocity: int
    score_time_s: float
    bar: int
    event_index: int


class WaistChooser:
    """`choose_waist` with a cache keyed by the targets (grooves repeat the same poses)."""

    def __init__(self, robot: PlayRobot, max_entries: int = 4096) -> None:
        self._robot = robot
        self._cache: dict[tuple[float, ...], WaistChoice | WaistFailure] = {}
        self._max_entries = max_entries

    def __call__(
        self,
        right_tip_m: np.ndarray,
        left_tip_m: np.ndarray,
        right_wrist_rad: float,
        left_wrist_rad: float,
    ) -> WaistChoice | WaistFailure:
        """Waist choice for IK inputs (tips in m, wrists in rad) as given to the IK."""
        key = tuple(
            round(float(value), 9)
            for value in (*right_tip_m, *left_tip_m, right_wrist_rad, left_wrist_rad)
        )
        choice = self._cache.get(key)
        if choice is None:
            if len(self._cache) >= self._max_entries:
                self._cache.clear()
            choice = choose_waist(
                self._robot.geometry,
                self._robot.limits,
                right_tip_m,
                left_tip_m,
                right_wrist_rad,
                left_wrist_rad,
            )
            self._cache[key] = choice
        return choice


def arm_columns(robot: PlayRobot) -> list[int]:
    """Columns of the nine IK joints in the 13-joint vector."""
    return [robot.index(name) for name in ARM_JOINT_NAMES]


def raise_ik_failure(batch: IkBatchResult, times: np.ndarray, bar: int | None) -> None:
    """Raise MotionError for the first failed row of an IK batch (rows timed by `times`)."""
    if batch.ok.all():
        return
    row = int(np.argmin(batch.ok))
    failure = batch.result(row)
    assert isinstance(failure, IkFailure)
    raise MotionError(MotionErrorKind.IK, failure.detail, bar, float(times[row]))


def check_soft_limits(
    robot: PlayRobot, positions: np.ndarray, times: np.ndarray, bar: int | None
) -> None:
    """Raise MotionError for the first sample outside the soft limits."""
    outside = (positions < robot.soft_lower_rad) | (positions > robot.soft_upper_rad)
    if not outside.any():
        return
    row, column = (int(i) for i in np.argwhere(outside)[0])
    value = math.degrees(positions[row, column])
    lower, upper = (
        math.degrees(robot.soft_lower_rad[column]),
        math.degrees(robot.soft_upper_rad[column]),
    )
    raise MotionError(
        MotionErrorKind.JOINT_LIMIT,
        f'{robot.joint_names[column]} = {value:.2f} deg is outside [{lower:g}, {upper:g}] deg',
        bar,
        float(times[row]),
    )
