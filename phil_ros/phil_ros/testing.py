"""Test support for the Phil packages' rclpy tests (the ROS-free cores need none of it)."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import rclpy
from rclpy.context import Context

#: How long a test waits for a server or a service to be discovered: a condition, not a speed.
#: Discovery inside one process took over 10 s once on a busy machine (2 CPU hogs beside the
#: suite); a test that fails meets this only when the server never comes.
DISCOVERY_TIMEOUT_S = 30.0


@contextlib.contextmanager
def ros_test_context(
    domain_id: int | None = None, domains: tuple[int, int] = (1, 100)
) -> Iterator[Context]:
    """An initialised rclpy context, shut down afterwards, the environment left alone.

    Args:
        domain_id: ROS domain; default: the test run's ``ROS_DOMAIN_ID`` (``make test`` picks
            one per run), else a random one from ``domains`` so parallel runs stay apart.
        domains: Inclusive range of that random choice.
    """
    if domain_id is None:
        chosen = os.environ.get('ROS_DOMAIN_ID')
        domain_id = int(chosen) if chosen else random.randint(*domains)
    context = Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        yield context
    finally:
        rclpy.try_shutdown(context=context)
