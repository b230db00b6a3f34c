"""Controller-side Dynamixel driver: ping, torque, the 5 ms sync write + sync read, replies.

The sync read never stalls the 1 ms tick: :meth:`DynamixelBank.goal_packet` and
:meth:`DynamixelBank.read_packet` go out together, and :meth:`DynamixelBank.feed` consumes
whatever bytes arrived on later ticks. A read still incomplete when the next one goes out is
counted as missed. :class:`DynamixelFamily` runs the banks on the controller's serial buses
(discovery by ping, torque on at activate and off at release).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from phil_hardware.core.codecs import dynamixel as dxl
from phil_hardware.core.codecs.dynamixel import ControlTable, ProfileGoal, StatusPacket
from phil_hardware.core.codecs.frame import CodecError

from .base import BusAccess, ControllerError, FeedbackRoutes, MotorFamily
from .config import DynamixelParams, JointConfig, SerialBusParams

TORQUE_ON = b'\x01'
PING_REPLY_LENGTH = 3  # model number (2 bytes), firmware version
TORQUE_OFF = b'\x00'


@dataclass(frozen=True)
class DynamixelJoint:
    """One servo."""

    joint: str
    index: int
    bus: str
    dxl_id: int
    params: DynamixelParams

    def tick_of(self, joint_rad: float) -> int:
        """Goal tick for a joint angle (``tick = 2048 - motor_deg * 4096 / 360``)."""
        return dxl.motor_rad_to_tick(self.params.joint_to_motor_rad(joint_rad))

    def joint_of(self, tick: int) -> float:
        """Joint angle [rad] of a Present Position tick."""
        return self.params.motor_to_joint_rad(dxl.tick_to_motor_rad(tick))


class DynamixelBank:
    """The servos of one serial bus and the state of its outstanding sync read.

    Attributes:
        reads_sent: Sync reads sent.
        replies: Present-position replies received.
        missed_replies: Replies still missing when the next read went out.
        bad_replies: Status packets with an unexpected id or length.
    """

    def __init__(self, bus: str, joints: Sequence[JointConfig]) -> None:
        """Collect the Dynamixel joints of ``bus``."""
        self.bus = bus
        self.servos = [
            DynamixelJoint(j.name, j.index, bus, j.motor.device_id, j.motor)
            for j in joints
            if isinstance(j.motor, DynamixelParams) and j.motor.bus == bus
        ]
        self._by_id = {servo.dxl_id: servo for servo in self.servos}
        self.reader = dxl.StatusPacketReader()
        self._awaiting: set[int] = set()
        self._present: list[DynamixelJoint] = list(self.servos)
        self._read_packet = b''
        #: (model number, firmware version) of every servo that answered a PING, by id.
        self.identities: dict[int, tuple[int, int]] = {}
        self.reads_sent = 0
        self.replies = 0
        self.missed_replies = 0
        self.bad_replies = 0

    def set_present(self, servos: Sequence[DynamixelJoint]) -> None:
        """Restrict cyclic traffic to the discovered servos."""
        self._present = list(servos)
        ids = [servo.dxl_id for servo in self._present]
        self._read_packet = dxl.build_present_position_sync_read(ids) if ids else b''

    @property
    def present(self) -> list[DynamixelJoint]:
        """Servos in cyclic traffic."""
        return self._present

    def servo(self, dxl_id: int) -> DynamixelJoint | None:
        """Servo by Dynamixel id."""
        return self._by_id.get(dxl_id)

    @staticmethod
    def ping_packet(servo: DynamixelJoint) -> bytes:
        """PING one servo."""
        return dxl.build_ping(servo.dxl_id)

    @staticmethod
    def start_profile_packet(servo: DynamixelJoint, params: SerialBusParams) -> bytes:
        """WRITE Profile Acceleration and Profile Velocity (108, 8 bytes): the bus's start
        profile, in force until the first cyclic goal write (which carries 0 / 0)."""
        profile = struct.pack(
            '<ii', params.start_profile_acceleration, params.start_profile_velocity
        )
        return dxl.build_write(servo.dxl_id, ControlTable.PROFILE_ACCELERATION, profile)

    @staticmethod
    def torque_packet(servo: DynamixelJoint, on: bool) -> bytes:
        """WRITE Torque Enable (address 64)."""
        return dxl.build_write(
            servo.dxl_id, ControlTable.TORQUE_ENABLE, TORQUE_ON if on else TORQUE_OFF
        )

    def goal_packet(self, targets_rad: Sequence[float]) -> bytes:
        """SYNC_WRITE at 108 of (acceleration 0, velocity 0, goal tick) for every present servo.

        Args:
            targets_rad: Joint targets of the whole robot [rad] (index order); a non-finite
                target leaves that servo out of the write.
        """
        goals = {}
        for servo in self._present:
            target = targets_rad[servo.index]
            if math.isfinite(target):
                goals[servo.dxl_id] = ProfileGoal(0, 0, servo.tick_of(target))
        return dxl.build_profile_goal_sync_write(goals) if goals else b''

    def read_packet(self) -> bytes:
        """The Present Position SYNC_READ; marks its replies as awaited (counts the missed)."""
        if self._awaiting:
            self.missed_replies += len(self._awaiting)
            # A half-received reply of the previous read must not glue onto the new one.
            self.reader.clear()
        self._awaiting = {servo.dxl_id for servo in self._present}
        self.reads_sent += 1
        return self._read_packet

    def feed(self, data: bytes) -> list[tuple[DynamixelJoint, StatusPacket]]:
        """Parse received bytes; return (servo, status) for every complete status packet."""
        if not data:
            return []
        result = []
        for status in self.reader.feed(data):
            servo = self._by_id.get(status.dxl_id)
            if servo is None:
                self.bad_replies += 1
                continue
            result.append((servo, status))
        return result

    def identity_reply(self, servo: DynamixelJoint, status: StatusPacket) -> bool:
        """Keep the model number and firmware version of a PING reply (3 parameters)."""
        if len(status.params) != PING_REPLY_LENGTH:
            return False
        self.identities[servo.dxl_id] = (
            int.from_bytes(status.params[:2], 'little'),
            status.params[2],
        )
        return True

    def position_reply(self, servo: DynamixelJoint, status: StatusPacket) -> float | None:
        """Joint position [rad] from a Present Position reply, or None if it is not one."""
        if len(status.params) != dxl.PRESENT_POSITION_LENGTH:
            return None
        try:
            tick = dxl.decode_present_position(status)
        except CodecError:
            self.bad_replies += 1
            return None
        self._awaiting.discard(servo.dxl_id)
        self.replies += 1
        return servo.joint_of(tick)

    @property
    def read_pending(self) -> bool:
        """True while replies of the last sync read are outstanding."""
        return bool(self._awaiting)

    @staticmethod
    def error_text(status: StatusPacket) -> str:
        """'' for a clean status, else the decoded error byte."""
        if status.error == 0:
            return ''
        return f'servo status: {dxl.describe_status_error(status.error)}'


class DynamixelFamily(MotorFamily):
    """The Dynamixel servos, one :class:`DynamixelBank` per serial bus (see module doc).

    Attributes:
        banks: Bank per serial bus.
        replies: Latest status per (bus, id) (the lifecycle steps read it).
    """

    def __init__(self, ctl: BusAccess, banks: dict[str, DynamixelBank]) -> None:
        """Drive ``banks`` through ``ctl``."""
        self.ctl = ctl
        self.banks = banks
        self.replies: dict[tuple[str, int], StatusPacket] = {}
        self._dxl_phase = ctl.config.cycle.dxl_phase

    def bind_feedback(self, routes: FeedbackRoutes) -> None:
        """Every bank reads its own serial bus."""
        for bus, bank in self.banks.items():
            routes.route_serial(bus, partial(self._on_serial, bank))

    def probe(self) -> None:
        """PING every servo (retried) and wait for its reply."""
        ctl = self.ctl
        timing = ctl.config.timing
        counts = ctl.measured.feedback_count
        before = list(counts)
        for bus, bank in self.banks.items():
            serial = ctl.transports.serial[bus]
            for servo in bank.servos:
                for _attempt in range(max(1, timing.dxl_retries)):
                    serial.write(bank.ping_packet(servo))
                    if ctl.wait(
                        timing.dxl_reply_timeout_s,
                        lambda: counts[servo.index] > before[servo.index],  # noqa: B023 (called at once)
                    ):
                        break

    def report(self) -> None:
        """Model and firmware of every servo, from its discovery PING reply."""
        status = self.ctl.measured.status
        for bank in self.banks.values():
            for servo in bank.servos:
                if servo.dxl_id in bank.identities:
                    model, firmware = bank.identities[servo.dxl_id]
                    status[servo.index] = f'model {model}, firmware {firmware}'

    def configure(self, zero_origins: bool) -> None:
        """Restrict cyclic traffic to the discovered servos."""
        for bank in self.banks.values():
            bank.set_present([s for s in bank.servos if self.ctl.present[s.index]])

    def activate(self) -> None:
        """The start profile, then torque on (each confirmed per servo, as upstream), then one
        read so the pose is fresh. A servo holds where it is when its torque goes on, and
        the START motion begins there."""
        ctl = self.ctl
        for bus, bank in self.banks.items():
            params = ctl.config.serial_buses[bus]
            profile = params.start_profile_acceleration or params.start_profile_velocity
            for servo in bank.present:
                if profile:  # 0 / 0 is no profile: nothing to write
                    self._write_confirmed(
                        bus, bank.start_profile_packet(servo, params), servo, 'start profile'
                    )
                self._write_confirmed(bus, bank.torque_packet(servo, True), servo, 'torque on')
            if bank.present:
                ctl.transports.serial[bus].write(bank.read_packet())
                ctl.wait(ctl.config.timing.dxl_reply_timeout_s, lambda: not bank.read_pending)  # noqa: B023

    def tick(self, phase: int, now: float, targets, velocities, modes) -> None:
        """On the Dynamixel phase: the goal write and the next read on every bus."""
        if phase != self._dxl_phase:
            return
        serial = self.ctl.transports.serial
        for bus, bank in self.banks.items():
            if bank.present:
                # One write for both packets: a PTY/USB write costs far more than its bytes.
                serial[bus].write(bank.goal_packet(targets) + bank.read_packet())

    def request_feedback(self) -> None:
        """A sync read on every bus with a present servo."""
        serial = self.ctl.transports.serial
        for bus, bank in self.banks.items():
            if bank.present:
                serial[bus].write(bank.read_packet())

    def release(self) -> None:
        """Torque off every present servo on an open bus (a refusal is a warning)."""
        ctl = self.ctl
        for bus, bank in self.banks.items():
            if bus not in ctl.transports.serial:
                continue
            for servo in bank.present:
                try:
                    self._write_confirmed(
                        bus, bank.torque_packet(servo, False), servo, 'torque off'
                    )
                except Exception as error:  # releasing must go on for the other servos
                    ctl.warn(str(error))

    def _write_confirmed(self, bus: str, packet: bytes, servo: DynamixelJoint, what: str) -> None:
        ctl = self.ctl
        timing = ctl.config.timing
        key = (bus, servo.dxl_id)
        for _attempt in range(max(1, timing.dxl_retries)):
            self.replies.pop(key, None)
            ctl.transports.serial[bus].write(packet)
            if ctl.wait(timing.dxl_reply_timeout_s, lambda: key in self.replies):
                status = self.replies[key]
                if status.error & 0x7F:
                    raise ControllerError(
                        f'{ctl.describe_motor(servo.index)}: {what} refused '
                        f'({self.banks[bus].error_text(status)})'
                    )
                return
        raise ControllerError(f'{ctl.describe_motor(servo.index)}: no reply to {what}')

    def _on_serial(self, bank: DynamixelBank, data: bytes, now: float) -> None:
        ctl = self.ctl
        m = ctl.measured
        for servo, status in bank.feed(data):
            self.replies[(bank.bus, servo.dxl_id)] = status
            i = servo.index
            m.feedback_count[i] += 1
            if status.error:
                ctl.counters.dxl_status_errors += 1
            if bank.identity_reply(servo, status):
                continue
            position = bank.position_reply(servo, status)
            if position is None:
                continue
            m.update_position(i, position, now)
            m.error_code[i] = status.error
            m.status[i] = bank.error_text(status) or 'ok'
            if ctl.supervising:
                ctl.check_fault(ctl.safety.on_position(i, position, now))
                alert = status.error & 0x80
                ctl.check_fault(
                    ctl.safety.on_motor_error(i, bank.error_text(status) if alert else '', now)
                )


__all__ = ['DynamixelBank', 'DynamixelFamily', 'DynamixelJoint']
