"""All simulated devices of a robot model on their buses, driven by one device loop.

The controller side and the simulator share nothing but the wire: CAN frames through injected
python-can buses (``virtual`` in tests, ``udp_multicast`` between processes) and bytes through a
serial line (a PTY). The loop (a thread, no rclpy) advances the physics to the injected clock's
time in small steps, serves received frames and packets, and sends what is due. Every physics
step feeds the joint-space truth into a history ring buffer and the impact detector.

Typical use::

    with SimulatedRobot(model, {'can0': bus0, ...}, PtyPort('/tmp/phil_sim/ttyDXL')) as robot:
        ...                                  # the loop runs in its own thread
        q = robot.joint_positions_rad()      # true joint angles, model joint order
"""

from __future__ import annotations

import logging
import math
import select
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

import can
import numpy as np

from phil_description.core import RobotModel
from phil_hardware.core.clock import Clock, MonotonicClock
from phil_hardware.core.codecs import CanFrame
from phil_hardware.core.codecs.cia301 import SYNC_COB_ID
from phil_hardware.core.transport import CanTransport
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.dynamixel_bank import DynamixelBank
from phil_hardware.sim.dynamixel_servo import DynamixelServo
from phil_hardware.sim.faults import FaultKind, InjectedFault
from phil_hardware.sim.impact_feed import ImpactFeed
from phil_hardware.sim.impacts import Impact, ImpactDetector
from phil_hardware.sim.joint_history import JointHistory
from phil_hardware.sim.loop_stalls import LoopStalls
from phil_hardware.sim.robot_devices import build_devices, initial_positions

_LOG = logging.getLogger(__name__)
# Frames taken from one bus per loop iteration, bounded so a flood cannot hold back every
# device's periodic sends and the Dynamixel line. A simulator that fell behind (a loaded
# machine) answers only the newest SYNC of what it took (the older ones still latch their
# targets, at their send times): replies to old SYNCs are old news and would only load the
# buses.
_MAX_FRAMES_PER_STEP = 256
_SYNC = CanFrame(SYNC_COB_ID, b'')


class SerialLine(Protocol):
    """The byte stream of the Dynamixel line (implemented by PtyPort)."""

    def read(self) -> bytes:
        """Return received bytes without blocking (b'' if none)."""
        ...

    def write(self, data: bytes) -> int:
        """Send bytes."""
        ...

    def fileno(self) -> int:
        """Descriptor for ``select``."""
        ...


class SimulatedRobot:
    """Every device of ``model`` whose bus is given, and the joint-space truth.

    Args:
        model: Robot model (normally the sim URDF); joint order, limits, motor parameters.
        can_buses: python-can buses by the model's bus name; devices on other buses are absent.
        serial_line: Line of the Dynamixel bank, or None for no Dynamixels.
        clock: Time source (default: monotonic).
        config: Behaviour.
        initial_positions_rad: Joint angles at power-on (default: the model's 'init' pose, the
            pinned pose); absent devices keep these values in the truth.

    Raises:
        ValueError: For a bus name the model does not declare, or a wrong initial pose.
    """

    def __init__(
        self,
        model: RobotModel,
        can_buses: Mapping[str, can.BusABC],
        serial_line: SerialLine | None = None,
        *,
        clock: Clock | None = None,
        config: SimConfig | None = None,
        initial_positions_rad: np.ndarray | None = None,
    ) -> None:
        unknown = sorted(set(can_buses) - set(model.hardware.can_buses))
        if unknown:
            raise ValueError(
                f'unknown CAN bus(es) {unknown}; the model declares '
                f'{sorted(model.hardware.can_buses)}'
            )
        self.model = model
        self.config = config or SimConfig()
        self.clock = clock or MonotonicClock()
        # Frames carry their CLOCK_MONOTONIC send time; only this clock can place them.
        self._send_times_usable = isinstance(self.clock, MonotonicClock)
        self._buses = dict(can_buses)
        # The transport's receive path drains a multicast socket several times faster than
        # python-can's recv and drops the devices' own echoed frames; a 1 kHz Maxon bus feeds
        # ~5000 datagrams/s here, which python-can alone cannot keep up with on a busy machine.
        self._transports = {name: CanTransport(name, bus) for name, bus in self._buses.items()}
        self._serial = serial_line
        self._q = initial_positions(model, initial_positions_rad)
        self.devices = build_devices(
            model, self.config, self._q, self._buses, serial_line is not None, lambda: self._q
        )
        self._on_bus = {
            name: [d for d in self.devices.values() if d.motor.bus == name] for name in self._buses
        }
        self._warn_status_id_clash()
        servos = [d for d in self.devices.values() if isinstance(d, DynamixelServo)]
        self.bank = DynamixelBank(servos) if serial_line is not None else None
        self._lock = threading.Lock()
        self._qd = np.zeros_like(self._q)
        self._time_s = self.clock.now()
        self._history = JointHistory(
            self.config.history_capacity, self.config.history_period_s, len(self._q)
        )
        detector = ImpactDetector(model, self.config.impacts) if self.config.impacts else None
        self._impact_feed = ImpactFeed(detector, self.config.impact_batch_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._fds: dict[str, int] = {}
        self._truth_sources = [(d.joint.index, d.motor, d.axis) for d in self.devices.values()]
        self.frames_received = 0
        #: Where every frame and serial block received goes (``CaptureWriter``-like), or None.
        self.wire_capture = None
        self._serial_bus = next(iter(model.hardware.serial_buses), 'serial')
        self.syncs_skipped = 0  # stale SYNCs latched but not answered (see step)
        self.send_errors = 0
        self.loop_errors = 0
        self.stalls = LoopStalls()  # the device loop's gaps (see _run)
        self._record(self._time_s)

    def _warn_status_id_clash(self) -> None:
        """Warn of buses where TMotor node 0's status id reads as NMT to the EPOS4 drives."""
        config = self.config
        if not config.tmotor.status_extended_id:
            for name, devices in self._on_bus.items():
                has_drives = any(d.family == 'epos4' for d in devices)
                if has_drives and any(d.family == 'tmotor' and d.device_id == 0 for d in devices):
                    # The 11-bit status id of node 0 is the NMT COB-ID 0x000.
                    _LOG.warning(
                        '%s: TMotor node 0 status frames use id 0x000, which the '
                        'EPOS4 drives on the same bus read as NMT commands; use '
                        'extended status ids',
                        name,
                    )

    # -------------------------------------------------------------------------- queries
    def device(self, joint: str) -> SimDevice:
        """The device driving ``joint``; KeyError lists the simulated joints."""
        try:
            return self.devices[joint]
        except KeyError:
            raise KeyError(
                f'no simulated device for {joint!r}; simulated joints: {", ".join(self.devices)}'
            ) from None

    def serves(self) -> dict[str, list[str]]:
        """Device descriptions per bus name (CAN buses and the serial bus)."""
        result = {name: [d.describe() for d in devices] for name, devices in self._on_bus.items()}
        if self.bank is not None:
            for servo in self.bank.servos.values():
                result.setdefault(servo.motor.bus, []).append(servo.describe())
        return result

    def joint_positions_rad(self) -> np.ndarray:
        """True joint angles [rad] in model joint order (a copy)."""
        with self._lock:
            return self._q.copy()

    def joint_velocities_rad_s(self) -> np.ndarray:
        """True joint velocities [rad/s] in model joint order (a copy)."""
        with self._lock:
            return self._qd.copy()

    @property
    def time_s(self) -> float:
        """Simulation time of the last physics step [s] (clock time)."""
        with self._lock:
            return self._time_s

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (t [s] shape (N,), q [rad] shape (N, joints)) in time order (copies)."""
        with self._lock:
            return self._history.samples()

    def impacts(self) -> list[Impact]:
        """Impacts detected so far (a copy)."""
        return self._impact_feed.impacts()

    def add_impact_listener(self, listener: Callable[[Impact], None]) -> None:
        """Call ``listener(impact)`` from the device loop for every new impact (keep it quick)."""
        self._impact_feed.add_listener(listener)

    def set_fault(
        self, joint: str, kind: FaultKind | str, value: float | None = None
    ) -> InjectedFault:
        """Inject a fault into the device of ``joint`` (any thread)."""
        return self.device(joint).faults.set(kind, value)

    def clear_fault(self, joint: str, kind: FaultKind | str | None = None) -> None:
        """Clear one fault kind (or all) of the device of ``joint`` (any thread)."""
        self.device(joint).faults.clear(kind)

    # ------------------------------------------------------------------------- the loop
    def step(self, now_s: float | None = None, ready_fds: set[int] | None = None) -> None:
        """One loop iteration: physics up to now, serve received input, send what is due.

        Call it from one thread only (the loop thread once :meth:`start` ran).

        Args:
            now_s: Time of this iteration [s]; default: the clock's time.
            ready_fds: Descriptors ``select`` reported readable; only those buses are read.
                None reads every bus and the serial line.
        """
        now = self.clock.now() if now_s is None else now_s
        # A client that sends a tick's frames as one datagram reads them so too: its replies
        # leave together at the end of the step (a python-can client gets frame by frame).
        holding = [t for t in self._transports.values() if t.held_received]
        for transport in holding:
            transport.hold()
        try:
            self._serve(now, ready_fds)
        finally:
            for transport in holding:
                if not transport.release():
                    self.send_errors += 1

    def _serve(self, now: float, ready_fds: set[int] | None) -> None:
        # Frames act at their send time, in send order across the buses, however late this
        # loop runs: the physics between them is advanced first, so a command moves the
        # simulated joint when it was sent (as on a real bus), not when the loop got to it.
        resolution = self.config.arrival_resolution_s
        capture = self.wire_capture
        for at, _, name, frame, answer in self._take_arrivals(now, ready_fds):
            if capture is not None:
                capture.can(at, name, (frame,))
            if at - self._time_s > resolution:
                self._advance_to(at)
            transport = self._transports[name]
            for device in self._on_bus[name]:
                replies = device.handle(frame, at)
                if answer:
                    self._send(transport, replies)
        self._advance_to(now)
        if self.bank is not None and self._serial is not None:
            if ready_fds is None or self._fds.get('') in ready_fds:
                data = self._serial.read()
                if capture is not None:
                    capture.serial(now, self._serial_bus, data)
                self.bank.receive(data, now)
            else:
                self.bank.receive(b'', now)
        for name, transport in self._transports.items():
            for device in self._on_bus[name]:
                self._send(transport, device.poll(now))
        if self.bank is not None and self._serial is not None:
            reply = self.bank.poll(now)
            if reply:
                self._serial.write(reply)

    def _take_arrivals(
        self, now: float, ready_fds: set[int] | None
    ) -> list[tuple[float, int, str, CanFrame, bool]]:
        """Frames received on the ready buses, in the order they act.

        Returns:
            ``(time it acts [s], arrival order, bus name, frame, whether to answer it)``.
        """
        arrivals: list[tuple[float, int, str, CanFrame, bool]] = []
        received: list[CanFrame] = []
        sent_at: list[float] = []
        for name, transport in self._transports.items():
            if ready_fds is not None and self._fds.get(name) not in ready_fds:
                continue
            received.clear()
            sent_at.clear()
            self.frames_received += transport.drain(received, _MAX_FRAMES_PER_STEP, sent_at)
            last_sync = max((i for i, frame in enumerate(received) if frame == _SYNC), default=-1)
            for index, frame in enumerate(received):
                # A stale SYNC of a backlog still latches the drives' targets (the motion must
                # not lose them) but is not answered: its feedback would be old news.
                answer = frame != _SYNC or index == last_sync
                if not answer:
                    self.syncs_skipped += 1
                sent = sent_at[index]
                at = (
                    min(max(sent, self._time_s), now)
                    if self._send_times_usable and math.isfinite(sent)
                    else now
                )
                arrivals.append((at, len(arrivals), name, frame, answer))
        arrivals.sort()
        return arrivals

    def _send(self, transport: CanTransport, frames: list[CanFrame]) -> None:
        for frame in frames:
            if not transport.send(frame):
                self.send_errors += 1
                _LOG.debug('send failed: %s', transport.last_error)

    def _advance_to(self, now_s: float) -> None:
        time_s = self._time_s
        while now_s - time_s > 1e-9:
            dt = min(self.config.max_step_s, now_s - time_s)
            for device in self.devices.values():
                device.advance(dt)
            time_s += dt
            self._record(time_s)

    def _record(self, time_s: float) -> None:
        q = self._q.copy()
        qd = np.zeros_like(q)
        for index, motor, axis in self._truth_sources:
            q[index] = motor.motor_to_joint_rad(axis.position_rad)
            qd[index] = axis.velocity_rad_s * motor.direction_sign
        with self._lock:
            self._q, self._qd, self._time_s = q, qd, time_s
            self._history.add(time_s, q)
        self._impact_feed.add(time_s, q)

    def flush_impacts(self) -> list[Impact]:
        """Run detection on the samples not yet examined; return (and store) new impacts."""
        return self._impact_feed.flush()

    def start(self) -> SimulatedRobot:
        """Run the device loop in a daemon thread until :meth:`stop`.

        The simulated time starts with the first start: the loop does not first replay the
        physics of the time it was being set up (a second or more under load, with the ROS
        bridge starting, took the first iteration hundreds of milliseconds).
        """
        if self._thread is None:
            if not self._started:
                self._started = True
                self._record(self.clock.now())
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name='phil-sim-devices', daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the device loop (buses and the serial line stay open: their owner closes them)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def next_due_s(self) -> float:
        """Earliest time a device has something to send unprompted [s] (inf if nothing)."""
        due = min((device.next_due_s() for device in self.devices.values()), default=np.inf)
        if self.bank is not None:
            due = min(due, self.bank.next_due_s())
        return due

    def _descriptors(self) -> dict[str, int]:
        """Descriptor per bus name ('' = serial line); empty if any cannot be selected."""
        try:
            fds = {name: bus.fileno() for name, bus in self._buses.items()}
        except NotImplementedError:
            return {}  # e.g. the virtual bus: poll instead
        if self._serial is not None:
            fds[''] = self._serial.fileno()
        return fds if all(fd >= 0 for fd in fds.values()) else {}

    def _run(self) -> None:
        self._fds = self._descriptors()
        selectable = list(self._fds.values())
        period = self.config.loop_period_s
        reported: set[str] = set()
        ready: set[int] | None = None
        previous_s = self.clock.now()
        while not self._stop.is_set():
            now_s = self.clock.now()
            self.stalls.iteration(now_s, now_s - previous_s)
            previous_s = now_s
            try:
                self.step(now_s, ready_fds=ready)
            except Exception as error:  # a bug must not silence every device; report once
                self.loop_errors += 1
                if repr(error) not in reported:
                    reported.add(repr(error))
                    _LOG.exception('device loop error (reported once)')
            # Sleep until input arrives or the next transmission is due, at most one period.
            timeout = min(period, max(0.0, self.next_due_s() - self.clock.now()))
            if not selectable:
                self._stop.wait(timeout)
                continue
            try:
                ready = set(select.select(selectable, [], [], timeout)[0])
            except (OSError, ValueError):
                ready = None  # a descriptor was closed under us: shutting down
                self._stop.wait(period)

    def __enter__(self) -> SimulatedRobot:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
