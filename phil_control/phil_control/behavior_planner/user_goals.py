"""The user-facing action servers of the behavior planner: /phil/play, /phil/hit, /phil/look,
/phil/gesture, /phil/move and /phil/pose.

A goal becomes the command it asks for (with its options) and is decided in turn like a command
from any other route. A goal whose command is refused is accepted and aborted at once with the
reason in its result (a rejected ROS goal carries no reason). It ends when its motion or play
does. Cancelling halts the motion (or stops the play); the goal ends canceled once the joints
are at rest. The execute callbacks are coroutines: waiting costs nothing (waking futures).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from functools import partial

from rclpy.action import ActionServer, CancelResponse
from rclpy.node import Node

from phil_control.behavior_planner.goals import Completion
from phil_control.command_conversions import goal_command
from phil_control.core.protocol import ProtocolVocabulary, validate_command
from phil_msgs.action import Gesture, Hit, Look, Move, Play, Pose
from phil_ros.waking_future import complete, waking_future

ACTIONS = (
    (Play, 'play'),
    (Hit, 'hit'),
    (Look, 'look'),
    (Gesture, 'gesture'),
    (Move, 'move'),
    (Pose, 'pose'),
)


class UserGoals:
    """The action servers on ``node``.

    Args:
        node: The behavior planner.
        vocabulary: What a command may name (joints, poses, instruments, limits).
        decide_in_turn: ``await decide_in_turn(command, completion)`` -> reply (accepted,
            reason); ``completion`` follows the motion or play it starts.
        cancel: ``cancel(name)`` stops the motion or play of a cancelled /phil/<name> goal.
        group: Callback group of the servers.
    """

    def __init__(
        self,
        node: Node,
        vocabulary: ProtocolVocabulary,
        decide_in_turn: Callable[..., Awaitable],
        cancel: Callable[[str], None],
        group,
    ) -> None:
        self._node = node
        self._vocabulary = vocabulary
        self._decide_in_turn = decide_in_turn
        self._cancel = cancel
        # Running goals' wakers by goal id: a cancel request completes its goal's.
        self._wakers: dict[bytes, object] = {}
        for action_type, name in ACTIONS:
            ActionServer(
                node,
                action_type,
                f'/phil/{name}',
                partial(self._execute, name, action_type),
                cancel_callback=self._accept_cancel,
                callback_group=group,
            )

    async def _execute(self, name: str, action_type, goal_handle):
        try:
            command = goal_command(name, goal_handle.request)
        except ValueError as error:
            return _finish(goal_handle, action_type, False, str(error))
        problem = validate_command(command, self._vocabulary)
        if problem is not None:
            return _finish(goal_handle, action_type, False, problem.reason)
        waker = waking_future(self._node)  # completed when the motion ends or a cancel arrives
        completion = Completion(
            on_feedback=partial(self._forward_feedback, goal_handle, name),
            on_finish=partial(complete, waker),
        )
        key = bytes(goal_handle.goal_id.uuid)
        self._wakers[key] = waker
        try:
            reply = await self._decide_in_turn(command, completion)
            if not reply.accepted:
                return _finish(goal_handle, action_type, False, reply.reason)
            await waker
            if not completion.done.is_set():  # cancelled: stop, then wait for the end
                self._cancel(name)
                settled = waking_future(self._node)
                completion.on_finish = partial(complete, settled)
                if not completion.done.is_set():
                    await settled
        finally:
            self._wakers.pop(key, None)
        result = _result(action_type, completion)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif completion.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _accept_cancel(self, goal_handle) -> CancelResponse:
        """Accept the cancel and wake the goal's execute callback, which stops the motion."""
        waker = self._wakers.get(bytes(goal_handle.goal_id.uuid))
        if waker is not None:
            complete(waker)
        return CancelResponse.ACCEPT

    def _forward_feedback(self, goal_handle, name: str, feedback) -> None:
        with contextlib.suppress(Exception):  # the goal may have ended; feedback is best effort
            goal_handle.publish_feedback(feedback)


def _result(action_type, completion: Completion):
    """The goal's result: what its motion or play reported, its success and reason."""
    result = action_type.Result()
    if completion.result is not None:
        fields = result.get_fields_and_field_types()
        for field_name in completion.result.get_fields_and_field_types():
            if field_name in fields:
                setattr(result, field_name, getattr(completion.result, field_name))
    result.success, result.reason = completion.success, completion.reason
    return result


def _finish(goal_handle, action_type, success: bool, reason: str):
    result = action_type.Result(success=success, reason=reason)
    (goal_handle.succeed if success else goal_handle.abort)()
    return result
