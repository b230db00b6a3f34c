"""The tcp_bridge's parameters: declared (each with its description) and validated once into a
frozen ``Config`` (the TCP server's own limits are checked by ``TcpServerConfig``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from phil_control.tcp.config import TcpServerConfig
from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_ros.parameters import DeclaredConfig, require_positive_s

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'sim': (False, 'running against the device simulators (set by the launcher)'),
    'address': ('127.0.0.1', 'address the brain connects to (loopback unless opened on purpose)'),
    'port': (1951, 'TCP port of the brain protocol'),
    'max_line_bytes': (4096, 'longest line accepted, bytes'),
    'max_clients': (16, 'clients connected at once (the one idle longest makes room)'),
    'reply_timeout_s': (2.0, "longest wait for the planner's answer to a command, s"),
    'idle_timeout_s': (3600.0, 'a silent client is disconnected after this, s (0 = never)'),
    'max_lines_per_s': (100.0, 'lines read per second and client (input pacing)'),
    'max_commands_per_s': (20.0, 'commands decided per second, all clients (0 = no limit)'),
    'log_dir': ('', "folder for commands.csv (every line and what became of it); '' = none"),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        "silence after which the planner is down (GET_STATUS then says the hardware's state), s",
    ),
}


@dataclass(frozen=True)
class Config(DeclaredConfig):
    """The parameters (names, defaults and meaning: ``PARAMETERS``)."""

    PARAMETERS: ClassVar = PARAMETERS

    server: TcpServerConfig
    reply_timeout_s: float
    log_dir: Path | None
    liveness_timeout_s: float

    @classmethod
    def from_values(cls, values: Mapping) -> Config:
        """Validate parameter ``values`` (ValueError naming the first bad one)."""
        require_positive_s(values, 'reply_timeout_s', 'liveness_timeout_s')
        server = TcpServerConfig(
            host=str(values['address']),
            port=int(values['port']),
            max_line_bytes=int(values['max_line_bytes']),
            max_clients=int(values['max_clients']),
            idle_timeout_s=float(values['idle_timeout_s']),
            max_lines_per_s=float(values['max_lines_per_s']),
            max_commands_per_s=float(values['max_commands_per_s']),
        )
        return cls(
            server=server,
            reply_timeout_s=float(values['reply_timeout_s']),
            log_dir=Path(values['log_dir']) if values['log_dir'] else None,
            liveness_timeout_s=float(values['liveness_timeout_s']),
        )
