"""The TCP bridge's command handler: each parsed line goes, typed, to the behavior planner
(/behavior_planner/decide) and its answer back to the client; ESTOP goes to the hardware's
ESTOP word first, and while the planner is down only ESTOP, QUIT (which then ends the graph at
once) and GET_STATUS are served.

The TCP server calls ``handle`` from a worker thread, which waits for the planner's answer while
the other clients are served; ROS callbacks never wait. The wait is ``reply_timeout_s`` plus
the time the planner may hold a command that came during a transition (``COMMAND_WAIT_S``):
given up sooner, an answer that came later would say the opposite of what the robot did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.node import Node

from phil_control.command_conversions import command_to_msg
from phil_control.core.behavior.turns import COMMAND_WAIT_S
from phil_control.core.protocol import commands as cmd
from phil_control.core.protocol import format_status
from phil_control.node_names import HARDWARE_NODE, PLANNER_NODE
from phil_control.tcp.handler import HandlerReply
from phil_description.core.estop_word import estop_word_name, trigger_estop
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import HardwareStatus, RobotStatus
from phil_msgs.srv import Decide
from phil_ros.graph_shutdown import GraphShutdownSender
from phil_ros.heartbeats import Liveness

# The GET_STATUS that must be answered before a bridge's port opens is asked again after this.
PROBE_ATTEMPT_S = 1.0


class PlannerHandler:
    """The TCP server's CommandHandler: forwards commands to the behavior planner; ESTOP goes
    to the hardware's ESTOP word first."""

    def __init__(
        self,
        node: Node,
        timeout_s: float,
        liveness_timeout_s: float,
        key: GraphKey,
        on_planner_down: Callable[[], None] = lambda: None,
    ) -> None:
        self._client = node.create_client(Decide, f'{PLANNER_NODE}/decide')
        self._timeout_s = timeout_s
        self._status: RobotStatus | None = None
        self._hardware: HardwareStatus | None = None
        self._estop_word = estop_word_name(node.context.get_domain_id(), HARDWARE_NODE, key.tag)
        self._estop_problem = ''

        def planner_down(_down) -> None:
            self._wake_waiting()
            on_planner_down()

        self.liveness = Liveness(node, [PLANNER_NODE], liveness_timeout_s, on_down=planner_down)
        self.shutdown = GraphShutdownSender(node, key)
        # Calls waiting for the planner; the graph shutdown wakes them (no answer will come).
        self._waiting: set[threading.Event] = set()
        self._waiting_lock = threading.Lock()
        self._graph_ending = False

    def set_status(self, status: RobotStatus) -> None:
        self._status = status

    @property
    def has_status(self) -> bool:
        return self._status is not None

    def set_hardware(self, status: HardwareStatus) -> None:
        self._hardware = status

    def estop_now(self) -> str:
        """The server's ESTOP fast path: latch the bus loop through the ESTOP word."""
        self._estop_problem = trigger_estop(self._estop_word)
        return self._estop_problem

    def handle(self, command, client_id: int) -> HandlerReply:
        planner_down = not self.liveness.alive(PLANNER_NODE)
        if isinstance(command, cmd.Estop) and not self._estop_problem:
            # Latched already (estop_now); the planner follows the hardware's status.
            if self._client.service_is_ready():
                self._client.call_async(Decide.Request(command=command_to_msg(command)))
            return HandlerReply(
                True,
                'the hardware latched; behavior_planner is not answering' if planner_down else '',
            )
        if isinstance(command, cmd.Quit) and planner_down:
            self.shutdown.send('QUIT while behavior_planner is down')
            return HandlerReply(
                True,
                'behavior_planner is not answering: the graph shuts down '
                'without the shutdown pose',
            )
        if planner_down:  # its calls would wait in vain
            return HandlerReply(
                False,
                'behavior_planner is not answering; only ESTOP, QUIT '
                'and GET_STATUS are served now',
            )
        if not self._client.wait_for_service(timeout_sec=self._timeout_s):
            return HandlerReply(False, 'behavior_planner is not running')
        done = threading.Event()
        with self._waiting_lock:
            if self._graph_ending:
                done.set()
            self._waiting.add(done)
        try:
            future = self._client.call_async(Decide.Request(command=command_to_msg(command)))
            future.add_done_callback(lambda _: done.set())
            answered = done.wait(self._timeout_s + COMMAND_WAIT_S) and future.done()
        finally:
            with self._waiting_lock:
                self._waiting.discard(done)
        if answered:
            response = future.result()
            return HandlerReply(response.accepted, response.reason)
        if self._graph_ending:
            # The planner ended the graph (QUIT) before its answer got here.
            return HandlerReply(isinstance(command, cmd.Quit), 'the graph is shutting down')
        if not self.liveness.alive(PLANNER_NODE):
            return HandlerReply(False, 'behavior_planner went down before it answered')
        return HandlerReply(
            False,
            f'behavior_planner did not answer within {self._timeout_s + COMMAND_WAIT_S:.1f} s',
        )

    def ask_planner(self):
        """One GET_STATUS to the planner (the future), to find out that its answers reach us."""
        return self._client.call_async(Decide.Request(command=command_to_msg(cmd.GetStatus())))

    def graph_ending(self) -> None:
        """The graph shuts down: answer the calls still waiting for the planner now."""
        with self._waiting_lock:
            self._graph_ending = True
        self._wake_waiting()

    def _wake_waiting(self) -> None:
        """Answer the calls waiting for the planner now (the graph ends, or the planner
        went down: no answer will come)."""
        with self._waiting_lock:
            for done in self._waiting:
                done.set()

    def status_line(self) -> str:
        # None only when the planner went down before its first word (the port opened for
        # ESTOP and QUIT): what the hardware says, no angles.
        status = self._status or RobotStatus(state=RobotStatus.STATE_STANDBY, speed=1.0)
        listed = status.state != RobotStatus.STATE_STANDBY
        state = status.state
        if not self.liveness.alive(PLANNER_NODE):  # its last word is stale: the hardware's
            hardware = self._hardware
            state = (
                RobotStatus.STATE_ESTOP
                if hardware is not None and hardware.estop
                else RobotStatus.STATE_FAULT
            )
        return format_status(
            state,
            list(status.commanded_positions_rad) if listed else None,
            status.speed,
            status.resume_play_id if status.resume_valid else None,
            status.resume_bar,
        )


class PlannerProbe:
    """Calls ``on_answered`` once the planner is in STANDBY (``handler`` has its first status)
    and has answered one GET_STATUS: a bridge opens its port then, as upstream's controller
    opened it after its start-up, so the first command a client sends is carried out at once.
    Asked again each ``PROBE_ATTEMPT_S``: rmw_fastrtps drops the answer to a request that
    reaches a server before it has matched the client's reader ("client will not receive
    response"). ``poke`` asks at once (call it on the first status)."""

    def __init__(self, node: Node, handler: PlannerHandler, on_answered: Callable[[], None]):
        self._handler, self._on_answered = handler, on_answered
        self.done = False
        self._timer = node.create_timer(PROBE_ATTEMPT_S, self.poke)

    def poke(self) -> None:
        if self.done or not self._handler.has_status:
            return
        self._handler.ask_planner().add_done_callback(self._answered)

    def _answered(self, future) -> None:
        if self.done or future.cancelled() or future.exception() is not None:
            return
        self.stop()
        self._on_answered()

    def stop(self) -> None:
        """Ask no more (the port opened for another reason)."""
        self.done = True
        self._timer.cancel()
