"""Translate between ROS messages and the bus loop's plain types (the hardware node's glue).

Robot time: the bus loop runs on ``time.monotonic()``; ROS stamps are on the node's clock
(system time). ``ClockBridge`` maps one to the other by their offset, sampled tightly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from phil_description.core.trajectory import Chunk, ControlMode
from phil_hardware.core.safety import Fault as CoreFault
from phil_hardware.rt import BusSnapshot
from phil_msgs.msg import Fault, HardwareStatus, MotorState, MotorStates
from phil_msgs.msg import TrajectoryChunk as ChunkMsg

_NS = 1_000_000_000


class ClockBridge:
    """ROS (system-clock) stamps <-> monotonic seconds, by the offset between the two clocks,
    measured afresh at every conversion so a stepped system clock is followed at once."""

    @staticmethod
    def measure_offset_ns(samples: int = 3) -> int:
        """time_ns - monotonic_ns, from the tightest of a few back-to-back readings."""
        best = None
        for _ in range(samples):
            before = time.monotonic_ns()
            wall = time.time_ns()
            after = time.monotonic_ns()
            if best is None or after - before < best[0]:
                best = (after - before, wall - (before + after) // 2)
        return best[1]

    def to_monotonic_s(self, stamp: Time) -> float:
        return (stamp.sec * _NS + stamp.nanosec - self.measure_offset_ns()) / _NS

    def to_stamp(self, monotonic_s: float) -> Time:
        total = round(monotonic_s * _NS) + self.measure_offset_ns()
        return Time(sec=total // _NS, nanosec=total % _NS)


def chunk_from_msg(msg: ChunkMsg, clock: ClockBridge) -> Chunk:
    """A core chunk from a phil_msgs/TrajectoryChunk.

    Raises:
        ValueError: naming what is malformed (the chunk queue validates limits and joints).
    """
    trajectory = msg.trajectory
    modes = tuple(int(mode) for mode in msg.control_modes)
    if modes and len(modes) != len(trajectory.joint_names):
        raise ValueError(f'{len(modes)} control modes for {len(trajectory.joint_names)} joints')
    return _chunk(
        trajectory,
        clock,
        modes or (ControlMode.POSITION,) * len(trajectory.joint_names),
        bool(msg.replace),
        int(msg.sequence),
    )


def chunk_from_trajectory(trajectory: JointTrajectory, clock: ClockBridge) -> Chunk:
    """joint_trajectory_controller semantics: stamp 0 means now; all joints in position mode."""
    return _chunk(
        trajectory, clock, (ControlMode.POSITION,) * len(trajectory.joint_names), True, 0
    )


def _chunk(
    trajectory: JointTrajectory,
    clock: ClockBridge,
    modes: tuple[int, ...],
    replace: bool,
    sequence: int,
) -> Chunk:
    names = tuple(trajectory.joint_names)
    points = trajectory.points
    if not points:
        raise ValueError('trajectory has no points')
    stamp = trajectory.header.stamp
    start = (
        time.monotonic() if stamp.sec == 0 and stamp.nanosec == 0 else clock.to_monotonic_s(stamp)
    )
    times = np.array([p.time_from_start.sec + p.time_from_start.nanosec / _NS for p in points])
    for index, point in enumerate(points):
        if len(point.positions) != len(names):
            raise ValueError(
                f'point {index} has {len(point.positions)} positions for {len(names)} joints'
            )
    positions = np.array([list(p.positions) for p in points], dtype=float)
    velocities = None
    if all(len(p.velocities) == len(names) for p in points):
        velocities = np.array([list(p.velocities) for p in points], dtype=float)
    return Chunk(
        joint_names=names,
        start_s=start,
        times_from_start_s=times,
        positions_rad=positions,
        velocities_rad_s=velocities,
        control_modes=modes,
        replace=replace,
        sequence=sequence,
    )


def joint_state_msg(snapshot: BusSnapshot, clock: ClockBridge) -> JointState:
    """Measured positions/velocities; effort = EPOS torque (N m), TMotor current (A) as given."""
    msg = JointState()
    msg.header.stamp = clock.to_stamp(snapshot.time_s)
    msg.name = list(snapshot.joint_names)
    msg.position = [float(v) for v in snapshot.positions_rad]
    msg.velocity = [float(v) for v in snapshot.velocities_rad_s]
    msg.effort = [
        float(t) / 1000.0 if math.isfinite(t) else float(c)
        for t, c in zip(snapshot.torques_mnm, snapshot.currents_a, strict=True)
    ]
    return msg


def motor_states_msg(snapshot: BusSnapshot, clock: ClockBridge, motors: dict) -> MotorStates:
    """Per-motor state; ``motors`` maps joint -> MotorParams (family, model, bus, id)."""
    msg = MotorStates(realtime=snapshot.realtime)
    msg.header.stamp = clock.to_stamp(snapshot.time_s)
    for index, name in enumerate(snapshot.joint_names):
        motor = motors[name]
        feedback = snapshot.last_feedback_s[index]
        msg.motors.append(
            MotorState(
                joint=name,
                family=motor.family.value,
                model=motor.model,
                bus=motor.bus,
                device_id=motor.device_id,
                connected=bool(snapshot.connected[index]),
                position_rad=float(snapshot.positions_rad[index]),
                velocity_rad_s=float(snapshot.velocities_rad_s[index]),
                current_a=float(snapshot.currents_a[index]),
                torque_nm=float(snapshot.torques_mnm[index]) / 1000.0,
                temperature_c=float(snapshot.temperatures_c[index]),
                error_code=int(snapshot.error_codes[index]),
                statusword=int(snapshot.statuswords[index]) & 0xFFFF,
                status=snapshot.motor_status[index],
                last_feedback=clock.to_stamp(feedback) if math.isfinite(feedback) else Time(),
            )
        )
    return msg


def fault_msg(fault: CoreFault, clock: ClockBridge) -> Fault:
    return Fault(
        code=int(fault.code),
        joint=fault.joint,
        reason=fault.reason,
        stamp=clock.to_stamp(fault.time_s),
    )


def hardware_status_msg(
    snapshot: BusSnapshot | None,
    lifecycle_state: str,
    realtime: bool,
    clock: ClockBridge,
    extra_faults: Sequence[Fault] = (),
) -> HardwareStatus:
    status = HardwareStatus(lifecycle_state=lifecycle_state, realtime=realtime)
    status.faults = list(extra_faults)
    if snapshot is None:
        status.header.stamp = clock.to_stamp(time.monotonic())
        return status
    # The time of the state it reports: a latch after it is not in this status.
    status.header.stamp = clock.to_stamp(snapshot.time_s)
    status.estop = bool(snapshot.estop)
    status.faults += [fault_msg(fault, clock) for fault in snapshot.faults]
    status.resets_granted = int(snapshot.resets_granted)
    if math.isfinite(snapshot.reset_granted_s):
        status.last_reset = clock.to_stamp(snapshot.reset_granted_s)
    status.missing_motors = list(snapshot.missing_motors)
    status.queued_chunks = int(snapshot.queued_chunks)
    if snapshot.queued_chunks and math.isfinite(snapshot.queue_end_s):
        status.queue_end = clock.to_stamp(snapshot.queue_end_s)
    status.tick_period_p99_s = float(snapshot.tick_p99_s)
    status.tick_period_max_s = float(snapshot.tick_max_s)
    status.frames_sent = int(snapshot.frames_sent)
    status.frames_received = int(snapshot.frames_received)
    status.frames_rejected = int(snapshot.frames_rejected)
    status.frames_skipped = int(snapshot.frames_skipped)
    return status
