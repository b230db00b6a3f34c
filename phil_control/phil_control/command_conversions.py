"""Typed commands (``core.protocol.commands``) and their ROS forms: the BehaviorCommand the TCP
bridge sends and the behavior planner decides, and the command each user goal asks for.

The text protocol is parsed once, where it arrives; between nodes a command travels typed.
"""

from __future__ import annotations

from phil_control.core.protocol import commands as cmd
from phil_msgs.msg import BehaviorCommand

#: Commands without arguments by message kind.
_PLAIN: dict[int, type] = {
    BehaviorCommand.GET_STATUS: cmd.GetStatus,
    BehaviorCommand.START: cmd.Start,
    BehaviorCommand.READY: cmd.Ready,
    BehaviorCommand.QUIT: cmd.Quit,
    BehaviorCommand.ESTOP: cmd.Estop,
    BehaviorCommand.RESET: cmd.Reset,
    BehaviorCommand.PAUSE: cmd.Pause,
    BehaviorCommand.RESUME: cmd.Resume,
    BehaviorCommand.PLAY_STOP: cmd.PlayCtrlStop,
}
_PLAIN_KIND = {command_type: kind for kind, command_type in _PLAIN.items()}


def command_to_msg(command: cmd.Command) -> BehaviorCommand:
    """The message of a command (every command but PROTOCOL, which a connection keeps)."""
    kind = _PLAIN_KIND.get(type(command))
    if kind is not None:
        return BehaviorCommand(kind=kind)
    if isinstance(command, cmd.PlayCtrlSpeed):
        requested = command.speed if command.requested is None else command.requested
        return BehaviorCommand(kind=BehaviorCommand.PLAY_SPEED, speed=requested)
    if isinstance(command, cmd.Look):
        return BehaviorCommand(
            kind=BehaviorCommand.LOOK, pan_rad=command.pan_rad, tilt_rad=command.tilt_rad
        )
    if isinstance(command, cmd.Gesture):
        return BehaviorCommand(kind=BehaviorCommand.GESTURE, name=command.name)
    if isinstance(command, cmd.Pose):
        return BehaviorCommand(kind=BehaviorCommand.POSE, name=command.name)
    if isinstance(command, cmd.Move):
        return BehaviorCommand(
            kind=BehaviorCommand.MOVE,
            joint_names=[joint for joint, _ in command.targets],
            positions_rad=[float(angle) for _, angle in command.targets],
            duration_s=command.duration_s or 0.0,
            profile=command.profile,
        )
    if isinstance(command, cmd.Hit):
        return BehaviorCommand(
            kind=BehaviorCommand.HIT,
            name=command.instrument,
            velocity=command.velocity,
            hand=command.hand,
        )
    if isinstance(command, cmd.Play):
        return BehaviorCommand(
            kind=BehaviorCommand.PLAY,
            name=command.play_id,
            speed=command.speed,
            start_bar=command.start_bar,
            improv=command.improv,
        )
    raise ValueError(f'{type(command).__name__} is not sent to the behavior planner')


def command_from_msg(msg: BehaviorCommand) -> cmd.Command:
    """The command of a message (ValueError naming what is wrong with it); the caller still
    checks it against the robot (``validate_command``)."""
    plain = _PLAIN.get(msg.kind)
    if plain is not None:
        return plain()
    if msg.kind == BehaviorCommand.PLAY_SPEED:
        return cmd.PlayCtrlSpeed.asked(msg.speed)
    if msg.kind == BehaviorCommand.LOOK:
        return cmd.Look(msg.pan_rad, msg.tilt_rad)
    if msg.kind == BehaviorCommand.GESTURE:
        return cmd.Gesture(msg.name)
    if msg.kind == BehaviorCommand.POSE:
        return cmd.Pose(msg.name)
    if msg.kind == BehaviorCommand.MOVE:
        return move_command(msg.joint_names, msg.positions_rad, msg.duration_s, msg.profile)
    if msg.kind == BehaviorCommand.HIT:
        return cmd.Hit(msg.name, msg.velocity or cmd.DEFAULT_HIT_VELOCITY, msg.hand)
    if msg.kind == BehaviorCommand.PLAY:
        return cmd.Play(msg.name, msg.speed or 1.0, msg.start_bar, msg.improv)
    raise ValueError(f'unknown command kind {msg.kind}')


def goal_command(name: str, goal) -> cmd.Command:
    """The command a goal of /phil/<name> asks for (ValueError naming what is wrong)."""
    if name == 'play':
        if goal.resume:
            return cmd.Resume()
        return cmd.Play(goal.score, goal.speed or 1.0, goal.start_bar, goal.improv)
    if name == 'hit':
        return cmd.Hit(goal.instrument, goal.velocity or cmd.DEFAULT_HIT_VELOCITY, goal.hand)
    if name == 'look':
        return cmd.Look(goal.pan_rad, goal.tilt_rad)
    if name == 'gesture':
        return cmd.Gesture(goal.gesture)
    if name == 'pose':
        return cmd.Pose(goal.pose)
    return move_command(goal.joint_names, goal.positions_rad, goal.duration_s, goal.profile)


def move_command(joint_names, positions_rad, duration_s: float, profile: str) -> cmd.Move:
    """MOVE of paired joint names and positions (duration 0 = the default)."""
    if len(joint_names) != len(positions_rad):
        raise ValueError(f'{len(joint_names)} joint names but {len(positions_rad)} positions')
    targets = tuple(zip(joint_names, (float(p) for p in positions_rad), strict=True))
    return cmd.Move(targets, duration_s or None, profile)
