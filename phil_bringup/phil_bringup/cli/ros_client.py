"""A small synchronous ROS 2 client for the `phil` command (a CLI may block; nodes may not)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor

from phil_ros.qos import LATCHED


class GraphNotRunningError(RuntimeError):
    """The service, action or topic did not appear: the Phil graph is not running here."""


def not_running_message(what: str) -> str:
    domain = os.environ.get('ROS_DOMAIN_ID', '0')
    return (
        f'{what} is not available on ROS_DOMAIN_ID={domain}: is Phil running? Start it '
        f'with `make run` (or `ros2 launch phil_bringup robot.launch.py sim:=true`), and use '
        f'the same ROS_DOMAIN_ID here.'
    )


class PhilClient:
    """Own context and node; call `close()` (or use as a context manager).

    Ctrl-C is a request, not an exception raised wherever the main thread is: raised inside
    rclpy (converting a message it had taken) it turned into a TypeError and the running goal
    was never cancelled. ``spin_until`` raises KeyboardInterrupt between two executor rounds.
    """

    def __init__(self, discovery_timeout_s: float = 5.0) -> None:
        self._context = rclpy.Context()
        rclpy.init(context=self._context)
        self.node = rclpy.create_node(f'phil_cli_{os.getpid()}', context=self._context)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._discovery_timeout_s = discovery_timeout_s
        self._interrupted = False
        self._previous_handler = None
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._on_interrupt)

    def _on_interrupt(self, signum: int, frame: object) -> None:
        self._interrupted = True  # a plain store: safe wherever the main thread is

    def __enter__(self) -> PhilClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
        self._executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self._context)

    def spin_until(
        self, done: Callable[[], bool], timeout_s: float | None, interruptible: bool = True
    ) -> bool:
        """Spin until ``done()`` (True) or ``timeout_s`` (False).

        Raises:
            KeyboardInterrupt: Ctrl-C came (``interruptible``).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not done():
            if interruptible and self._interrupted:
                raise KeyboardInterrupt
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._executor.spin_once(timeout_sec=0.05)
        return True

    def call(self, service_type: Any, name: str, request: Any, timeout_s: float = 15.0) -> Any:
        # 15 s: the planner may hold a command 10 s for a transition (READY during START).
        client = self.node.create_client(service_type, name)
        if not client.wait_for_service(timeout_sec=self._discovery_timeout_s):
            raise GraphNotRunningError(not_running_message(f'service {name}'))
        future = client.call_async(request)
        if not self.spin_until(future.done, timeout_s):
            raise TimeoutError(f'{name} did not answer within {timeout_s:.0f} s')
        return future.result()

    def run_action(
        self,
        action_type: Any,
        name: str,
        goal: Any,
        on_feedback: Callable[[Any], None] | None = None,
    ) -> tuple[bool, Any]:
        """Send a goal and wait for its result. Returns (accepted, result-or-None).
        Ctrl-C cancels the goal before re-raising."""
        client = ActionClient(self.node, action_type, name)
        if not client.wait_for_server(timeout_sec=self._discovery_timeout_s):
            raise GraphNotRunningError(not_running_message(f'action {name}'))
        feedback = (lambda message: on_feedback(message.feedback)) if on_feedback else None
        goal_future = client.send_goal_async(goal, feedback_callback=feedback)
        # A Ctrl-C now waits for the answer, so an accepted goal is cancelled, not left running.
        self.spin_until(goal_future.done, 10.0, interruptible=False)
        handle = goal_future.result()
        if handle is None or not handle.accepted:
            return False, None
        result_future = handle.get_result_async()
        try:
            self.spin_until(result_future.done, None)
        except KeyboardInterrupt:
            cancel = handle.cancel_goal_async()
            self.spin_until(cancel.done, 5.0, interruptible=False)
            self.spin_until(result_future.done, 10.0, interruptible=False)
            raise
        return True, result_future.result().result

    def latest(self, message_type: Any, topic: str, timeout_s: float = 5.0) -> Any:
        """The latched (or next) message on ``topic``."""
        received: list[Any] = []
        subscription = self.node.create_subscription(message_type, topic, received.append, LATCHED)
        try:
            if not self.spin_until(lambda: bool(received), timeout_s):
                raise GraphNotRunningError(not_running_message(f'topic {topic}'))
            return received[-1]
        finally:
            self.node.destroy_subscription(subscription)

    def watch(self, message_type: Any, topic: str, on_message: Callable[[Any], None]) -> None:
        """Call ``on_message`` for every message until Ctrl-C."""
        self.node.create_subscription(message_type, topic, on_message, LATCHED)
        self.spin_until(lambda: False, None)
