"""The trajectory_generator's parameters: declared (each with its description) and validated
once into a frozen ``Config``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rclpy.node import Node
from rclpy.parameter import Parameter

from phil_control.conversions import STAMP_CLOCKS
from phil_control.core.motion import ChunkingConfig, ContinuityTolerance, MotionDefaults
from phil_ros.parameters import declare_parameters

#: Most goals the trajectory_generator keeps queued or moving at once (parameter bound).
MAX_ACTIVE_GOALS_LIMIT = 12


@dataclass(frozen=True)
class Config:
    """The validated parameters (names, defaults and units: ``PARAMETERS``)."""

    chunking: ChunkingConfig
    defaults: MotionDefaults
    continuity: ContinuityTolerance
    publish_lead_s: float
    start_lead_s: float
    publish_period_s: float
    feedback_period_s: float
    halt_deceleration_rad_s2: float
    max_active_goals: int
    initial_positions_rad: tuple[float, ...]
    stamp_clock: str
    log_dir: str  # '' = no log

    @classmethod
    def from_parameters(cls, node: Node, joint_names: Sequence[str]) -> Config:
        """Declare every parameter on ``node`` (read-only: they are read once, here) and
        validate them for a robot with ``joint_names``.

        Raises:
            ValueError: Naming the first bad parameter and what it allows.
        """
        values = declare_parameters(node, PARAMETERS)
        return cls.from_values(values, joint_names)

    @classmethod
    def from_values(cls, values: Mapping, joint_names: Sequence[str]) -> Config:
        """Validate parameter ``values`` (every name of ``PARAMETERS``).

        Raises:
            ValueError: Naming the first bad parameter and what it allows.
        """
        for name, value in values.items():
            numeric = name not in _NOT_POSITIVE_NUMBERS
            if numeric and not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'parameter {name} must be positive and finite, got {value}')
        if values['stamp_clock'] not in STAMP_CLOCKS:
            raise ValueError(
                f'parameter stamp_clock must be one of {", ".join(STAMP_CLOCKS)}, '
                f'got {values["stamp_clock"]!r}'
            )
        initial = tuple(float(v) for v in values['initial_positions_rad'] or ())
        if not all(math.isfinite(v) for v in initial):
            raise ValueError(f'parameter initial_positions_rad must be finite, got {initial}')
        if initial and len(initial) != len(joint_names):
            raise ValueError(
                f'parameter initial_positions_rad needs {len(joint_names)} values '
                f'({", ".join(joint_names)}), got {len(initial)}'
            )
        if values['start_lead_s'] > values['publish_lead_s']:
            raise ValueError(
                f'parameter start_lead_s ({values["start_lead_s"]}) must not exceed '
                f'publish_lead_s ({values["publish_lead_s"]})'
            )
        goals = int(values['max_active_goals'])
        if not 1 <= goals <= MAX_ACTIVE_GOALS_LIMIT:
            raise ValueError(
                f'parameter max_active_goals must be in [1, {MAX_ACTIVE_GOALS_LIMIT}], got {goals}'
            )
        return cls(
            chunking=ChunkingConfig(values['chunk_duration_s'], values['point_spacing_s']),
            defaults=MotionDefaults(
                move_duration_s=values['move_duration_s'],
                look_duration_s=values['look_duration_s'],
                pose_duration_s=values['pose_duration_s'],
                max_duration_s=values['max_duration_s'],
            ),
            continuity=ContinuityTolerance(
                position_rad=values['continuity_tolerance_rad'],
                velocity_rad_s=values['continuity_tolerance_rad_s'],
            ),
            publish_lead_s=values['publish_lead_s'],
            start_lead_s=values['start_lead_s'],
            publish_period_s=values['publish_period_s'],
            feedback_period_s=values['feedback_period_s'],
            halt_deceleration_rad_s2=values['halt_deceleration_rad_s2'],
            max_active_goals=goals,
            initial_positions_rad=initial,
            stamp_clock=values['stamp_clock'],
            log_dir=str(values['log_dir']),
        )


#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'chunk_duration_s': (0.5, 'length of each published chunk, s'),
    'point_spacing_s': (0.02, 'largest time between chunk points (cubic Hermite knots), s'),
    'publish_lead_s': (0.1, 'a chunk is published this long before its start stamp, s'),
    'start_lead_s': (
        0.005,
        "a motion from rest starts this long after it is planned: the first chunk's trip to "
        'the bus loop (one arriving later is blended in from the held target), s',
    ),
    'publish_period_s': (0.01, 'period of the publishing / feedback / completion timer, s'),
    'feedback_period_s': (0.1, 'action feedback period, s'),
    'move_duration_s': (3.0, 'MOVE duration when the goal gives 0, s'),
    'look_duration_s': (1.0, 'LOOK duration when the goal gives 0, s'),
    'pose_duration_s': (3.0, 'POSE duration when the goal gives 0, s'),
    'max_duration_s': (60.0, 'longest duration a goal may ask for, s'),
    'halt_deceleration_rad_s2': (50.0, 'deceleration bound of halts and cancels, rad/s^2'),
    'continuity_tolerance_rad': (1e-3, '~/chunks: largest position step at a chunk start, rad'),
    'continuity_tolerance_rad_s': (0.05, '~/chunks: largest velocity step at a start, rad/s'),
    'max_active_goals': (8, 'goals queued or moving at once; more are aborted'),
    'stamp_clock': (
        'ros',
        'clock of every chunk and commanded_state stamp: ros (the node clock, as every ROS '
        'stamp; the hardware node maps it onto its monotonic clock) or monotonic '
        '(CLOCK_MONOTONIC)',
    ),
    'initial_positions_rad': (
        Parameter.Type.DOUBLE_ARRAY,
        'initial commanded positions in URDF joint order, rad; unset = init pose, then the '
        'measured positions on hardware/motor_states',
    ),
    'log_dir': ('', "folder for trajectory.csv; '' = off"),
}
# Parameters that are not a positive number of seconds (or other unit).
_NOT_POSITIVE_NUMBERS = ('initial_positions_rad', 'max_active_goals', 'stamp_clock', 'log_dir')
