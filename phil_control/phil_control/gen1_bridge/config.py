"""The gen1_bridge's parameters: declared (each with its description) and validated once into a
frozen ``Config``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from phil_control.score_player.config import play_list_parameter
from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_ros.parameters import DeclaredConfig, require_port, require_positive_s

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'sim': (False, 'running against the device simulators (set by the launcher)'),
    'address': ('127.0.0.1', 'address the Gen-1 brain connects to (loopback unless opened)'),
    'port': (9999, 'TCP port of the Gen-1 protocol'),
    'max_clients': (8, 'clients connected at once (a newcomer beyond is closed)'),
    'reply_timeout_s': (2.0, "longest wait for the planner's answer to a command, s"),
    'play_list': (
        '',
        "play list YAML the song tempos are read from (the score_player's); '' = the "
        "score_player's default",
    ),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'silence after which the planner is down (its commands are then refused), s',
    ),
}


@dataclass(frozen=True)
class Config(DeclaredConfig):
    """The parameters (names, defaults and meaning: ``PARAMETERS``)."""

    PARAMETERS: ClassVar = PARAMETERS

    address: str
    port: int
    max_clients: int
    reply_timeout_s: float
    play_list: Path | None
    liveness_timeout_s: float

    @classmethod
    def from_values(cls, values: Mapping) -> Config:
        """Validate parameter ``values`` (ValueError naming the first bad one)."""
        require_positive_s(values, 'reply_timeout_s', 'liveness_timeout_s')
        port = require_port(values)
        if int(values['max_clients']) < 1:
            raise ValueError(f'parameter max_clients = {values["max_clients"]} must be >= 1')
        play_list = play_list_parameter(values['play_list'])
        return cls(
            address=str(values['address']),
            port=port,
            max_clients=int(values['max_clients']),
            reply_timeout_s=float(values['reply_timeout_s']),
            play_list=play_list,
            liveness_timeout_s=float(values['liveness_timeout_s']),
        )
