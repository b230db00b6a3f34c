"""gen1_bridge: the Gen-1 brain's protocol (TCP 9999; FACTS 9.2) in front of the behavior
planner, beside the 1951 bridge. Off by default (launcher ``--gen1``, ``gen1:=true``).

Each Gen-1 command is translated (``core.gen1.commands``) into the commands of the 1951 protocol
and sent, typed, to /behavior_planner/decide, which decides it in its state machine as any
other: nothing from this port moves the robot past it. ``velocity_delta`` sets the score
player's parameter of that name. Gen-1 has no replies: a refused command is logged (warning)
with its reason. Every 100 ms the state line (``core.gen1.state_report``) goes to every client
when it changed. The port opens once the planner answers, as the 1951 port does.
Parameters: ``config.PARAMETERS``.
"""

from __future__ import annotations

import math
import os
import threading

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.node import Node

from phil_control.core.gen1.commands import Gen1Commands
from phil_control.core.gen1.messages import Gen1Message
from phil_control.core.gen1.state_report import (
    REPORT_PERIOD_S,
    RobotSnapshot,
    SongTempos,
    StateReport,
)
from phil_control.core.protocol import LOOK_JOINTS, ProtocolVocabulary
from phil_control.core.score import PlayListFile
from phil_control.gen1_bridge.config import Config
from phil_control.gen1_bridge.server import Gen1Server
from phil_control.tcp_bridge.planner_handler import PlannerHandler, PlannerProbe
from phil_description.core import default_robot_model
from phil_description.core.exit_status import CONFIG_ERROR_EXIT
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import RobotStatus
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED


class Gen1Bridge(Node):
    """Owns the Gen-1 server; subscribes /phil/status for the translation and the state line."""

    def __init__(self, **node_options) -> None:
        super().__init__('gen1_bridge', **node_options)
        self._server: Gen1Server | None = None
        config = Config.from_parameters(self)
        self._handler = PlannerHandler(
            self, config.reply_timeout_s, config.liveness_timeout_s, GraphKey.from_environment()
        )
        model = default_robot_model()
        self._commands = Gen1Commands(
            ProtocolVocabulary.from_robot_model(model, look_joints=LOOK_JOINTS)
        )
        self._lock = threading.Lock()  # the translator and what the worker threads set
        self._status: RobotStatus | None = None
        self._songs: dict[str, str] = {}  # play id -> the name the brain played it by
        self._last_action = ''
        self._total_bars = 0
        self._play_list_file = PlayListFile(config.play_list) if config.play_list else None
        self._tempos = SongTempos(self._play_list)
        self._report = StateReport()
        self._set_parameters = self.create_client(SetParameters, '/score_player/set_parameters')
        self.create_subscription(RobotStatus, '/phil/status', self._on_status, LATCHED)
        self._server = Gen1Server(
            self._handle, self._refuse_message, config.address, config.port, config.max_clients
        )
        self._config = config
        self._probe = PlannerProbe(self, self._handler, self._listen)
        self.create_timer(REPORT_PERIOD_S, self._send_report)
        self.get_logger().info('listening once the robot is in STANDBY')

    def _on_status(self, status: RobotStatus) -> None:
        first = self._status is None
        self._handler.set_status(status)
        with self._lock:
            self._status = status
            if status.total_bars:
                self._total_bars = status.total_bars
        if first:
            self._probe.poke()

    def _listen(self) -> None:
        try:
            host, port = self._server.start()
        except OSError as error:
            self.get_logger().fatal(
                f'configuration refused: cannot listen on {self._config.address}:'
                f'{self._config.port}: {error}'
            )
            os._exit(CONFIG_ERROR_EXIT)
        self.get_logger().info(f'listening on {host}:{port} (Gen-1 brain protocol)')

    def _handle(self, text: str, client_id: int) -> None:
        """One Gen-1 command (a worker thread of the server: it may wait for the planner)."""
        with self._lock:
            state = self._status.state if self._status is not None else 'STANDBY'
            translation = self._commands.translate(text, state)
        if translation.error:
            self.get_logger().warning(
                f'gen1 client {client_id}: {text!r} refused: {translation.error}'
            )
            return
        for command in translation.commands:
            reply = self._handler.handle(command, client_id)
            if not reply.accepted:
                self.get_logger().warning(
                    f'gen1 client {client_id}: {text!r} refused: {reply.reason}'
                )
                return
            if getattr(command, 'play_id', ''):
                with self._lock:
                    self._songs = {self._resolve(command.play_id): command.play_id}
        if translation.velocity_delta is not None:
            self._set_velocity_delta(translation.velocity_delta, text, client_id)
        with self._lock:
            self._last_action = text.strip()
        note = f' ({translation.note})' if translation.note else ''
        self.get_logger().info(f'gen1 client {client_id}: {text.strip()!r} accepted{note}')

    def _refuse_message(self, message: Gen1Message, client_id: int) -> None:
        self.get_logger().warning(f'gen1 client {client_id}: message refused: {message.error}')

    def _set_velocity_delta(self, delta: int, text: str, client_id: int) -> None:
        value = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=delta)
        request = SetParameters.Request(parameters=[Parameter(name='velocity_delta', value=value)])
        if not self._set_parameters.service_is_ready():
            self.get_logger().warning(
                f'gen1 client {client_id}: {text!r}: the score player is not running'
            )
            return

        def answered(future) -> None:
            results = future.result().results if future.exception() is None else []
            if not results or not results[0].successful:
                reason = results[0].reason if results else 'no answer'
                self.get_logger().warning(f'gen1 client {client_id}: {text!r} refused: {reason}')

        self._set_parameters.call_async(request).add_done_callback(answered)

    def _send_report(self) -> None:
        with self._lock:
            status = self._status
            if status is None:
                return
            snapshot = self._snapshot(status)
        line = self._report.line(snapshot)
        if line is not None:
            self._server.broadcast(line)

    def _snapshot(self, status: RobotStatus) -> RobotSnapshot:
        """The state line's material (lock held)."""
        playing = status.play_id if status.state == RobotStatus.STATE_PLAYING else ''
        song = playing or (status.resume_play_id if status.resume_valid else '')
        bar = status.bar if playing else (status.resume_bar if song else 0)
        measured = dict(zip(status.joint_names, status.measured_positions_rad, strict=False))
        return RobotSnapshot(
            state=status.state,
            measured_deg={name: math.degrees(value) for name, value in measured.items()},
            song=self._songs.get(song, song),
            bar=bar,
            total_bars=self._total_bars if song else 0,
            bpm=self._tempos.bpm(song, bar) * status.speed if song else 0.0,
            paused=status.resume_valid,
            faults=tuple(
                f'{fault.joint}: {fault.reason}' if fault.joint else fault.reason
                for fault in status.faults
            ),
            last_action=self._last_action,
        )

    def _play_list(self):
        """The play list as its file is now (lock held), None when there is none."""
        file = self._play_list_file
        if file is None:
            return None
        if file.refresh():
            self._tempos.forget()
        return file.play_list

    def _resolve(self, name: str) -> str:
        """The play id a song name (or alias) plays (lock held)."""
        play_list = self._play_list()
        try:
            return play_list.entry(name).play_id
        except (AttributeError, ValueError):
            return name

    def release(self) -> None:
        """The node's own teardown: the server stops."""
        if self._server is not None:
            self._server.stop()

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(Gen1Bridge, args)


if __name__ == '__main__':
    main()
