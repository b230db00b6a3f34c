"""The executor choice between rclpy versions (phil_ros.executors): each branch runs here,
whichever rclpy the suite runs on (Jazzy's 7.x and Kilted's 9.x both have the EventsExecutor;
Humble's has none, which the second test recreates)."""

from __future__ import annotations

import sys

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from phil_ros.executors import fastest_executor, waiting_executor  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402


def _spins_a_timer(executor, context) -> bool:
    """The executor runs a node's timer callback (it is a working executor, not just a type)."""
    node = rclpy.create_node('executor_probe', context=context)
    fired = []
    node.create_timer(0.01, lambda: fired.append(True))
    executor.add_node(node)
    for _ in range(100):
        executor.spin_once(timeout_sec=0.1)
        if fired:
            break
    executor.shutdown()
    node.destroy_node()
    return bool(fired)


def test_the_fastest_executor_is_the_events_executor_where_rclpy_has_one():
    with ros_test_context() as context:
        executor = fastest_executor(context)
        # A Python class on rclpy 7, a factory of the C++ one on rclpy 9: compare names.
        assert type(executor).__name__ == 'EventsExecutor'
        assert _spins_a_timer(executor, context)


def test_without_an_events_executor_the_fastest_is_a_single_threaded_one(monkeypatch):
    monkeypatch.setitem(sys.modules, 'rclpy.experimental', None)  # import fails, as on Humble
    with ros_test_context() as context:
        executor = fastest_executor(context)
        assert type(executor) is SingleThreadedExecutor
        assert _spins_a_timer(executor, context)


def test_the_waiting_executor_is_single_threaded_on_every_version():
    with ros_test_context() as context:
        executor = waiting_executor(context)
        assert type(executor) is SingleThreadedExecutor
        assert _spins_a_timer(executor, context)
