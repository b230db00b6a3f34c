"""Optional ROS bridge of the device simulator: impacts and true joint states as topics.

rclpy runs in a separate process (spawned, fed through a bounded multiprocessing queue), so its
executor can never take the GIL from the device loop. The simulator side only enqueues; when
the queue is full, samples are dropped rather than delaying the devices.

Topics (node ``device_simulator``): ``/phil/sim/impacts`` (phil_msgs/HitEvent, SOURCE_DETECTED,
``command_time`` = the impact instant on the system clock) and ``/phil/sim/joint_states``
(sensor_msgs/JointState, the simulated truth).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from phil_hardware.sim.impacts import Impact, ImpactConfig, velocity_grade

if TYPE_CHECKING:
    from phil_hardware.sim.robot import SimulatedRobot

IMPACTS_TOPIC = '/phil/sim/impacts'
JOINT_STATES_TOPIC = '/phil/sim/joint_states'
_DRAIN_PERIOD_S = 0.005


class RosBridge:
    """Publishes from a child process; the methods here never block.

    Args:
        joint_names: Joint order of the published states.
        impact_config: For the velocity grade of HitEvent (default parameters if None).
        queue_size: Messages buffered towards the child before new ones are dropped.
    """

    def __init__(
        self,
        joint_names: Sequence[str],
        impact_config: ImpactConfig | None = None,
        queue_size: int = 1000,
    ) -> None:
        self._joint_names = list(joint_names)
        self._impact_config = impact_config or ImpactConfig()
        context = multiprocessing.get_context('spawn')
        self._queue: Any = context.Queue(queue_size)
        self._process = context.Process(
            target=_child_main,
            args=(self._queue, self._joint_names, os.getpid()),
            name='phil-sim-ros-bridge',
            daemon=True,
        )
        self.dropped = 0

    def start(self) -> None:
        """Start the ROS process, time-sharing."""
        self._process.start()
        leave_real_time(self._process.pid)

    def _put(self, item: object) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def publish_impact(self, impact: Impact, wall_time_s: float) -> None:
        """Queue one HitEvent (``wall_time_s``: the impact instant on the system clock)."""
        self._put(
            (
                'impact',
                impact.instrument,
                impact.instrument_id,
                impact.limb.code,
                velocity_grade(impact, self._impact_config),
                wall_time_s,
            )
        )

    def publish_joint_state(
        self, wall_time_s: float, positions_rad: Sequence[float], velocities_rad_s: Sequence[float]
    ) -> None:
        """Queue one JointState sample."""
        self._put(('joints', wall_time_s, list(positions_rad), list(velocities_rad_s)))

    def sample_joint_states(
        self, robot: SimulatedRobot, rate_hz: float, stop: threading.Event
    ) -> threading.Thread:
        """Publish the robot's truth at ``rate_hz`` from a daemon thread until ``stop``."""
        period = 1.0 / rate_hz

        def loop() -> None:
            while not stop.wait(period):
                self.publish_joint_state(
                    time.time(), robot.joint_positions_rad(), robot.joint_velocities_rad_s()
                )

        thread = threading.Thread(target=loop, name='phil-sim-joint-states', daemon=True)
        thread.start()
        return thread

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the child to shut down; end it if it does not within ``timeout_s``."""
        if self._process.pid is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=1.0)
        end_process(self._process, timeout_s)
        # The child may have left first (a graph shutdown reaches it directly): what is still
        # queued has no reader, and waiting to flush it would keep this process from exiting.
        self._queue.cancel_join_thread()


def end_process(process: Any, timeout_s: float) -> None:
    """Wait ``timeout_s`` for ``process`` to end, then SIGTERM it, then SIGKILL it.

    SIGKILL is needed: a child stuck in C code holding the GIL (Fast DDS's teardown can
    deadlock against a discovery callback when a whole graph stops at once) never runs its
    Python SIGTERM handler, and multiprocessing's exit handler then waits for it without end
    (CI once saw the simulator outlive the launcher's stop, killed after 15 s).
    """
    process.join(timeout_s)
    for end in (process.terminate, process.kill):
        if not process.is_alive():
            return
        end()
        process.join(1.0)


def leave_real_time(pid: int) -> None:
    """Make process ``pid`` (before it starts any thread) time-sharing, niceness at least 0.

    A child inherits the simulator's SCHED_RR and niceness, yet nothing in the bridge is on
    the drives' time line (the samples carry their own times). At the simulator's priority,
    its start-up (importing rclpy, a second of CPU) would take round-robin slices from the
    device loop, and a spinning rclpy a core ahead of the whole command path.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, pid, max(0, os.getpriority(os.PRIO_PROCESS, pid)))
        os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    except ProcessLookupError:
        pass  # gone already (its exit code says why)


def _child_main(items: Any, joint_names: list[str], parent_pid: int) -> None:
    from phil_description.core.parent_process import PARENT_PID_ENV
    from phil_ros.node_runner import run_node

    # The node runner ends the bridge once the simulator is gone (as it ends a launcher's child
    # once the launcher is gone): its parent is the simulator, not the launcher it names.
    os.environ[PARENT_PID_ENV] = str(parent_pid)
    run_node(lambda: make_bridge_node(items, joint_names))


def _stamp(wall_time_s: float) -> Any:
    from builtin_interfaces.msg import Time

    seconds = int(wall_time_s)
    return Time(sec=seconds, nanosec=int((wall_time_s - seconds) * 1e9))


def make_bridge_node(items: Any, joint_names: list[str], **node_options: Any) -> Any:
    """Create the ``device_simulator`` node that drains ``items`` into the two topics.

    rclpy and the messages are imported here, so only the child process ever loads them.
    """
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from phil_msgs.msg import HitEvent

    class _Node(Node):
        def __init__(self) -> None:
            super().__init__('device_simulator', **node_options)
            self._impacts = self.create_publisher(HitEvent, IMPACTS_TOPIC, 10)
            self._joints = self.create_publisher(JointState, JOINT_STATES_TOPIC, 10)
            self.create_timer(_DRAIN_PERIOD_S, self._drain)

        def _drain(self) -> None:
            while True:
                try:
                    item = items.get_nowait()
                except queue.Empty:
                    return
                if item is None:
                    rclpy.try_shutdown()
                    return
                if item[0] == 'impact':
                    _, instrument, instrument_id, limb, grade, wall_time_s = item
                    self._impacts.publish(
                        HitEvent(
                            source=HitEvent.SOURCE_DETECTED,
                            instrument=instrument,
                            instrument_id=instrument_id,
                            limb=limb,
                            velocity=grade,
                            command_time=_stamp(wall_time_s),
                        )
                    )
                else:
                    _, wall_time_s, positions, velocities = item
                    message = JointState(name=joint_names, position=positions, velocity=velocities)
                    message.header.stamp = _stamp(wall_time_s)
                    self._joints.publish(message)

    return _Node()
