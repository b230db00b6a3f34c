"""Declaring a node's parameters from its table, the one idiom of every node's
``Config.from_parameters``: each parameter has a default and a description, and is read-only
unless the node reads it again at run time."""

from __future__ import annotations

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
