"""In-process rclpy test: the description publisher latches the URDF and the kit markers."""

import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from phil_bringup.description_publisher.node import DescriptionPublisher  # noqa: E402
from phil_ros.qos import LATCHED  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402


@pytest.fixture
def context():
    with ros_test_context() as ctx:
        yield ctx


def test_late_subscriber_receives_description_and_markers(context):
    publisher = DescriptionPublisher(context=context)
    probe = rclpy.create_node('probe', context=context)
    received = {}
    probe.create_subscription(
        String, 'robot_description', lambda msg: received.setdefault('urdf', msg.data), LATCHED
    )
    probe.create_subscription(
        MarkerArray, 'phil/kit_markers', lambda msg: received.setdefault('markers', msg), LATCHED
    )
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(publisher)
    executor.add_node(probe)
    deadline = time.monotonic() + 20.0
    while len(received) < 2 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    publisher.destroy_node()
    probe.destroy_node()
    assert '<robot' in received.get('urdf', '') and 'right_stick_tip' in received['urdf']
    markers = received['markers'].markers
    pads = [m for m in markers if m.ns == 'pads']
    assert len(pads) == 10
    assert {m.header.frame_id for m in markers} == {'kinematic_frame'}
    labels = {m.text for m in markers if m.ns == 'labels'}
    assert {'snare', 'bass', 'open hihat'} <= labels
