"""The one declaration of Phil's node set, used by robot.launch.py and by the launcher that
runs the graph without a ROS install. Adding a node here adds it to both."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodeSpec:
    """One node (or helper process) of the graph.

    Attributes:
        package: the ROS package that installs the executable (``lib/<package>/<executable>``).
        executable: the console-script name.
        name: the node name.
        parameter_file: file in ``phil_bringup/config`` with its ``ros__parameters``, or ''.
        sim_only: start it only against the simulated robot (the device simulators).
        required: when it exits, the launcher stops the whole graph.
        arguments: extra command-line arguments.
    """

    package: str
    executable: str
    name: str
    parameter_file: str = ''
    sim_only: bool = False
    required: bool = True
    arguments: tuple[str, ...] = field(default_factory=tuple)


NODE_SET: tuple[NodeSpec, ...] = (
    NodeSpec('phil_description', 'description_publisher', 'description_publisher',
             parameter_file='description.yaml'),
)


def nodes_for(sim: bool) -> list[NodeSpec]:
    """The nodes to start for the simulated (``sim``) or the real robot, in start order."""
    return [node for node in NODE_SET if sim or not node.sim_only]
