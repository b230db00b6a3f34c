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
from phil_description.core.hardware import DynamixelParams, Epos4Params, TMotorParams
from phil_hardware.core.clock import Clock, MonotonicClock
from phil_hardware.core.codecs import CanFrame
from phil_hardware.core.codecs.cia301 import SYNC_COB_ID
from phil_hardware.core.transport import CanTransport
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.dynamixel_bank import DynamixelBank
from phil_hardware.sim.dynamixel_servo import DynamixelServo
from phil_hardware.sim.epos4_device import Epos4Device, wrist_gravity_torque_nm
from phil_hardware.sim.faults import FaultKind, InjectedFault
from phil_hardware.sim.impacts import Impact, ImpactDetector
from phil_hardware.sim.tmotor_device import TMotorDevice

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
        if initial_positions_rad is not None:
            initial = np.asarray(initial_positions_rad, dtype=float)
        elif 'init' in model.poses:
            initial = model.poses['init']
        else:
            initial = np.array([joint.motor.initial_position_rad for joint in model.joints])
        if initial.shape != (len(model.joints),):
            raise ValueError(
                f'initial_positions_rad must have {len(model.joints)} values, '
                f'got shape {initial.shape}'
            )
        self._q = np.array(initial, dtype=float)
        self.devices: dict[str, SimDevice] = {}
        self._on_bus: dict[str, list[SimDevice]] = {name: [] for name in self._buses}
        self._build_devices()
        servos = [d for d in self.devices.values() if isinstance(d, DynamixelServo)]
        self.bank = DynamixelBank(servos) if serial_line is not None else None
        self._lock = threading.Lock()
        self._qd = np.zeros_like(self._q)
        self._time_s = self.clock.now()
        self._history_t = np.full(self.config.history_capacity, np.nan)
        self._history_q = np.zeros((self.config.history_capacity, len(self._q)))
        self._history_count = 0
        self._last_history_s = -np.inf
        self._detector = (
            ImpactDetector(model, self.config.impacts) if self.config.impacts else None
        )
        self._batch_t: list[float] = []
        self._batch_q: list[np.ndarray] = []
        self._impacts: list[Impact] = []
        self._impact_listeners: list[Callable[[Impact], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fds: dict[str, int] = {}
        self._truth_sources = [(d.joint.index, d.motor, d.axis) for d in self.devices.values()]
        self.frames_received = 0
        self.syncs_skipped = 0  # stale SYNCs latched but not answered (see step)
        self.send_errors = 0
        self.loop_errors = 0
        self._record(self._time_s)

    def _build_devices(self) -> None:
        config = self.config
        for index, joint in enumerate(self.model.joints):
            motor, start = joint.motor, float(self._q[index])
            seed = config.seed * 100 + index
            if isinstance(motor, TMotorParams) and motor.bus in self._buses:
                device: SimDevice = TMotorDevice(joint, config.tmotor, start, seed)
            elif isinstance(motor, Epos4Params) and motor.bus in self._buses:
                device = Epos4Device(joint, config.epos4, start, seed)
                if motor.gravity_mass_kg > 0:
                    device.external_torque_nm = self._wrist_gravity(joint.name, motor)
            elif isinstance(motor, DynamixelParams) and self._serial is not None:
                device = DynamixelServo(joint, config.dynamixel, start)
            else:
                continue
            self.devices[joint.name] = device
            if motor.bus in self._on_bus:
                self._on_bus[motor.bus].append(device)
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

    def _wrist_gravity(self, wrist: str, motor: Epos4Params) -> Callable[[], float]:
        side = wrist.split('_')[0]
        indices = [
            self.model.joint(f'{side}_{name}').index for name in ('shoulder_2', 'elbow', 'wrist')
        ]
        return wrist_gravity_torque_nm(
            motor.gravity_mass_kg,
            motor.gravity_lever_m,
            self.config.epos4.gravity_m_s2,
            lambda: float(sum(self._q[i] for i in indices)),
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
            capacity, count = self.config.history_capacity, self._history_count
            if count <= capacity:
                return self._history_t[:count].copy(), self._history_q[:count].copy()
            order = np.roll(np.arange(capacity), -(count % capacity))
            return self._history_t[order], self._history_q[order]

    def impacts(self) -> list[Impact]:
        """Impacts detected so far (a copy)."""
        with self._lock:
            return list(self._impacts)

    def add_impact_listener(self, listener: Callable[[Impact], None]) -> None:
        """Call ``listener(impact)`` from the device loop for every new impact (keep it quick)."""
        self._impact_listeners.append(listener)

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
        # Frames act at their send time, in send order across the buses, however late this
        # loop runs: the physics between them is advanced first, so a command moves the
        # simulated joint when it was sent (as on a real bus), not when the loop got to it.
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
        resolution = self.config.arrival_resolution_s
        for at, _, name, frame, answer in arrivals:
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
                self.bank.receive(self._serial.read(), now)
            else:
                self.bank.receive(b'', now)
        for name, transport in self._transports.items():
            for device in self._on_bus[name]:
                self._send(transport, device.poll(now))
        if self.bank is not None and self._serial is not None:
            reply = self.bank.poll(now)
            if reply:
                self._serial.write(reply)

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
            if time_s - self._last_history_s >= self.config.history_period_s:
                slot = self._history_count % self.config.history_capacity
                self._history_t[slot], self._history_q[slot] = time_s, q
                self._history_count += 1
                self._last_history_s = time_s
        if self._detector is not None:
            self._batch_t.append(time_s)
            self._batch_q.append(q)
            if time_s - self._batch_t[0] >= self.config.impact_batch_s:
                self.flush_impacts()

    def flush_impacts(self) -> list[Impact]:
        """Run detection on the samples not yet examined; return (and store) new impacts."""
        if self._detector is None or not self._batch_t:
            return []
        found = self._detector.feed(np.array(self._batch_t), np.vstack(self._batch_q))
        self._batch_t, self._batch_q = [], []
        if found:
            with self._lock:
                self._impacts.extend(found)
            for impact in found:
                for listener in self._impact_listeners:
                    listener(impact)
        return found

    def start(self) -> SimulatedRobot:
        """Run the device loop in a daemon thread until :meth:`stop`."""
        if self._thread is None:
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
        while not self._stop.is_set():
            try:
                self.step(ready_fds=ready)
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
