"""Publish the robot description and the drum-kit markers (both latched).

Topics:
    /robot_description (std_msgs/String, transient local): the expanded URDF.
    /phil/kit_markers (visualization_msgs/MarkerArray, transient local): pads, strike points.

Parameters: ``config.PARAMETERS`` (``sim``, ``publish_robot_description``), read-only.
"""

from __future__ import annotations

from rclpy.node import Node
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

from phil_bringup.description_publisher.config import Config
from phil_description.core import default_robot_model
from phil_description.kit_markers import MarkerSpec, kit_marker_specs
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED

MARKER_TYPES = {
    'cylinder': Marker.CYLINDER,
    'sphere': Marker.SPHERE,
    'text': Marker.TEXT_VIEW_FACING,
}


def to_marker(spec: MarkerSpec) -> Marker:
    marker = Marker()
    marker.header.frame_id = spec.frame
    marker.ns = spec.namespace
    marker.id = spec.marker_id
    marker.type = MARKER_TYPES[spec.shape]
    marker.action = Marker.ADD
    marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = spec.position_m
    marker.pose.orientation.w = 1.0
    marker.scale.x, marker.scale.y, marker.scale.z = spec.scale_m
    marker.color.r, marker.color.g, marker.color.b, marker.color.a = spec.rgba
    marker.text = spec.text
    return marker


class DescriptionPublisher(Node):
    """Latched publisher of the URDF string and the kit markers."""

    def __init__(self, **node_options) -> None:
        super().__init__('description_publisher', **node_options)
        config = Config.from_parameters(self)
        model = default_robot_model(sim=config.sim)
        if config.publish_robot_description:
            self._description_pub = self.create_publisher(String, 'robot_description', LATCHED)
            self._description_pub.publish(String(data=model.urdf_xml))
        self._markers_pub = self.create_publisher(MarkerArray, 'phil/kit_markers', LATCHED)
        markers = MarkerArray(markers=[to_marker(spec) for spec in kit_marker_specs(model.kit)])
        self._markers_pub.publish(markers)
        self.get_logger().info(
            f'robot model: {len(model.joints)} joints, sim={config.sim}; published '
            f'{"robot_description and " if config.publish_robot_description else ""}'
            f'{len(markers.markers)} kit markers'
        )
        self._liveness = Liveness(self)


def main(args: list[str] | None = None) -> None:
    run_node(DescriptionPublisher, args)


if __name__ == '__main__':
    main()
