"""The project's own codecs as a decoder of the same captures: what the hardware node meant by
each frame, in the raw wire values of :class:`~.spec_decoder.WireCommand` (scaled values
are turned back into counts with the codecs' own scalings)."""

from __future__ import annotations

import math

from phil_description.core import Epos4Params, RobotModel
from phil_hardware.core.codecs import dynamixel, epos4, tmotor
from phil_hardware.core.codecs.cia301 import SdoService
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.codecs.tmotor import TMotorPacket

from .spec_decoder import WireCommand

_TMOTOR_KINDS = {
    TMotorPacket.SET_DUTY: 'set_duty',
    TMotorPacket.SET_CURRENT: 'set_current',
    TMotorPacket.SET_CURRENT_BRAKE: 'set_current_brake',
    TMotorPacket.SET_RPM: 'set_rpm',
    TMotorPacket.SET_POS: 'set_position',
    TMotorPacket.SET_ORIGIN_HERE: 'set_origin',
    TMotorPacket.SET_POS_SPD: 'set_position_speed',
}


class OwnDecoder:
    """Our codecs' reading of a capture (EPOS4 scalings from the URDF's drive parameters)."""

    def __init__(self, model: RobotModel) -> None:
        self._epos4 = {
            (motor.bus, motor.device_id): motor
            for motor in model.hardware.motors.values()
            if isinstance(motor, Epos4Params)
        }

    def can(self, bus: str, can_id: int, extended: bool, data: bytes) -> WireCommand:
        """Raises :class:`~phil_hardware.core.codecs.frame.CodecError` (a ValueError) on a
        frame our codecs do not read."""
        frame = CanFrame(can_id, data, extended)
        if extended:
            return _tmotor(tmotor.decode_servo_command(frame))
        if can_id == epos4.NMT_COB_ID:
            nmt = epos4.decode_nmt(frame)
            return WireCommand('can', nmt.node_id, 'nmt', (int(nmt.command),))
        if can_id == epos4.SYNC_COB_ID:
            return WireCommand('can', 0, 'sync')
        if can_id & 0x780 == epos4.SDO_REQUEST_BASE:
            if frame == epos4.encode_sdo_probe(can_id & 0x7F):
                return WireCommand('epos4', can_id & 0x7F, 'sdo_segment', (0, 0))
            sdo = epos4.decode_sdo_request(frame)
            if sdo.service is SdoService.UPLOAD:
                return WireCommand('epos4', sdo.node_id, 'sdo_upload', (sdo.index, sdo.subindex))
            return WireCommand(
                'epos4', sdo.node_id, 'sdo_download', (sdo.index, sdo.subindex, sdo.value())
            )
        params = self._epos4.get((bus, can_id & 0x7F))
        if params is None:
            raise ValueError(f'0x{can_id:03X} on {bus}: no EPOS4 of that node on that bus')
        command = epos4.decode_rpdo(frame, params.gear_ratio, params.rated_torque_mnm)
        node = command.node_id
        if command.controlword is not None:
            return WireCommand('epos4', node, 'controlword', (command.controlword,))
        if command.position_rad is not None:
            counts = epos4.position_rad_to_counts(command.position_rad, params.gear_ratio)
            return WireCommand('epos4', node, 'target_position', (counts,))
        permille = epos4.torque_mnm_to_permille(
            command.torque_mnm, params.rated_torque_mnm, math.inf
        )
        return WireCommand('epos4', node, 'target_torque', (permille,))

    @staticmethod
    def dynamixel(packet: bytes) -> list[WireCommand]:
        """The commands of one raw instruction packet."""
        dxl_id, instruction, params = dynamixel.parse_instruction_packet(packet)
        if instruction == dynamixel.Instruction.PING:
            return [WireCommand('dynamixel', dxl_id, 'ping')]
        if instruction == dynamixel.Instruction.WRITE:
            address = int.from_bytes(params[:2], 'little')
            return [WireCommand('dynamixel', dxl_id, 'write', (address, *params[2:]))]
        address, length, data = dynamixel.parse_address_length_params(params)
        if instruction == dynamixel.Instruction.READ:
            return [WireCommand('dynamixel', dxl_id, 'read', (address, length))]
        if instruction == dynamixel.Instruction.SYNC_READ:
            return [WireCommand('dynamixel', i, 'sync_read', (address, length)) for i in data]
        address, length, records = dynamixel.parse_sync_write_params(params)
        if (address, length) == (
            dynamixel.ControlTable.PROFILE_ACCELERATION,
            dynamixel.PROFILE_GOAL_LENGTH,
        ):
            return [
                WireCommand('dynamixel', servo, 'profile_goal', _int32s(record))
                for servo, record in records.items()
            ]
        return [
            WireCommand('dynamixel', servo, 'sync_write', (address, *record))
            for servo, record in records.items()
        ]


def _tmotor(command: tmotor.TMotorCommand) -> WireCommand:
    packet = command.packet
    if packet is TMotorPacket.SET_RPM:
        values = (command.erpm,)
    elif packet is TMotorPacket.SET_ORIGIN_HERE:
        values = (int(command.origin_mode),)
    elif packet is TMotorPacket.SET_DUTY:
        values = (round(command.duty * tmotor.DUTY_COUNTS_PER_UNIT),)
    elif packet in (TMotorPacket.SET_CURRENT, TMotorPacket.SET_CURRENT_BRAKE):
        values = (round(command.current_a * tmotor.CURRENT_COUNTS_PER_A),)
    else:
        counts = round(math.degrees(command.position_rad) * tmotor.POSITION_COUNTS_PER_DEG)
        values = (counts,)
        if packet is TMotorPacket.SET_POS_SPD:
            values += (
                command.speed_erpm // tmotor.SPEED_ERPM_PER_COUNT,
                command.accel_erpm_s // tmotor.ACCEL_ERPM_S_PER_COUNT,
            )
    return WireCommand('tmotor', command.node_id, _TMOTOR_KINDS[packet], values)


def _int32s(record: bytes) -> tuple[int, ...]:
    """Little-endian signed 32-bit fields of a sync-write record."""
    return tuple(int.from_bytes(record[i : i + 4], 'little', signed=True) for i in (0, 4, 8))
