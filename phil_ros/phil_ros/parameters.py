"""Declaring a node's parameters from its table, the one idiom of every node's
``Config.from_parameters``: each parameter has a default and a description, and is read-only
unless the node reads it again at run time."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node


def declare_parameters(
    node: Node, table: Mapping[str, tuple[Any, str]], writable: Collection[str] = ()
) -> dict[str, Any]:
    """Declare every ``name: (default, description)`` of ``table`` on ``node``; the values.

    Args:
        node: The node.
        table: Default and description of each parameter.
        writable: Names the node reads again later (the others are read-only).
    """
    return {
        name: node.declare_parameter(
            name,
            default,
            ParameterDescriptor(description=description, read_only=name not in writable),
        ).value
        for name, (default, description) in table.items()
    }


def require_positive_s(values: Mapping[str, Any], *names: str) -> None:
    """ValueError naming the first of ``names`` whose value is not a finite time > 0 s."""
    for name in names:
        value = float(values[name])
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f'parameter {name} = {value} must be > 0 s')


def require_port(values: Mapping[str, Any], name: str = 'port') -> int:
    """The TCP port ``values[name]`` (0: any free port); ValueError outside 0..65535."""
    port = int(values[name])
    if not 0 <= port <= 65535:
        raise ValueError(f'parameter {name} = {port} must be in 0..65535')
    return port


class DeclaredConfig:
    """For a frozen config dataclass whose ``PARAMETERS`` table (class attribute, not a field)
    declares its node's parameters and whose ``from_values`` validates them."""

    @classmethod
    def from_parameters(cls, node: Node):
        """Declare every parameter on ``node`` (read-only: they are read once, here) and
        validate them (ValueError naming the first bad one)."""
        return cls.from_values(declare_parameters(node, cls.PARAMETERS))
