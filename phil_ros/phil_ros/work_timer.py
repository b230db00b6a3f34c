"""A node timer that runs only while its node has work.

An idle node whose timer wakes its executor 50-100 times a second pays for every wake (a
Python executor rebuilds its wait set each time); on two shared cores that costs several
percent of a CPU per node and delays the next command. ``WorkTimer`` is cancelled while idle
and re-armed when work arrives; re-arming wakes the executor (``Executor.wake``), which would
otherwise sleep on with the timer it last saw cancelled.
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node


class WorkTimer:
    """A periodic timer with ``pause`` (from its callback, when idle) and ``resume``.

    Args:
        node: Owner of the timer.
        period_s: Period while running, s.
        callback: Called every period while running.
        callback_group: Group of the timer.
    """

    def __init__(
        self,
        node: Node,
        period_s: float,
        callback: Callable[[], None],
        callback_group: CallbackGroup,
    ) -> None:
        self._node = node
        self._timer = node.create_timer(period_s, callback, callback_group=callback_group)

    def pause(self) -> None:
        """Stop calling back until ``resume``."""
        self._timer.cancel()

    def resume(self) -> None:
        """Call back every period again (no-op while running)."""
        if self._timer.is_canceled():
            self._timer.reset()
            # A reset alone does not wake an executor already waiting without the timer.
            executor = self._node.executor
            if executor is not None:
                executor.wake()
