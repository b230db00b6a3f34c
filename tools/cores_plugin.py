"""pytest plugin of `make test-cores`: the ROS-free cores' tests on a Python without ROS.

A test module that needs ROS (its import fails with ``No module named 'rclpy'`` or another ROS
package, or it calls ``pytest.importorskip`` on one) is skipped and named; any other import
problem, e.g. syntax or a standard-library name newer than this Python, fails as usual. The
summary line counts the modules skipped for ROS, so a core test that starts to need ROS shows.
"""

from __future__ import annotations

import re

import pytest

#: Top-level modules that come with ROS 2 (or with this workspace's ROS side).
ROS_MODULES = frozenset(
    {
        'action_msgs',
        'ament_index_python',
        'builtin_interfaces',
        'geometry_msgs',
        'launch',
        'launch_ros',
        'lifecycle_msgs',
        'phil_msgs',
        'phil_ros',
        'rcl_interfaces',
        'rclpy',
        'rosgraph_msgs',
        'rosidl_runtime_py',
        'sensor_msgs',
        'std_msgs',
        'std_srvs',
        'trajectory_msgs',
        'unique_identifier_msgs',
        'visualization_msgs',
    }
)
# A missing module, or (run from the workspace root) a ROS package's source folder found as an
# empty namespace package.
_MISSING = re.compile(
    r"No module named '([\w.]+)'|cannot import name '\w+' from '([\w.]+)' \(unknown location\)"
)
_skipped_for_ros: list[str] = []


def ros_module_missing(text: str) -> str | None:
    """The ROS module a failed import names in ``text`` (None: not a missing ROS module)."""
    match = _MISSING.search(text)
    name = match and (match.group(1) or match.group(2))
    return name if name and name.split('.')[0] in ROS_MODULES else None


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed and isinstance(collector, pytest.Module):
        missing = ros_module_missing(str(report.longrepr))
        if missing:
            report.outcome = 'skipped'
            report.longrepr = (str(collector.path), 0, f'needs ROS ({missing})')
            _skipped_for_ros.append(collector.path.name)


def pytest_terminal_summary(terminalreporter):
    if _skipped_for_ros:
        terminalreporter.write_line(
            f'[test-cores] {len(_skipped_for_ros)} test modules need ROS and were skipped'
        )
