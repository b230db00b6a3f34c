"""The score_player's parameters: declared (each with its description) and validated once
into a frozen ``Config``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rclpy.node import Node

from phil_control.conversions import STAMP_CLOCKS
from phil_control.core.play import check_motion_lead_s, check_pedal_lead_s
from phil_control.core.play.timeline import check_velocity_delta
from phil_control.core.play.timing_calibration import (
    CalibrationError,
    TimingCalibration,
    load_timing_calibration,
)
from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_description.core.paths import installed_share_directory
from phil_ros.parameters import declare_parameters

#: The workspace's scores folder when running from the source tree (``--symlink-install``).
SOURCE_SCORES_DIR = Path(__file__).resolve().parents[3] / 'scores'
PLAY_LIST_NAME = 'play_list.yaml'
#: Audio folder name next to the play list.
AUDIO_FOLDER = 'audio'

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'play_list': (
        '',
        "play list YAML; '' = scores/play_list.yaml installed with phil_control or of the "
        'source tree (if neither exists: no score can be played)',
    ),
    'audio_dir': ('', "folder of the audio tracks; '' = the folder 'audio' next to the play list"),
    'audio_command': (
        '',
        "audio player: '' = silent, 'auto' = paplay or aplay if installed, or a command line "
        "such as 'aplay -q' (the track path is appended)",
    ),
    'poll_period_s': (0.02, 'period of the generation / hits / feedback timer, s'),
    'lead_s': (0.5, 'windows are generated one bar plus this far ahead of now, s'),
    'margin_s': (0.1, 'earliest start of a new or replacing chunk after now, s'),
    'feedback_period_s': (0.1, 'action feedback period, s'),
    'motion_lead_s': (
        0.0,
        'the motion runs this far ahead of the music so the sticks land on the beat: the '
        "drives' delay in following their commands, s (0..0.05)",
    ),
    'pedal_lead_s': (
        0.0,
        'the pedals run this much further ahead than the arms: how much later the pedal drives '
        'follow than the arm drives, s (-0.05..0.05)',
    ),
    'timing_calibration': (
        '',
        'timing calibration file (phil timing-calibrate): its motion_lead_s and pedal_lead_s '
        "are used instead of the parameters of those names; '' = none",
    ),
    'velocity_delta': (
        0,
        'added to every stroke intensity of the scores read from now on (PLAY, RESUME, the '
        "next score of an improv), each kept within 1..7: the Gen-1 brain's velocity_delta; "
        '-6..6, may be set while running',
    ),
    'log_dir': ('', "folder for hits.csv (one row per commanded hit); '' = no log"),
    'wrist_torque': (
        True,
        'wrists in torque mode (EPOS4 CST, kp/kd + gravity) while playing, as upstream; false '
        '= position mode (CSP) throughout',
    ),
    'stamp_clock': (
        'ros',
        'clock of every stamp: ros (the node clock, as the trajectory_generator) or monotonic',
    ),
    'watched_nodes': (
        [''],
        'nodes whose heartbeats are watched (the launcher passes the motion path): one that '
        'goes down ends the running goal',
    ),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'a running watched node silent this long counts as down, s',
    ),
}


#: Parameters the node takes again while running.
WRITABLE = ('velocity_delta',)


def default_play_list() -> Path | None:
    """``scores/play_list.yaml`` installed in phil_control's share folder, else the one of the
    source tree (``--symlink-install``), else None."""
    candidates = [SOURCE_SCORES_DIR / PLAY_LIST_NAME]
    share = installed_share_directory('phil_control')
    if share is not None:
        candidates.insert(0, share / 'scores' / PLAY_LIST_NAME)
    return next((path for path in candidates if path.is_file()), None)


def play_list_parameter(value: str) -> Path | None:
    """The ``play_list`` parameter: its file ('' = :func:`default_play_list`).

    Raises:
        ValueError: The file named does not exist.
    """
    if not value:
        return default_play_list()
    play_list = Path(value)
    if not play_list.is_file():
        raise ValueError(f'parameter play_list: no such file: {play_list}')
    return play_list


@dataclass(frozen=True)
class Config:
    """The validated parameters (names, defaults and units: `PARAMETERS`)."""

    play_list: Path | None
    audio_dir: Path
    audio_command: str
    poll_period_s: float
    lead_s: float
    margin_s: float
    feedback_period_s: float
    log_dir: Path | None
    stamp_clock: str
    wrist_torque: bool = True
    motion_lead_s: float = 0.0
    pedal_lead_s: float = 0.0
    timing_calibration: TimingCalibration | None = None  # the leads above came from it
    watched_nodes: tuple[str, ...] = ()
    liveness_timeout_s: float = DEFAULT_LIVENESS_TIMEOUT_S
    velocity_delta: int = 0  # the start value; the node takes later ones (WRITABLE)

    @classmethod
    def from_parameters(cls, node: Node) -> Config:
        """Declare every parameter on ``node`` (read-only but ``WRITABLE``: they are read once,
        here) and validate them.

        Raises:
            ValueError: Naming the first bad parameter and what it allows.
        """
        values = declare_parameters(node, PARAMETERS, WRITABLE)
        return cls.from_values(values)

    @classmethod
    def from_values(cls, values: Mapping) -> Config:
        """Validate parameter ``values`` (every name of ``PARAMETERS``).

        Raises:
            ValueError: Naming the first bad parameter (an explicit play list that does not
                exist, a non-positive period, an unknown clock).
        """
        for name in ('poll_period_s', 'feedback_period_s', 'margin_s', 'liveness_timeout_s'):
            if not (math.isfinite(values[name]) and values[name] > 0.0):
                raise ValueError(
                    f'parameter {name} must be positive and finite, got {values[name]}'
                )
        if not (math.isfinite(values['lead_s']) and values['lead_s'] >= 0.0):
            raise ValueError(f'parameter lead_s must be >= 0 and finite, got {values["lead_s"]}')
        if values['stamp_clock'] not in STAMP_CLOCKS:
            raise ValueError(
                f'parameter stamp_clock must be one of {", ".join(STAMP_CLOCKS)}, '
                f'got {values["stamp_clock"]!r}'
            )
        try:
            check_motion_lead_s(values['motion_lead_s'])
            check_pedal_lead_s(values['pedal_lead_s'])
        except ValueError as error:
            raise ValueError(f'parameter {error}') from None
        motion_lead_s, pedal_lead_s = float(values['motion_lead_s']), float(values['pedal_lead_s'])
        calibration = None
        if values['timing_calibration']:
            try:
                calibration = load_timing_calibration(Path(values['timing_calibration']))
            except CalibrationError as error:
                raise ValueError(f'parameter timing_calibration: {error}') from None
            motion_lead_s, pedal_lead_s = calibration.motion_lead_s, calibration.pedal_lead_s
        try:
            check_velocity_delta(values['velocity_delta'])
        except ValueError as error:
            raise ValueError(f'parameter {error}') from None
        play_list = play_list_parameter(values['play_list'])
        scores_dir = play_list.parent if play_list is not None else SOURCE_SCORES_DIR
        return cls(
            play_list=play_list,
            audio_dir=Path(values['audio_dir'] or scores_dir / AUDIO_FOLDER),
            audio_command=values['audio_command'],
            poll_period_s=values['poll_period_s'],
            lead_s=values['lead_s'],
            margin_s=values['margin_s'],
            feedback_period_s=values['feedback_period_s'],
            log_dir=Path(values['log_dir']) if values['log_dir'] else None,
            stamp_clock=values['stamp_clock'],
            wrist_torque=bool(values['wrist_torque']),
            motion_lead_s=motion_lead_s,
            pedal_lead_s=pedal_lead_s,
            timing_calibration=calibration,
            watched_nodes=tuple(name for name in values['watched_nodes'] if name),
            liveness_timeout_s=float(values['liveness_timeout_s']),
            velocity_delta=values['velocity_delta'],
        )
