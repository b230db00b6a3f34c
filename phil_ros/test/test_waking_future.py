"""waking_future: a coroutine awaiting it in a SingleThreadedExecutor resumes as soon as
another thread completes it, with nothing else to wake the executor (no timer, no message)."""

from __future__ import annotations

import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.task import Future  # noqa: E402

from phil_ros.testing import ros_test_context  # noqa: E402
from phil_ros.waking_future import complete, waking_future  # noqa: E402

# Far longer than the wake takes; an executor that is never woken waits all of it per round.
ROUND_TIMEOUT_S = 10.0


def run_waiter(make_future) -> tuple[list, float]:
    """Spin a node whose only work is a coroutine awaiting ``make_future(node)``, completed
    from another thread; returns (what the coroutine got, seconds the rounds took)."""
    with ros_test_context() as context:
        node = rclpy.create_node('waking_future_test', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        got: list = []

        async def waiter() -> None:
            future = make_future(node)
            threading.Timer(0.05, complete, (future, 'motion ended')).start()
            got.append(await future)

        task = executor.create_task(waiter)
        executor.spin_once(timeout_sec=0.0)  # runs the coroutine up to its await
        started = time.monotonic()
        for _ in range(5):
            if task.done():
                break
            executor.spin_once(timeout_sec=ROUND_TIMEOUT_S)
        elapsed = time.monotonic() - started
        executor.shutdown()
        node.destroy_node()
        return got, elapsed


def test_completing_from_another_thread_resumes_the_waiting_coroutine():
    got, elapsed = run_waiter(waking_future)
    assert got == ['motion ended']
    assert elapsed < ROUND_TIMEOUT_S, 'the executor was not woken: a round ran into its timeout'


def test_a_plain_future_leaves_the_coroutine_waiting_for_an_unrelated_wake_up():
    """Why waking_future exists: without its done callback nothing wakes the executor."""
    got, elapsed = run_waiter(lambda node: Future(executor=node.executor))
    assert elapsed >= ROUND_TIMEOUT_S


def test_complete_is_idempotent():
    future = Future()
    complete(future, 1)
    complete(future, 2)
    assert future.result() == 1
