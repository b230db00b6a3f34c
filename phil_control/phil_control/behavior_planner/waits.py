"""Waiting in the behavior planner's coroutines, on its single-threaded executor.

A wait is a waking future (``phil_ros.waking_future``) completed by what is awaited or by a
one-shot timer: nothing blocks a thread, nothing polls faster than it must, and the awaiting
coroutine runs again as soon as its answer is in.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from phil_ros.waking_future import complete, waking_future

#: How long one step waits for a server, or for its answer [s].
STEP_TIMEOUT_S = 10.0
#: One attempt of a request that may be repeated (a probe, a lifecycle state query) [s].
RETRY_ATTEMPT_S = 1.0
#: How often a server that is not there yet is looked for [s].
READY_POLL_S = 0.05


class Waits:
    """Waits on ``node``'s executor; the timers run in ``group`` (reentrant: a wait must never
    be held up by a long callback of the node)."""

    def __init__(self, node: Node, group: CallbackGroup) -> None:
        self._node = node
        self._group = group

    async def within(self, future, timeout_s: float, what: str) -> Any:
        """The future's result; TimeoutError naming ``what`` when none comes in time."""
        if not future.done():
            woken = waking_future(self._node)
            future.add_done_callback(lambda _future: complete(woken))
            await self._until(woken, timeout_s)
            if not future.done():
                raise TimeoutError(f'{what}: no answer within {timeout_s:.0f} s')
        return future.result()

    async def sleep(self, seconds: float) -> None:
        await self._until(waking_future(self._node), seconds)

    async def until_ready(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Whether ``ready()`` became true within ``timeout_s`` (looked at every
        READY_POLL_S: discovery has no event to wait on)."""
        deadline = time.monotonic() + timeout_s
        while not ready():
            if time.monotonic() >= deadline:
                return False
            await self.sleep(READY_POLL_S)
        return True

    async def call(
        self, client, request, timeout_s: float, answer_timeout_s: float | None = None
    ) -> Any:
        """The response; waits ``timeout_s`` for the service, then ``answer_timeout_s``
        (default ``timeout_s``) for the answer (TimeoutError: one that may be asked again)."""
        if not await self.until_ready(client.service_is_ready, timeout_s):
            raise RuntimeError(f'service {client.srv_name} is not available')
        return await self.within(
            client.call_async(request),
            timeout_s if answer_timeout_s is None else answer_timeout_s,
            client.srv_name,
        )

    async def retry(
        self, attempt: Callable[[], Awaitable[Any]], what: str, timeout_s: float
    ) -> Any:
        """``await attempt()`` again after a TimeoutError, for up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return await attempt()
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f'{what}: no answer within {timeout_s:.0f} s') from None

    async def _until(self, woken, timeout_s: float) -> None:
        """Await ``woken``, completed by someone else or after ``timeout_s``."""
        timer = self._node.create_timer(
            timeout_s, lambda: complete(woken), callback_group=self._group
        )
        try:
            await woken
        finally:
            self._node.destroy_timer(timer)
