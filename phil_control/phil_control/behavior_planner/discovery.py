"""Meeting the action servers once, at start-up, before any goal that moves the robot.

ROS 2 service discovery has a race: a server can receive a request before it has matched the
client's response reader, and rmw_fastrtps then drops the response after 100 ms ("client will
not receive response"). A goal would run while the planner waited in vain for its acceptance,
and sending it again would move the robot twice. Waiting until the server is discovered
(``server_is_ready``) does not close the race: it is the server's side that has not matched.
So each server is sent an invalid goal, which it refuses with a reason and which moves nothing,
until one is answered; after that, answers reach the planner.
"""

from __future__ import annotations

import math

from phil_control.behavior_planner.waits import RETRY_ATTEMPT_S, STEP_TIMEOUT_S, Waits
from phil_msgs.action import Gesture, Hit, Look, Move, Play

#: A goal of each action that every server refuses (unsigned, and invalid besides).
PROBE_GOALS = {
    Move: lambda: Move.Goal(joint_names=['(discovery probe)']),
    Look: lambda: Look.Goal(pan_rad=math.nan),
    Gesture: lambda: Gesture.Goal(gesture='(discovery probe)'),
    Play: lambda: Play.Goal(score='(discovery probe)'),
    Hit: lambda: Hit.Goal(instrument='(discovery probe)'),
}


async def meet_servers(waits: Waits, clients: dict) -> None:
    """Probe each server until it answers (``clients``: action type -> (client, name));
    TimeoutError naming the first that does not within STEP_TIMEOUT_S."""
    for kind, (client, name) in clients.items():
        goal = PROBE_GOALS[kind]()
        await waits.retry(
            lambda c=client, n=name, g=goal: _probe(waits, c, n, g), name, STEP_TIMEOUT_S
        )


async def _probe(waits: Waits, client, name: str, goal) -> None:
    if not await waits.until_ready(client.server_is_ready, RETRY_ATTEMPT_S):
        raise TimeoutError(f'action {name} is not available')
    handle = await waits.within(client.send_goal_async(goal), RETRY_ATTEMPT_S, name)
    if handle.accepted:
        await waits.within(handle.get_result_async(), RETRY_ATTEMPT_S, name)
