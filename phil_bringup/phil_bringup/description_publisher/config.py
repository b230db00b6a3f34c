"""The description_publisher's parameters: declared (each with its description) and read once
into a frozen ``Config``."""

from __future__ import annotations

from dataclasses import dataclass

from rclpy.node import Node

from phil_ros.parameters import declare_parameters

#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'sim': (False, 'expand the URDF with the simulated buses (the device simulators)'),
    'publish_robot_description': (
        True,
        'publish /robot_description; false where robot_state_publisher already does',
    ),
}


@dataclass(frozen=True)
class Config:
    """The parameters (names, defaults and meaning: ``PARAMETERS``)."""

    sim: bool
    publish_robot_description: bool

    @classmethod
    def from_parameters(cls, node: Node) -> Config:
        """Declare every parameter on ``node`` (read-only: they are read once, here)."""
        values = declare_parameters(node, PARAMETERS)
        return cls(
            sim=bool(values['sim']),
            publish_robot_description=bool(values['publish_robot_description']),
        )
