"""The behavior_planner's parameters: declared (each with its description) and validated once
into a frozen ``Config``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rclpy.node import Node

from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_ros.parameters import declare_parameters

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'sim': (False, 'running against the device simulators (set by the launcher)'),
    'status_rate_hz': (10.0, 'rate of the periodic /phil/status, Hz (0.5..100)'),
    'watched_nodes': (
        [''],
        'nodes whose heartbeats are watched (the launcher passes every other node of the '
        'graph); a motion that needs one that is down is refused',
    ),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'silence after which a running watched node is down, s',
    ),
}


@dataclass(frozen=True)
class Config:
    """The parameters (names, defaults and meaning: ``PARAMETERS``)."""

    sim: bool
    status_rate_hz: float
    watched_nodes: tuple[str, ...]
    liveness_timeout_s: float

    @classmethod
    def from_parameters(cls, node: Node) -> Config:
        """Declare every parameter on ``node`` (read-only: they are read once, here) and
        validate them (ValueError naming the first bad one)."""
        return cls.from_values(declare_parameters(node, PARAMETERS))

    @classmethod
    def from_values(cls, values: Mapping) -> Config:
        """Validate parameter ``values`` (ValueError naming the first bad one)."""
        rate_hz = float(values['status_rate_hz'])
        if not 0.5 <= rate_hz <= 100.0:
            raise ValueError(f'parameter status_rate_hz = {rate_hz} must be in 0.5..100')
        timeout_s = float(values['liveness_timeout_s'])
        if not (math.isfinite(timeout_s) and timeout_s > 0.0):
            raise ValueError(f'parameter liveness_timeout_s must be positive, got {timeout_s}')
        return cls(
            sim=bool(values['sim']),
            status_rate_hz=rate_hz,
            watched_nodes=tuple(name for name in values['watched_nodes'] if name),
            liveness_timeout_s=timeout_s,
        )
