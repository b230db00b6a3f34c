"""/phil/status as the behavior planner publishes it: the state machine's snapshot with the
joints (commanded and measured), the play's progress, the faults and the nodes that are down."""

from __future__ import annotations

from collections.abc import Sequence

from phil_control.core.behavior import MachineSnapshot, RobotState
from phil_msgs.msg import Fault, HardwareStatus, RobotStatus


def robot_status(
    snapshot: MachineSnapshot,
    hardware: HardwareStatus,
    play_feedback,
    joint_names: Sequence[str],
    commanded_rad: Sequence[float],
    measured_rad: Sequence[float],
    unresponsive_nodes: Sequence[str],
) -> RobotStatus:
    """The status message (without its stamp). ``play_feedback``: the running play's last
    Play feedback, or None."""
    status = RobotStatus(
        state=snapshot.state.value, speed=snapshot.speed, realtime=hardware.realtime
    )
    if snapshot.resume_point is not None:
        status.resume_valid = True
        status.resume_play_id = snapshot.resume_point.play_id
        status.resume_bar = snapshot.resume_point.bar
    if play_feedback is not None and snapshot.state is RobotState.PLAYING:
        status.play_id, status.bar = play_feedback.play_id, play_feedback.bar
        status.total_bars = play_feedback.total_bars
    status.joint_names = list(joint_names)
    status.commanded_positions_rad = [float(v) for v in commanded_rad]
    status.measured_positions_rad = [float(v) for v in measured_rad]
    status.faults = list(hardware.faults)
    if snapshot.fault_reason and not status.faults:
        status.faults = [Fault(code=Fault.CODE_UNKNOWN, reason=snapshot.fault_reason)]
    rejection = snapshot.last_rejection
    status.last_rejection = rejection.reason if rejection is not None else ''
    status.unresponsive_nodes = [node.lstrip('/') for node in unresponsive_nodes]
    return status
