"""ROS messages <-> the cores' plain types, shared by the nodes of phil_control: stamps and
durations (``TimeBase``), trajectory chunks, measured positions, the hardware's latest RESET and
the stamp clock.

Core times are seconds since an epoch chosen by the node (its clock at start-up), so they stay
small and keep full float precision; ``TimeBase`` converts them to and from absolute stamps.
Conversions of messages never raise: a malformed message becomes a ``Rejection``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from trajectory_msgs.msg import JointTrajectoryPoint

from phil_control.core.motion import Chunk, Rejection, RejectReason
from phil_msgs.msg import HardwareStatus, MotorStates, TrajectoryChunk

_NS_PER_S = 1_000_000_000
#: Clocks a stamp can be on: the robot's CLOCK_MONOTONIC (one clock for every process, the bus
#: loop's) or the node's ROS clock.
STAMP_CLOCKS = ('monotonic', 'ros')


class TimeBase:
    """Absolute robot-clock nanoseconds <-> core seconds since ``epoch_ns``.

    Args:
        epoch_ns: The clock reading that is core time 0, ns.
    """

    def __init__(self, epoch_ns: int) -> None:
        self.epoch_ns = int(epoch_ns)

    def to_seconds(self, nanoseconds: int) -> float:
        """Core seconds of an absolute time in ns."""
        return (int(nanoseconds) - self.epoch_ns) / _NS_PER_S

    def to_nanoseconds(self, seconds: float) -> int:
        """Absolute ns of a core time in s (rounded to the nanosecond)."""
        return self.epoch_ns + round(seconds * _NS_PER_S)

    def stamp(self, seconds: float) -> Time:
        """``builtin_interfaces/Time`` of a core time."""
        sec, nanosec = divmod(self.to_nanoseconds(seconds), _NS_PER_S)
        return Time(sec=sec, nanosec=nanosec)

    def from_stamp(self, stamp: Time) -> float:
        """Core seconds of a ``builtin_interfaces/Time``."""
        return self.to_seconds(stamp_ns(stamp))


def stamp_ns(stamp: Time) -> int:
    """A ``builtin_interfaces/Time`` in ns."""
    return stamp.sec * _NS_PER_S + stamp.nanosec


def duration_msg(seconds: float) -> Duration:
    """``builtin_interfaces/Duration`` of a non-negative time span in s."""
    sec, nanosec = divmod(round(seconds * _NS_PER_S), _NS_PER_S)
    return Duration(sec=sec, nanosec=nanosec)


def duration_seconds(duration: Duration) -> float:
    """Seconds of a ``builtin_interfaces/Duration``."""
    return duration.sec + duration.nanosec / _NS_PER_S


def chunk_to_msg(chunk: Chunk, timebase: TimeBase) -> TrajectoryChunk:
    """A core chunk as ``phil_msgs/TrajectoryChunk`` (header.stamp = absolute start)."""
    msg = TrajectoryChunk()
    msg.trajectory.header.stamp = timebase.stamp(chunk.start_s)
    msg.trajectory.joint_names = list(chunk.joint_names)
    points = []
    for index, offset_s in enumerate(chunk.times_from_start_s):
        point = JointTrajectoryPoint()
        point.positions = chunk.positions_rad[index].tolist()
        if chunk.velocities_rad_s is not None:
            point.velocities = chunk.velocities_rad_s[index].tolist()
        point.time_from_start = duration_msg(float(offset_s))
        points.append(point)
    msg.trajectory.points = points
    msg.control_modes = list(chunk.control_modes)
    msg.replace = chunk.replace
    msg.sequence = chunk.sequence
    return msg


def msg_to_chunk(msg: TrajectoryChunk, timebase: TimeBase) -> Chunk | Rejection:
    """A ``TrajectoryChunk`` as a core chunk; ragged point arrays are a MALFORMED rejection."""
    names = tuple(msg.trajectory.joint_names)
    points = msg.trajectory.points
    if not points:
        return Rejection(RejectReason.MALFORMED, 'chunk has no points')
    with_velocities = [len(point.velocities) > 0 for point in points]
    for index, point in enumerate(points):
        if len(point.positions) != len(names):
            return Rejection(
                RejectReason.MALFORMED,
                f'point {index} has {len(point.positions)} positions for {len(names)} joints',
            )
        if with_velocities[index] and len(point.velocities) != len(names):
            return Rejection(
                RejectReason.MALFORMED,
                f'point {index} has {len(point.velocities)} velocities for {len(names)} joints',
            )
    if any(with_velocities) and not all(with_velocities):
        return Rejection(RejectReason.MALFORMED, 'some points have velocities and some not')
    velocities = (
        np.array([point.velocities for point in points], dtype=float)
        if all(with_velocities)
        else None
    )
    return Chunk(
        joint_names=names,
        start_s=timebase.from_stamp(msg.trajectory.header.stamp),
        times_from_start_s=np.array([duration_seconds(p.time_from_start) for p in points]),
        positions_rad=np.array([point.positions for point in points], dtype=float).reshape(
            len(points), len(names)
        ),
        velocities_rad_s=velocities,
        control_modes=tuple(int(mode) for mode in msg.control_modes),
        replace=bool(msg.replace),
        sequence=int(msg.sequence),
    )


def latch_barrier_ns(status: HardwareStatus) -> int:
    """A goal made before this time (CLOCK_REALTIME ns, as the graph key's goal ids say and the
    hardware stamps) was decided before a latch that ``status`` shows or whose RESET it
    counts: its snapshot's time when it shows a latch, else when the latest RESET was granted
    (0: neither). Nothing decided before a latch may move the robot after it."""
    if status.estop or status.faults:
        return stamp_ns(status.header.stamp)
    return stamp_ns(status.last_reset)


#: Why a goal made before the latch barrier is refused.
DECIDED_BEFORE_LATCH = (
    'dropped: decided before the hardware latched (ESTOP or a fault, RESET since or not); '
    'nothing decided before a latch moves the robot after it'
)


def last_reset_ns(status: HardwareStatus) -> int:
    """When the hardware granted its latest RESET (CLOCK_REALTIME ns, as goal ids say); now
    when the status does not say (then every goal so far counts as made before it)."""
    return stamp_ns(status.last_reset) or time.time_ns()


def last_reset_s(status: HardwareStatus, timebase: TimeBase, now_s: float) -> float:
    """Core time the hardware granted its latest RESET (``status.last_reset``); ``now_s`` when
    the status does not say or says a time to come (a stamp on another clock): then all motion
    sent so far counts as sent before it."""
    stamp = status.last_reset
    return min(timebase.from_stamp(stamp), now_s) if stamp.sec or stamp.nanosec else now_s


def measured_positions(
    msg: MotorStates, names: Sequence[str], base_rad: Sequence[float]
) -> np.ndarray:
    """``base_rad`` with the finite positions of the connected motors in ``msg`` written over it
    (by joint name)."""
    positions = np.array(base_rad, dtype=float)
    index = {name: i for i, name in enumerate(names)}
    for motor in msg.motors:
        if motor.connected and motor.joint in index and math.isfinite(motor.position_rad):
            positions[index[motor.joint]] = motor.position_rad
    return positions


def stamp_clock(name: str, ros_clock) -> Callable[[], int]:
    """The ns clock of a ``stamp_clock`` parameter: CLOCK_MONOTONIC or the node's clock."""
    if name == 'monotonic':
        return time.monotonic_ns
    return lambda: ros_clock.now().nanoseconds
