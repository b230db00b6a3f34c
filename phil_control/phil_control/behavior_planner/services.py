"""The behavior planner's command services: /phil/start, /phil/ready, /phil/quit,
/phil/pause, /phil/resume, /phil/stop, /phil/estop, /phil/reset (Trigger), /phil/speed
(SetSpeed), /phil/command (one protocol line, for ROS users; parsed by the protocol core) and
/behavior_planner/decide (one typed command: what the TCP bridge sends). Every one is decided
in turn, as a command from any other route."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from rclpy.node import Node

from phil_control.command_conversions import command_from_msg
from phil_control.core.behavior import StateMachine
from phil_control.core.protocol import (
    ParseError,
    ProtocolVocabulary,
    parse_line,
    validate_command,
)
from phil_control.core.protocol import commands as cmd
from phil_msgs.srv import Command, Decide, SetSpeed, Trigger

TRIGGER_COMMANDS = {
    'start': cmd.Start,
    'ready': cmd.Ready,
    'quit': cmd.Quit,
    'pause': cmd.Pause,
    'resume': cmd.Resume,
    'stop': cmd.PlayCtrlStop,
    'estop': cmd.Estop,
    'reset': cmd.Reset,
}


class CommandServices:
    """The services on ``node``.

    Args:
        node: The behavior planner.
        machine: Its state machine (read for the state and speed each answer reports).
        vocabulary: What a command may name.
        decide_in_turn: ``await decide_in_turn(command)`` -> reply (accepted, reason).
        status_line: GET_STATUS's answer.
        group: Callback group of the services.
    """

    def __init__(
        self,
        node: Node,
        machine: StateMachine,
        vocabulary: ProtocolVocabulary,
        decide_in_turn: Callable[..., Awaitable],
        status_line: Callable[[], str],
        group,
    ) -> None:
        self._machine = machine
        self._vocabulary = vocabulary
        self._decide_in_turn = decide_in_turn
        self._status_line = status_line
        for name, command_type in TRIGGER_COMMANDS.items():
            handler = partial(self._on_trigger, command_type)
            node.create_service(Trigger, f'/phil/{name}', handler, callback_group=group)
        node.create_service(SetSpeed, '/phil/speed', self._on_speed, callback_group=group)
        node.create_service(Command, '/phil/command', self._on_command, callback_group=group)
        node.create_service(Decide, '~/decide', self._on_decide, callback_group=group)

    async def _on_command(self, request, response):
        parsed = parse_line(request.line, self._vocabulary)
        if isinstance(parsed, cmd.Protocol):  # a connection's setting: nothing to decide
            response.accepted, response.state = True, self._machine.state.value
            return response
        return await self._answer(parsed, response)

    async def _on_decide(self, request, response):
        try:
            command = command_from_msg(request.command)
        except ValueError as error:
            return await self._answer(ParseError('', str(error)), response)
        return await self._answer(validate_command(command, self._vocabulary) or command, response)

    async def _answer(self, command, response):
        """Fill a Command or Decide response: a refused input, GET_STATUS's line, or the
        decision on a valid command."""
        if isinstance(command, ParseError):
            response.accepted, response.reason = False, command.reason
        elif isinstance(command, cmd.GetStatus):
            response.accepted, response.reason = True, self._status_line()
        else:
            reply = await self._decide_in_turn(command)
            response.accepted, response.reason = reply.accepted, reply.reason
        response.state = self._machine.state.value
        return response

    async def _on_trigger(self, command_type, request, response):
        reply = await self._decide_in_turn(command_type())
        response.accepted, response.reason = reply.accepted, reply.reason
        response.state = self._machine.state.value
        return response

    async def _on_speed(self, request, response):
        command = cmd.PlayCtrlSpeed.asked(request.speed)
        problem = validate_command(command, self._vocabulary)
        if problem is not None:
            response.accepted, response.reason = False, problem.reason
        else:
            reply = await self._decide_in_turn(command)
            response.accepted, response.reason = reply.accepted, reply.reason
        response.speed = self._machine.speed
        return response
