"""behavior_planner: owns the robot state and serves the user-facing Phil API.

Actions (phil_msgs): /phil/play, /phil/hit, /phil/look, /phil/gesture, /phil/move, /phil/pose.
Services: /phil/start, /phil/ready, /phil/quit, /phil/pause, /phil/resume, /phil/stop,
/phil/estop, /phil/reset (Trigger), /phil/speed (SetSpeed), /phil/command (Command: one line of
the brain's protocol for ROS users, parsed by the protocol core), /behavior_planner/decide
(Decide: one typed command; the TCP bridge sends the lines it parsed as these).
Publishes /phil/status (RobotStatus, transient local) on every change and at ``status_rate_hz``;
publishes /phil/shutdown (phil_msgs/GraphShutdown, signed) when QUIT has finished, which ends
every node.

The hardware's latch is the truth: FAULT and ESTOP follow /hardware/status, and RESET is asked
of the hardware, which grants it once the cause is gone. ESTOP from any route reaches the bus
loop at once (``Dispatcher.estop_now``), RESET reaches the hardware at once, and a latch drops
the motions decided before it (``Dispatcher.drop_earlier_motions``). The planner watches the
heartbeats of ``watched_nodes`` (the launcher passes every other node of the graph): the status
names the ones that are down, a motion that needs a node of the motion path that is down is
refused with the reason, the goals running on it end, and a silent hardware node latches FAULT
here (it cannot report it itself). At most ``MAX_QUEUED_MOTIONS`` motions wait or run; one more
is refused (queue full).

Every command, from any route, goes through one StateMachine; the user goals (``user_goals``)
too. Everything runs on the node's single-threaded executor, so no lock is needed: the
dispatcher (a coroutine carrying out the state machine's decisions), the liveness watch and
every callback share its one thread, and none of them blocks.
"""

from __future__ import annotations

import math
import time
from functools import partial

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from phil_control.behavior_planner.config import Config
from phil_control.behavior_planner.dispatcher import Dispatcher
from phil_control.behavior_planner.goals import Completion
from phil_control.behavior_planner.services import CommandServices
from phil_control.behavior_planner.status import robot_status
from phil_control.behavior_planner.user_goals import UserGoals
from phil_control.conversions import measured_positions
from phil_control.core.behavior import BehaviorConfig, ResumePoint, RobotState, StateMachine
from phil_control.core.behavior.actions import HaltMotion
from phil_control.core.behavior.state_machine import NEVER_WAIT
from phil_control.core.behavior.turns import CommandTurns
from phil_control.core.protocol import (
    LOOK_JOINTS,
    ProtocolVocabulary,
)
from phil_control.core.protocol import commands as cmd
from phil_control.node_names import HARDWARE_NODE, MOTION_PATH
from phil_control.tcp.handler import HandlerReply, snapshot_status_line
from phil_description.core import default_robot_model
from phil_description.core.graph_key import GraphKey
from phil_description.core.liveness import NodeDown
from phil_msgs.msg import HardwareStatus, MotorStates, RobotStatus
from phil_ros.executors import waiting_executor
from phil_ros.graph_shutdown import GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S, GraphShutdownSender
from phil_ros.heartbeats import Liveness
from phil_ros.node_runner import run_node
from phil_ros.qos import LATCHED
from phil_ros.waking_future import complete, waking_future

REJECTION_LOG_PERIOD_S = 1.0
#: Motions queued or running at most; one more is refused (a flood of LOOKs would otherwise
#: queue minutes of motion and keep the command path busy planning them).
MAX_QUEUED_MOTIONS = 8


class BehaviorPlanner(Node):
    """The robot's state machine behind ROS actions and services."""

    def __init__(self, **node_options) -> None:
        super().__init__('behavior_planner', **node_options)
        # What destroy_node uses, before anything can fail (rclpy's shutdown also destroys a
        # node that Ctrl-C interrupted here).
        self._graph_shutdown: GraphShutdownSender | None = None
        self._watch: Liveness | None = None
        config = Config.from_parameters(self)
        key = GraphKey.from_environment()
        self._model = default_robot_model()
        self._names = self._model.joint_names
        self._vocabulary = ProtocolVocabulary.from_robot_model(
            self._model, look_joints=LOOK_JOINTS
        )
        self._machine = StateMachine(
            BehaviorConfig(pose_names=tuple(self._model.poses)), clock=time.monotonic
        )
        self._turns = CommandTurns(time.monotonic)  # commands waiting for a transition
        self._commanded = [float(v) for v in self._model.poses['init']]
        self._ready_pose = [float(v) for v in self._model.poses['ready']]
        self._measured = [math.nan] * len(self._names)
        self._hardware = HardwareStatus()
        self._play_feedback = None
        self._joint_trajectory_permitted = False
        self._hardware_down = False  # FAULT latched here: the hardware node went down
        self._status_pub = self.create_publisher(RobotStatus, '/phil/status', LATCHED)
        # /phil/status starts once the graph is met (the hardware configured, every server
        # answered; or, when one did not within its bound, once that was logged: START then
        # meets it again): STANDBY then means START is carried out at once, and the TCP
        # bridge opens its port, as upstream's controller did once its start-up was done.
        self._graph_ready = False
        self._graph_shutdown = GraphShutdownSender(self, key)
        self._watch = Liveness(
            self,
            config.watched_nodes,
            config.liveness_timeout_s,
            on_down=self._node_down,
            on_back=self._node_back,
        )
        self._create_interfaces(config, key)
        self._dispatcher.meet_graph()

    def _create_interfaces(self, config: Config, key: GraphKey) -> None:
        """The dispatcher (the planner's links to the graph), the user-facing services and
        goals, the inputs of the status and its timer."""
        group = ReentrantCallbackGroup()
        self._dispatcher = Dispatcher(
            self,
            self._names,
            self._model.poses,
            {
                'motion_finished': partial(self._event, 'motion_finished'),
                'start_completed': partial(self._event, 'start_completed'),
                'play_ended': self._play_ended,
                'play_feedback': self._on_play_feedback,
                'failed': self._failed,
                'shutdown': self._shutdown,
                'graph_met': self._graph_met,
            },
            key,
            self._down_reason,
        )
        self._command_services = CommandServices(
            self, self._machine, self._vocabulary, self._decide_in_turn, self._status_line, group
        )
        self._user_goals = UserGoals(
            self,
            self._vocabulary,
            self._decide_in_turn,
            self._cancel,
            group,
        )
        # Measured angles only feed the status (10 Hz): the 20 Hz motor states carry them at a
        # tenth of the cost of the 200 Hz /joint_states.
        self.create_subscription(
            MotorStates, '/hardware/motor_states', self._on_motor_states, 10, callback_group=group
        )
        self.create_subscription(
            JointState,
            '/trajectory_generator/commanded_state',
            self._on_commanded,
            LATCHED,
            callback_group=group,
        )
        self.create_subscription(
            HardwareStatus, '/hardware/status', self._on_hardware, LATCHED, callback_group=group
        )
        self.create_timer(1.0 / config.status_rate_hz, self._on_status_timer, callback_group=group)

    # ------------------------------------------------------------------ commands
    async def _decide_in_turn(self, command, completion: Completion | None = None):
        """Decide ``command`` now, or, while a transition is being carried out (START before
        its first trajectory, a PAUSE or stop before the play ends; ``StateMachine.waits``) or
        other commands wait, once its turn comes (``CommandTurns``)."""
        must_wait = not isinstance(command, NEVER_WAIT) and (
            self._turns.busy or self._machine.waits(command)
        )
        if must_wait:
            woken = waking_future(self)
            turn = self._turns.join(command, partial(complete, woken))
        if not must_wait:
            return self._decide(command, completion)
        self._release_turns()
        late = await woken
        try:
            if not late:
                return self._decide(command, completion)
            refusal = f'{type(command).__name__} rejected: {late}'
            self.get_logger().warning(refusal)
            if completion is not None:
                completion.finish(False, refusal)
            return HandlerReply(False, refusal)
        finally:
            self._turns.leave(turn)
            self._release_turns()

    def _release_turns(self) -> None:
        self._turns.release(self._machine.waits)

    def _decide(self, command, completion: Completion | None = None) -> HandlerReply:
        """Run one valid command through the machine; the links carry out its actions, in
        decision order (``completion`` follows its motion or play)."""
        reply = HandlerReply(False, self._motion_refusal(command))
        if not reply.reason:
            decision = self._machine.decide(command)
            reply = HandlerReply(decision.accepted, decision.reason)
            if decision.accepted:
                self._dispatcher.submit(decision.actions, completion)
        if not reply.accepted and completion is not None:
            completion.finish(False, reply.reason)
        state = self._machine.state.value
        name = type(command).__name__
        self._release_turns()
        if reply.accepted:
            self._publish_status()
            self._log_after_the_first_step(f'{name} accepted; state {state}')
        else:
            # A refusal changes nothing but last_rejection, which the next periodic status
            # carries; and a flood of them must cost the real-time command path little (the
            # TCP bridge's commands.csv has every line).
            self.get_logger().info(
                f'{name} rejected: {reply.reason}', throttle_duration_sec=REJECTION_LOG_PERIOD_S
            )
        return reply

    def _log_after_the_first_step(self, text: str) -> None:
        """Log ``text`` once the dispatcher has carried out the decision's first step: an
        rclpy log line costs ~0.8 ms here (the logger inspects its caller's frame), and the
        dispatcher's coroutine, queued before this task, runs first: the motion leaves that
        much sooner."""
        executor = self.executor
        if executor is None:  # not spinning (yet): nothing waits behind the line
            self.get_logger().info(text)
            return
        executor.create_task(self.get_logger().info, text)

    def _motion_refusal(self, command) -> str:
        """Why a motion the state machine would accept cannot be carried out now ('' if it
        can): a node of the motion path is down, or the motion queue is full."""
        if (
            not isinstance(command, cmd.MOTION_COMMANDS)
            or self._machine.state is not RobotState.IDLE
        ):
            return ''
        op = command.opcode.value
        down = [d.reason for d in self._watch.down() if d.node in MOTION_PATH]
        if down:
            return f'{op} rejected: {down[0]}'
        queued = self._dispatcher.motions_queued
        if queued >= MAX_QUEUED_MOTIONS:
            return (
                f'{op} rejected: motion queue full ({queued} motions queued or running, '
                f'at most {MAX_QUEUED_MOTIONS}); send it once one has finished'
            )
        return ''

    def _status_line(self) -> str:
        """GET_STATUS (upstream's line) of the machine's state and the commanded targets."""
        snapshot = self._machine.snapshot()
        return snapshot_status_line(snapshot, self._last_target)

    def _cancel(self, name: str) -> None:
        """Stop the play or halt the motion of a cancelled user goal."""
        if name == 'play':
            self._decide(cmd.PlayCtrlStop())
        else:
            self._dispatcher.submit((HaltMotion(),))

    def _on_play_feedback(self, feedback) -> None:
        self._play_feedback = feedback

    # ------------------------------------------------------------------ events
    def _event(self, name: str, *args) -> None:
        before = self._machine.state
        decision = getattr(self._machine, name)(*args)
        if decision.accepted:
            self._dispatcher.submit(decision.actions)
        after = self._machine.state
        if after is not before:
            self.get_logger().info(f'{name}: state {before.value} -> {after.value}')
        self._release_turns()
        self._publish_status()

    def _play_ended(self, play_id: str, result, success: bool, reason: str) -> None:
        self._play_feedback = None
        if result is not None and result.resume_valid:
            self._event('play_paused', ResumePoint(play_id, int(result.resume_bar)))
        else:
            self._event('play_finished')
        if not success:
            self.get_logger().warning(f'play {play_id} ended early: {reason}')

    def _failed(self, reason: str) -> None:
        self._dispatcher.drop_earlier_motions(reason)
        self._event('hardware_fault', reason)

    def _shutdown(self) -> None:
        self._event('shutdown_completed')
        self._graph_shutdown.send()

    # ------------------------------------------------------------------ liveness
    def _down_reason(self, node: str) -> str:
        """Why ``node`` is down ('' while it runs or is not watched)."""
        return next((down.reason for down in self._watch.down() if down.node == node), '')

    def _node_down(self, down: NodeDown) -> None:
        self.get_logger().error(down.reason)
        self._dispatcher.node_down(down.node, down.reason)
        if down.node == HARDWARE_NODE:  # it cannot latch or report anything any more
            self._hardware_down = True
            self._dispatcher.drop_earlier_motions(down.reason)
            self._event('hardware_fault', down.reason)
        self._publish_status()

    def _node_back(self, node: str) -> None:
        # The hardware's next status says whether it latched meanwhile (_on_hardware).
        self.get_logger().warning(f'{node.lstrip("/")} sends heartbeats again')
        self._publish_status()

    # ------------------------------------------------------------------ inputs
    def _on_motor_states(self, msg: MotorStates) -> None:
        unknown = [math.nan] * len(self._names)
        self._measured = measured_positions(msg, self._names, unknown).tolist()

    def _on_commanded(self, msg: JointState) -> None:
        index = {name: i for i, name in enumerate(msg.name)}
        if all(name in index for name in self._names):
            self._commanded = [msg.position[index[name]] for name in self._names]

    def _last_target(self) -> list[float]:
        """Upstream's last_q_target (GET_STATUS): while a song or HIT plays, the pose it ends
        in (ready), else the end of the motion the trajectory generator has queued (a play's
        windows reach it one by one)."""
        if self._machine.state is RobotState.PLAYING:
            return list(self._ready_pose)
        return list(self._commanded)

    def _on_hardware(self, msg: HardwareStatus) -> None:
        before = self._hardware
        self._hardware = msg
        latched = self._machine.state in (RobotState.FAULT, RobotState.ESTOP)
        reset_granted = msg.resets_granted > before.resets_granted  # a restart counts from 0
        if msg.estop and not before.estop:
            self._dispatcher.drop_earlier_motions('emergency stop')
            self._event('hardware_estop', 'emergency stop')
        elif msg.faults and not before.faults:
            fault = msg.faults[0]
            self._dispatcher.drop_earlier_motions(f'hardware fault: {fault.reason}')
            self._event('hardware_fault', f'{fault.joint or "hardware"}: {fault.reason}')
        elif (
            latched
            and not msg.faults
            and not msg.estop
            # A RESET granted counts even when no status showed the latch: statuses keep depth
            # 1, and a latch may come and go between two that reach us.
            and (before.faults or before.estop or self._hardware_down or reset_granted)
        ):
            self._hardware_down = False  # back, and nothing latched there
            self._event('hardware_cleared', msg.lifecycle_state == 'active', reset_granted)

    # ------------------------------------------------------------------ status
    def _on_status_timer(self) -> None:
        self._release_turns()  # a waiting command whose time is up is refused
        self._publish_status()

    def _graph_met(self) -> None:
        self._graph_ready = True
        self.get_logger().info('graph met: STANDBY, waiting for START')
        self._publish_status()

    def _publish_status(self) -> None:
        if not self._graph_ready:
            return
        snapshot = self._machine.snapshot()
        idle = snapshot.state is RobotState.IDLE
        if idle != self._joint_trajectory_permitted:  # in decision order
            self._joint_trajectory_permitted = idle
            self._dispatcher.permit_joint_trajectory(idle)
        status = robot_status(
            snapshot,
            self._hardware,
            self._play_feedback,
            self._names,
            self._last_target(),
            self._measured,
            [down.node for down in self._watch.down()],
        )
        status.header.stamp = self.get_clock().now().to_msg()
        self._status_pub.publish(status)

    def on_graph_shutdown(self) -> None:
        self._dispatcher.stop()

    def release(self) -> None:
        """The node's own teardown: wait until every node holds the graph shutdown this node
        sent (bounded)."""
        sender = self._graph_shutdown
        # Every watched node, and this one, subscribes to the graph shutdown.
        subscribers = 0 if self._watch is None else len(self._watch.watched) + 1
        if sender is not None and sender.sent and not sender.wait_delivered(subscribers):
            self.get_logger().warning(
                f'a node did not confirm the graph shutdown within '
                f'{GRAPH_SHUTDOWN_DELIVERY_TIMEOUT_S:.0f} s; the launcher stops it'
            )

    def destroy_node(self) -> None:
        self.release()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(BehaviorPlanner, args, make_executor=waiting_executor)


if __name__ == '__main__':
    main()
