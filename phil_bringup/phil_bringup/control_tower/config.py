"""The control_tower's parameters: declared (each with its description) and validated once
into a frozen ``Config``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from phil_control.score_player.config import default_play_list
from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_description.core.paths import installed_share_directory
from phil_ros.parameters import DeclaredConfig, require_port, require_positive_s

#: The page's folder when running from the source tree (``--symlink-install``).
SOURCE_PAGE_DIR = Path(__file__).resolve().parents[2] / 'web' / 'dist'

PARAMETERS = {
    'sim': (False, 'running against the device simulators (set by the launcher)'),
    'address': ('127.0.0.1', 'address the page is served on (loopback unless opened on purpose)'),
    'port': (8080, 'HTTP port of the page (0: any free port, logged)'),
    'rate_hz': (30.0, 'state frames sent to each page per second (1..60)'),
    'reply_timeout_s': (2.0, "longest wait for the planner's answer to a command, s"),
    'log_dir': ('', "the run's folder: its plots/ are linked from the page; '' = none"),
    'play_list': ('', "play list YAML whose ids the page offers; '' = the score_player's default"),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'silence after which the planner is down (its commands are then refused), s',
    ),
}


def page_directory() -> Path:
    """The built page: installed with phil_bringup, else the source tree's ``web/dist``."""
    share = installed_share_directory('phil_bringup')
    if share is not None and (share / 'web' / 'index.html').is_file():
        return share / 'web'
    return SOURCE_PAGE_DIR


@dataclass(frozen=True)
class Config(DeclaredConfig):
    """The parameters (names, defaults and meaning: ``PARAMETERS``)."""

    PARAMETERS: ClassVar = PARAMETERS

    address: str
    port: int
    rate_hz: float
    reply_timeout_s: float
    plots_dir: Path | None
    liveness_timeout_s: float
    play_list: Path | None = None

    @classmethod
    def from_values(cls, values: Mapping) -> Config:
        """Validate parameter ``values`` (ValueError naming the first bad one)."""
        require_positive_s(values, 'reply_timeout_s', 'liveness_timeout_s')
        rate_hz = float(values['rate_hz'])
        if not 1.0 <= rate_hz <= 60.0:
            raise ValueError(f'parameter rate_hz = {rate_hz} must be in 1..60')
        port = require_port(values)
        return cls(
            address=str(values['address']),
            port=port,
            rate_hz=rate_hz,
            reply_timeout_s=float(values['reply_timeout_s']),
            plots_dir=Path(values['log_dir']) / 'plots' if values['log_dir'] else None,
            liveness_timeout_s=float(values['liveness_timeout_s']),
            play_list=Path(values['play_list']) if values['play_list'] else default_play_list(),
        )
