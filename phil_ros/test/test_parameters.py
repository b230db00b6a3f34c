"""A node's parameters declared from its table: defaults, descriptions, read-only unless the
node reads them again."""

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402

from phil_ros.parameters import declare_parameters  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

TABLE = {
    'rate_hz': (10.0, 'How often, Hz.'),
    'allow_missing': (['a'], 'Joints that may be absent.'),
}


def test_parameters_are_declared_with_their_description_and_read_only_unless_writable():
    with ros_test_context() as context:
        node = rclpy.create_node(
            'parameters_probe',
            context=context,
            parameter_overrides=[Parameter('rate_hz', value=20.0)],
        )
        try:
            values = declare_parameters(node, TABLE, writable=('allow_missing',))
            assert values == {'rate_hz': 20.0, 'allow_missing': ['a']}
            descriptors = node.describe_parameters(['rate_hz', 'allow_missing'])
            assert [d.description for d in descriptors] == [
                'How often, Hz.',
                'Joints that may be absent.',
            ]
            assert [d.read_only for d in descriptors] == [True, False]
            refused, allowed = (
                node.set_parameters([Parameter('rate_hz', value=5.0)])[0],
                node.set_parameters([Parameter('allow_missing', value=['b'])])[0],
            )
            assert not refused.successful and allowed.successful
        finally:
            node.destroy_node()
