"""The description core imports and works with rclpy and every ROS message package blocked."""

import subprocess
import sys

BLOCK_ROS = """
import sys
for name in ('rclpy', 'std_msgs', 'visualization_msgs', 'phil_msgs'):
    sys.modules[name] = None  # any import of these now raises ImportError
from phil_description.core import load_robot_model
from phil_description.kit_markers import kit_marker_specs
model = load_robot_model()
assert len(model.joints) == 13 and kit_marker_specs(model.kit)
print('ok')
"""


def test_core_imports_without_ros():
    result = subprocess.run(
        [sys.executable, '-c', BLOCK_ROS], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith('ok')
