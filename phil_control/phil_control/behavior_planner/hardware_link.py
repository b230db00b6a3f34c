"""The hardware node as the behavior planner reaches it: its lifecycle (activate at START, shut
down at QUIT, and at start-up the wait for its configure and for every node it watches), and
what never waits its turn: ESTOP through the hardware's ESTOP word, RESET and the
joint-trajectory permit as requests nobody waits for. Requests are signed with the graph key
(the hardware refuses them from anyone else). The lifecycle steps are coroutines on the
planner's executor."""

from __future__ import annotations

import time

from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from rclpy.node import Node

from phil_control.behavior_planner.waits import RETRY_ATTEMPT_S, STEP_TIMEOUT_S, Waits
from phil_control.node_names import HARDWARE_NODE
from phil_description.core.estop_word import estop_word_name, trigger_estop
from phil_description.core.graph_key import GraphKey
from phil_msgs.srv import HardwareRequest, Trigger
from phil_ros.graph_safety import signed_request

ACTIVATE_TIMEOUT_S = 60.0
NODES_POLL_S = 0.05
TRANSITION_POLL_S = 0.1


class HardwareLink:
    """The hardware node's lifecycle state (rclpy's get_state) and its signed requests."""

    def __init__(self, node: Node, group, key: GraphKey, waits: Waits) -> None:
        self._key = key
        self._waits = waits
        self._logger = node.get_logger()
        self._estop_word = estop_word_name(node.context.get_domain_id(), HARDWARE_NODE, key.tag)
        self._estop = node.create_client(Trigger, f'{HARDWARE_NODE}/estop', callback_group=group)
        self._request = node.create_client(
            HardwareRequest, '/hardware/request', callback_group=group
        )
        self._get = node.create_client(GetState, '/hardware/get_state', callback_group=group)

    def estop_now(self) -> None:
        """Latch the hardware's ESTOP now: the ESTOP word (the bus loop latches from it within
        a tick, whatever else runs or hangs), or /hardware/estop without waiting for an answer
        when the word cannot be written."""
        problem = trigger_estop(self._estop_word)
        if problem:
            self._logger.error(f'ESTOP word: {problem}; calling /hardware/estop')
            if self._estop.service_is_ready():
                self._estop.call_async(Trigger.Request())

    def reset_now(self, down_reason: str) -> None:
        """Ask for a RESET without waiting (the hardware decides, and its status says what it
        did); its refusal is logged. ``down_reason``: why the hardware is down ('' if not)."""
        future = None if down_reason else self.request_async('reset')
        if future is None:
            reason = down_reason or '/hardware/request is not available'
            self._logger.warning(f'RESET not sent to the hardware: {reason}')
            return

        def answered(done) -> None:
            error = done.exception()
            if error is not None:
                self._logger.error(f'RESET request failed: {error}')
            elif not done.result().accepted:
                self._logger.warning(f'RESET refused by the hardware: {done.result().reason}')

        future.add_done_callback(answered)

    def permit_joint_trajectory(self, allowed: bool) -> None:
        """Whether ~/joint_trajectory may be followed (the planner is IDLE); not waited for."""
        name = 'allow_joint_trajectory' if allowed else 'forbid_joint_trajectory'
        if self.request_async(name) is None and allowed:
            self._logger.warning(f'{name}: /hardware/request is not available')

    async def activate(self) -> None:
        """Configure (if needed) and activate; RuntimeError with the hardware's reason."""
        state = await self._primary_state()
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
            response = await self.request(step, ACTIVATE_TIMEOUT_S)
            if not response.accepted:
                raise RuntimeError(f'hardware {step}: {response.reason}')

    async def meet(self) -> None:
        """Once the start-up configure has finished, ask until the hardware has seen every
        node it watches (what its activation would otherwise wait for; heartbeats come twice
        a second).

        Raises:
            RuntimeError: Nodes still absent after STEP_TIMEOUT_S (named).
        """
        await self._primary_state()
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            response = await self._waits.retry(
                lambda: self.request('nodes_ready', RETRY_ATTEMPT_S),
                self._request.srv_name,
                STEP_TIMEOUT_S,
            )
            if response.accepted:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f'hardware: {response.reason}')
            await self._waits.sleep(NODES_POLL_S)

    async def shut_down(self) -> None:
        """Deactivate and clean up whatever is up; nothing when the node is gone."""
        if not await self._waits.until_ready(self._get.service_is_ready, 2.0):
            return
        steps = {
            State.PRIMARY_STATE_ACTIVE: ('deactivate', 'cleanup'),
            State.PRIMARY_STATE_INACTIVE: ('cleanup',),
        }
        for step in steps.get(await self._primary_state(), ()):
            await self.request(step, ACTIVATE_TIMEOUT_S)

    async def request(self, name: str, timeout_s: float = STEP_TIMEOUT_S):
        """One signed request (``HardwareRequest.REQUEST_*``); the response. Signed once the
        service is there: the stamp must be fresh when it arrives."""
        if not await self._waits.until_ready(self._request.service_is_ready, STEP_TIMEOUT_S):
            raise RuntimeError(f'service {self._request.srv_name} is not available')
        request = signed_request(self._key, HardwareRequest.Request(request=name))
        return await self._waits.within(
            self._request.call_async(request), timeout_s, self._request.srv_name
        )

    def request_async(self, name: str):
        """A signed request that nobody waits for (the future; None while no server)."""
        if not self._request.service_is_ready():
            return None
        return self._request.call_async(
            signed_request(self._key, HardwareRequest.Request(request=name))
        )

    async def _primary_state(self) -> int:
        """The lifecycle state, after any transition in progress (e.g. the configure the node
        runs at start-up) has finished."""
        deadline = time.monotonic() + ACTIVATE_TIMEOUT_S
        while True:
            response = await self._waits.retry(
                lambda: self._waits.call(
                    self._get, GetState.Request(), STEP_TIMEOUT_S, RETRY_ATTEMPT_S
                ),
                self._get.srv_name,
                STEP_TIMEOUT_S,
            )
            state = response.current_state.id
            if state < State.TRANSITION_STATE_CONFIGURING or time.monotonic() > deadline:
                return state
            await self._waits.sleep(TRANSITION_POLL_S)
