"""A bank of simulated Dynamixel servos sharing one half-duplex Protocol 2.0 line.

Pure bytes in, bytes out: :meth:`DynamixelBank.receive` takes whatever arrived on the line,
:meth:`DynamixelBank.poll` returns the status packets whose return delay has elapsed. The PTY
that carries the bytes is :class:`~phil_hardware.sim.pty_port.PtyPort`.

Served: PING (also broadcast), READ, WRITE (also broadcast), SYNC_WRITE and SYNC_READ; any other
instruction addressed to a servo gets an instruction-error status. Replies queue one after the
other, each after its servo's Return Delay Time, as on a real bus. Garbage, bad CRCs and partial
packets that never complete are skipped (resynchronisation on the next header). Instruction
packets that a lax sender did not byte-stuff are accepted too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from phil_hardware.core.codecs import CodecError, dynamixel
from phil_hardware.core.codecs.dynamixel import BROADCAST_ID, Instruction, InstructionPacket
from phil_hardware.sim.dynamixel_servo import (
    ERROR_INSTRUCTION,
    FIRMWARE_VERSION,
    MODEL_NUMBER,
    DynamixelServo,
)
from phil_hardware.sim.faults import mangle_packet

_LOG = logging.getLogger(__name__)
_ALERT_BIT = dynamixel.ERROR_ALERT_BIT
_STATUS = dynamixel.Instruction.STATUS
_BODY_START = 7  # header (4) + id (1) + length (2)


class DynamixelBank:
    """Servos on one serial line.

    Args:
        servos: The servos (unique ids).
        partial_packet_timeout_s: A packet still incomplete after this long is dropped as
            garbage so that a stray header cannot block the line [s].

    Attributes:
        packets_handled: Instruction packets processed.
        bytes_discarded: Bytes skipped as garbage.

    Raises:
        ValueError: On duplicate servo ids.
    """

    def __init__(
        self, servos: Iterable[DynamixelServo], partial_packet_timeout_s: float = 0.05
    ) -> None:
        self.servos: dict[int, DynamixelServo] = {}
        for servo in servos:
            if servo.device_id in self.servos:
                raise ValueError(
                    f'Dynamixel id {servo.device_id} used by {self.servos[servo.device_id].name} '
                    f'and {servo.name}'
                )
            self.servos[servo.device_id] = servo
        self._timeout_s = partial_packet_timeout_s
        self._buffer = b''
        self._buffer_since_s = 0.0
        self._outgoing: list[tuple[float, bytes]] = []
        self._line_free_s = 0.0
        self.packets_handled = 0
        self.bytes_discarded = 0

    def receive(self, data: bytes, now_s: float) -> None:
        """Feed bytes received on the line at ``now_s`` [s] and schedule the replies."""
        if not data:
            self._expire_partial(now_s)
            return
        if not self._buffer:
            self._buffer_since_s = now_s
        buffer = self._buffer + bytes(data)
        packets, self._buffer = dynamixel.split_packets(buffer)
        self.bytes_discarded += len(buffer) - len(self._buffer) - sum(map(len, packets))
        if packets:
            self._buffer_since_s = now_s
        for packet in packets:
            self._handle_packet(packet, now_s)

    def _expire_partial(self, now_s: float) -> None:
        if self._buffer and now_s - self._buffer_since_s > self._timeout_s:
            # Drop the stale header byte and look for a later header in what is left.
            buffer = self._buffer[1:]
            packets, self._buffer = dynamixel.split_packets(buffer)
            self.bytes_discarded += 1 + len(buffer) - len(self._buffer) - sum(map(len, packets))
            self._buffer_since_s = now_s
            for packet in packets:
                self._handle_packet(packet, now_s)

    def poll(self, now_s: float) -> bytes:
        """Return the reply bytes due by ``now_s`` (in order), b'' if none."""
        self._expire_partial(now_s)
        if not self._outgoing or self._outgoing[0][0] > now_s:
            return b''
        due = [packet for when, packet in self._outgoing if when <= now_s]
        self._outgoing = [item for item in self._outgoing if item[0] > now_s]
        return b''.join(due)

    def next_due_s(self) -> float:
        """Time the next queued reply is due, or a partial packet expires [s] (inf: none)."""
        due = min((when for when, _ in self._outgoing), default=math.inf)
        if self._buffer:
            due = min(due, self._buffer_since_s + self._timeout_s)
        return due

    def advance(self, dt_s: float) -> None:
        """Advance every servo's motion by ``dt_s`` [s]."""
        for servo in self.servos.values():
            servo.advance(dt_s)

    # ----------------------------------------------------------------------- internals
    @staticmethod
    def _parse(packet: bytes) -> InstructionPacket | None:
        if packet[7] == _STATUS:
            return None  # a status packet (our own, or another servo's): not for us
        try:
            return dynamixel.parse_instruction_packet(packet)
        except CodecError:
            # The CRC was valid (split_packets checked it), so only the stuffing was wrong:
            # dynamixel_sdk does not stuff what it sends. Take the body as it is.
            body = packet[_BODY_START:-2]
            return InstructionPacket(packet[4], body[0], body[1:])

    def _handle_packet(self, packet: bytes, now_s: float) -> None:
        instruction = self._parse(packet)
        if instruction is None:
            return
        self.packets_handled += 1
        target, code, params = instruction
        try:
            if target == BROADCAST_ID:
                self._handle_broadcast(code, params, now_s)
            elif target in self.servos:
                self._handle_unicast(self.servos[target], code, params, now_s)
        except CodecError as error:
            _LOG.debug('Dynamixel instruction 0x%02X to id %d ignored: %s', code, target, error)

    def _handle_broadcast(self, code: int, params: bytes, now_s: float) -> None:
        servos = sorted(self.servos.values(), key=lambda servo: servo.device_id)
        if code == Instruction.PING:
            for servo in servos:
                self._reply(servo, 0, self._ping_params(servo), now_s)
        elif code == Instruction.WRITE and len(params) >= 2:
            for servo in servos:
                servo.write(int.from_bytes(params[:2], 'little'), params[2:])
        elif code == Instruction.SYNC_WRITE:
            address, _, records = dynamixel.parse_sync_write_params(params)
            for dxl_id, data in records.items():
                if dxl_id in self.servos:
                    self.servos[dxl_id].write(address, data)
        elif code == Instruction.SYNC_READ:
            address, length, ids = dynamixel.parse_address_length_params(params)
            for dxl_id in ids:
                servo = self.servos.get(dxl_id)
                if servo is not None:
                    error, data = servo.read(address, length)
                    self._reply(servo, error, data, now_s)

    def _handle_unicast(
        self, servo: DynamixelServo, code: int, params: bytes, now_s: float
    ) -> None:
        level = servo.status_return_level
        if code == Instruction.PING:
            self._reply(servo, 0, self._ping_params(servo), now_s)
        elif code == Instruction.READ:
            address, length, _ = dynamixel.parse_address_length_params(params)
            error, data = servo.read(address, length)
            if level >= 1:
                self._reply(servo, error, data, now_s)
        elif code == Instruction.WRITE and len(params) >= 2:
            error = servo.write(int.from_bytes(params[:2], 'little'), params[2:])
            if level >= 2:
                self._reply(servo, error, b'', now_s)
        elif level >= 2:
            self._reply(servo, ERROR_INSTRUCTION, b'', now_s)

    @staticmethod
    def _ping_params(servo: DynamixelServo) -> bytes:
        return bytes(servo.table[MODEL_NUMBER : MODEL_NUMBER + 2]) + bytes(
            (servo.table[FIRMWARE_VERSION],)
        )

    def _reply(self, servo: DynamixelServo, error: int, params: bytes, now_s: float) -> None:
        if servo.hardware_error_status():
            error |= _ALERT_BIT
        packet = mangle_packet(
            dynamixel.build_status_packet(servo.device_id, error, params), servo.faults
        )
        # Replies on a shared line go one after another, each after its servo's delay.
        due = max(now_s, self._line_free_s) + servo.return_delay_s
        self._line_free_s = due
        if packet:
            self._outgoing.append((due, packet))
