"""Controller-side Dynamixel driver: ping, torque, the 5 ms sync write + sync read, replies.

The sync read never stalls the 1 ms tick: :meth:`DynamixelBank.cycle_packets` returns the
write and the read to send, and :meth:`DynamixelBank.feed` consumes whatever bytes arrived on
later ticks. A read still incomplete when the next one goes out is counted as missed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from phil_hardware.core.codecs import dynamixel as dxl
from phil_hardware.core.codecs.dynamixel import ControlTable, ProfileGoal, StatusPacket
from phil_hardware.core.codecs.frame import CodecError

from .config import DynamixelParams, JointConfig

TORQUE_ON = b'\x01'
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
        """Goal tick for a joint angle (FACTS section 5 tick convention)."""
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
