"""Waiting in ``async`` callbacks without blocking the executor.

rclpy's executors do not watch the future a coroutine awaits: a SingleThreadedExecutor runs a
pending coroutine again only when it wakes up for some other reason. ``waking_future`` binds
the future to the node's executor and gives it a done callback, so completing it (from any
thread) queues that callback as a task, which wakes the executor: the awaiting coroutine runs
again at once, without a thread blocked per waiting goal and without polling.

Use it with a SingleThreadedExecutor (``node_runner.waiting_executor``). rclpy's EventsExecutor
resumes every pending coroutine at once, whatever it awaits: there, any await is a busy loop.
"""

from __future__ import annotations

from rclpy.node import Node
from rclpy.task import Future


def waking_future(node: Node) -> Future:
    """A pending future on ``node``'s executor whose completion wakes that executor."""
    future = Future(executor=node.executor)
    future.add_done_callback(_wake)
    return future


def complete(future: Future, value: object = None) -> None:
    """Set ``future``'s result unless it is already done (a racing second completion is
    harmless: it only schedules the wake again)."""
    if not future.done():
        future.set_result(value)


def _wake(_future: Future) -> None:
    """Does nothing: scheduling it is what wakes the executor."""
