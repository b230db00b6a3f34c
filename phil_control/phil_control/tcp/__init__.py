"""The TCP command server (port 1951) of the brain's protocol, ROS-free.

Typical use::

    machine = StateMachine(BehaviorConfig(pose_names=tuple(model.poses)))
    handler = MachineCommandHandler(machine, execute=queue_actions, commanded_rad=targets)
    server = TcpServer(handler, ProtocolVocabulary.from_robot_model(model))
    server.start()          # 127.0.0.1:1951
    ...
    server.stop()
"""

from __future__ import annotations

from phil_control.tcp.config import (
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_PORT,
    TcpServerConfig,
    wire_text,
)
from phil_control.tcp.handler import (
    CommandHandler,
    CommandLogEntry,
    HandlerReply,
    MachineCommandHandler,
)
from phil_control.tcp.server import TcpServer

__all__ = [
    'DEFAULT_HOST',
    'DEFAULT_IDLE_TIMEOUT_S',
    'DEFAULT_PORT',
    'CommandHandler',
    'CommandLogEntry',
    'HandlerReply',
    'MachineCommandHandler',
    'TcpServer',
    'TcpServerConfig',
    'wire_text',
]
