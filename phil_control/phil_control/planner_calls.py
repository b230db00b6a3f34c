"""Blocking calls of the behavior planner's worker thread: a future with a timeout, a service
call, a retried request, and the hardware node's lifecycle (activate at START, shut down at
QUIT), asked for with requests signed with the graph key (the hardware refuses them from anyone
else). Never call these from a ROS callback; only ``request_async`` (RESET, the joint-trajectory
permit) never waits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from rclpy.node import Node

from phil_description.core.graph_key import GraphKey
from phil_msgs.srv import HardwareRequest
from phil_ros.graph_safety import signed_request

STEP_TIMEOUT_S = 10.0
ACTIVATE_TIMEOUT_S = 60.0
# One attempt of a request that may be repeated (a goal probe, a lifecycle state query).
RETRY_ATTEMPT_S = 1.0
NODES_POLL_S = 0.05


def wait_for(future, what: str, timeout_s: float = STEP_TIMEOUT_S):
    """The future's result; TimeoutError naming ``what`` when none comes in time."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        raise TimeoutError(f'{what}: no answer within {timeout_s:.0f} s')
    return future.result()


def call_service(
    client, request, timeout_s: float = STEP_TIMEOUT_S, answer_timeout_s: float | None = None
):
    """The response; waits ``timeout_s`` for the service, then ``answer_timeout_s`` (default
    ``timeout_s``) for the answer (TimeoutError: one that may be asked for again)."""
    if not client.wait_for_service(timeout_sec=timeout_s):
        raise RuntimeError(f'service {client.srv_name} is not available')
    return wait_for(
        client.call_async(request),
        client.srv_name,
        timeout_s if answer_timeout_s is None else answer_timeout_s,
    )


def retry(attempt: Callable[[], Any], what: str) -> Any:
    """``attempt()`` again after a TimeoutError, for up to STEP_TIMEOUT_S."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        try:
            return attempt()
        except TimeoutError:
            if time.monotonic() > deadline:
                raise TimeoutError(f'{what}: no answer within {STEP_TIMEOUT_S:.0f} s') from None


class HardwareLifecycle:
    """The hardware node's lifecycle state (rclpy's get_state) and its signed requests."""

    def __init__(self, node: Node, group, key: GraphKey) -> None:
        self._key = key
        self._request = node.create_client(
            HardwareRequest, '/hardware/request', callback_group=group
        )
        self._get = node.create_client(GetState, '/hardware/get_state', callback_group=group)

    def activate(self) -> None:
        """Configure (if needed) and activate; RuntimeError with the hardware's reason."""
        state = self._primary_state()
        steps = {
            State.PRIMARY_STATE_UNCONFIGURED: ('configure', 'activate'),
            State.PRIMARY_STATE_INACTIVE: ('activate',),
            State.PRIMARY_STATE_ACTIVE: (),
        }
        if state not in steps:
            raise RuntimeError(
                f'hardware lifecycle state {state} cannot be activated (see /hardware/status)'
            )
        for step in steps[state]:
            response = self.request(step, ACTIVATE_TIMEOUT_S)
            if not response.accepted:
                raise RuntimeError(f'hardware {step}: {response.reason}')

    def meet(self) -> None:
        """Answered calls of each service (see ``GraphLinks._meet``) once the start-up
        configure has finished, until the hardware has seen every node it watches (what its
        activation would otherwise wait for; heartbeats come twice a second).

        Raises:
            RuntimeError: Nodes still absent after STEP_TIMEOUT_S (named).
        """
        self._primary_state()
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while not (
            response := retry(
                lambda: self.request('nodes_ready', RETRY_ATTEMPT_S), self._request.srv_name
            )
        ).accepted:
            if time.monotonic() > deadline:
                raise RuntimeError(f'hardware: {response.reason}')
            time.sleep(NODES_POLL_S)

    def shut_down(self) -> None:
        """Deactivate and clean up whatever is up; nothing when the node is gone."""
        if not self._get.wait_for_service(timeout_sec=2.0):
            return
        steps = {
            State.PRIMARY_STATE_ACTIVE: ('deactivate', 'cleanup'),
            State.PRIMARY_STATE_INACTIVE: ('cleanup',),
        }
        for step in steps.get(self._primary_state(), ()):
            self.request(step, ACTIVATE_TIMEOUT_S)

    def request(self, name: str, timeout_s: float = STEP_TIMEOUT_S):
        """One signed request (``HardwareRequest.REQUEST_*``); the response. Signed once the
        service is there: the stamp must be fresh when it arrives."""
        if not self._request.wait_for_service(timeout_sec=STEP_TIMEOUT_S):
            raise RuntimeError(f'service {self._request.srv_name} is not available')
        request = signed_request(self._key, HardwareRequest.Request(request=name))
        return wait_for(self._request.call_async(request), self._request.srv_name, timeout_s)

    def request_async(self, name: str):
        """A signed request that nobody waits for (the future; None while no server)."""
        if not self._request.service_is_ready():
            return None
        return self._request.call_async(
            signed_request(self._key, HardwareRequest.Request(request=name))
        )

    def _query_state(self):
        return call_service(self._get, GetState.Request(), STEP_TIMEOUT_S, RETRY_ATTEMPT_S)

    def _primary_state(self) -> int:
        """The lifecycle state, after any transition in progress (e.g. the configure the node
        runs at start-up) has finished."""
        deadline = time.monotonic() + ACTIVATE_TIMEOUT_S
        while True:
            state = retry(self._query_state, self._get.srv_name).current_state.id
            if state < State.TRANSITION_STATE_CONFIGURING or time.monotonic() > deadline:
                return state
            time.sleep(0.1)
