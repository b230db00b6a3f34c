"""The behavior planner's clients of the motion servers: the trajectory generator's and the
score player's actions and services, and how one step is sent to them.

A send awaits what makes the next step safe (the server's acceptance, the service's answer),
never the end of a motion: a goal's end comes back through :class:`GoalTracker`.
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.action import ActionClient
from rclpy.node import Node

from phil_control.behavior_planner.discovery import meet_servers
from phil_control.behavior_planner.goals import Completion, GoalTracker, serving_node
from phil_control.behavior_planner.waits import STEP_TIMEOUT_S, Waits
from phil_msgs.action import Gesture, Hit, Look, Move, Play
from phil_msgs.srv import SetSpeed, Trigger

#: The motion actions of the trajectory generator, by goal type.
MOTION_ACTIONS = ((Look, 'look'), (Gesture, 'gesture'), (Move, 'move'))
#: The services a step triggers (a request without arguments).
TRIGGERS = ('/trajectory_generator/halt', '/score_player/pause', '/score_player/stop')


class MotionServers:
    """Action and service clients on ``node`` (callbacks in ``group``).

    Args:
        down_reason: Why a node is down now ('' while it runs): a step that needs it fails
            at once with that reason instead of timing out.
    """

    def __init__(
        self,
        node: Node,
        group,
        waits: Waits,
        goals: GoalTracker,
        down_reason: Callable[[str], str],
    ) -> None:
        self._node = node
        self._waits = waits
        self._goals = goals
        self._down_reason = down_reason
        self._action_names: dict[ActionClient, str] = {}
        self._motion = {
            kind: self._action_client(kind, f'/trajectory_generator/{name}', group)
            for kind, name in MOTION_ACTIONS
        }
        self._play = self._action_client(Play, '/score_player/play', group)
        self._hit = self._action_client(Hit, '/score_player/hit', group)
        self._triggers = {
            name: node.create_client(Trigger, name, callback_group=group) for name in TRIGGERS
        }
        self._speed = node.create_client(SetSpeed, '/score_player/speed', callback_group=group)

    def _action_client(self, kind: type, name: str, group) -> ActionClient:
        client = ActionClient(self._node, kind, name, callback_group=group)
        self._action_names[client] = name
        return client

    async def meet(self) -> None:
        """Exchange one request with every action server (see :mod:`discovery`)."""
        clients = {**self._motion, Play: self._play, Hit: self._hit}
        await meet_servers(
            self._waits, {kind: (c, self._action_names[c]) for kind, c in clients.items()}
        )

    async def send_motion(self, kind: type, goal, completion: Completion | None) -> None:
        await self._send_goal(self._motion[kind], goal, completion)

    async def send_hit(self, goal: Hit.Goal, completion: Completion | None) -> None:
        await self._send_goal(self._hit, goal, completion)

    async def send_play(self, goal: Play.Goal, completion: Completion | None) -> None:
        await self._send_goal(self._play, goal, completion, play=True)

    async def trigger(self, name: str) -> None:
        """Call one of :data:`TRIGGERS`; a refusal is logged (the step has been carried out)."""
        self._require(serving_node(name))
        response = await self._waits.call(self._triggers[name], Trigger.Request(), STEP_TIMEOUT_S)
        if not response.accepted:
            self._node.get_logger().warning(f'{name} refused: {response.reason}')

    async def set_speed(self, speed: float) -> None:
        await self._waits.call(self._speed, SetSpeed.Request(speed=speed), STEP_TIMEOUT_S)

    def _require(self, node: str) -> None:
        """RuntimeError with the reason when ``node`` is down (its calls would time out)."""
        reason = self._down_reason(node)
        if reason:
            raise RuntimeError(reason)

    async def _send_goal(
        self, client: ActionClient, goal, completion: Completion | None, play: bool = False
    ) -> None:
        """Send a goal and await its acceptance (its end is reported by its result)."""
        name = self._action_names[client]
        self._require(serving_node(name))
        if not await self._waits.until_ready(client.server_is_ready, STEP_TIMEOUT_S):
            raise RuntimeError(f'action {name} is not available')
        sent = self._goals.send(client, name, goal, completion, play)
        try:
            handle = await self._waits.within(sent.future, STEP_TIMEOUT_S, name)
        except TimeoutError as error:
            self._goals.end(sent, None, False, str(error))
            raise  # the step failed: reported
        self._goals.accepted(sent, handle)
