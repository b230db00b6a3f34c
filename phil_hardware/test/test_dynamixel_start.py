"""Dynamixel start-up as upstream's: every servo gets the URDF's start profile (Profile
Acceleration / Velocity 2000 / 1000) before its torque goes on, each write confirmed; the
cyclic goal writes then carry no profile (0 / 0), as upstream's do in operation."""

from __future__ import annotations

import struct

import pytest
from test_bus_rig import make_rig

from phil_description.core import default_robot_model
from phil_hardware.core.codecs import dynamixel as dxl
from phil_hardware.core.codecs.dynamixel import ControlTable

pytestmark = pytest.mark.timeout(60)
PROFILE = ControlTable.PROFILE_ACCELERATION
HEAD = ('head_yaw', 'head_pitch')


def _writes(packets):
    """(id, address, data) of every WRITE instruction in ``packets``."""
    result = []
    for packet in packets:
        for raw in dxl.split_packets(packet)[0]:
            instruction = dxl.parse_instruction_packet(raw)
            if instruction.instruction == dxl.Instruction.WRITE:
                address = int.from_bytes(instruction.params[:2], 'little')
                result.append((instruction.dxl_id, address, bytes(instruction.params[2:])))
    return result


def test_the_start_profile_goes_in_before_torque_on_and_cyclic_writes_carry_none():
    model = default_robot_model(sim=True)
    assert model.hardware.serial_buses['dxl'].start_profile_acceleration == 2000
    assert model.hardware.serial_buses['dxl'].start_profile_velocity == 1000
    rig = make_rig(model)
    try:
        ctl = rig.controller
        ctl.configure()
        transport = ctl.transports.serial['dxl']
        sent = []
        send = transport.write
        transport.write = lambda packet: sent.append(packet) or send(packet)
        ctl.activate()
        profile = struct.pack('<ii', 2000, 1000)
        for dxl_id in (1, 2):
            writes = [w for w in _writes(sent) if w[0] == dxl_id]
            assert writes == [(dxl_id, PROFILE, profile), (dxl_id, 64, b'\x01')], writes
        servos = [rig.robot.device(name) for name in HEAD]
        for servo in servos:
            assert servo.torque_enabled
            assert (servo.get(PROFILE, 4), servo.get(PROFILE + 4, 4)) == (2000, 1000)
        rig.run(0.05)
        for servo in servos:
            assert (servo.get(PROFILE, 4), servo.get(PROFILE + 4, 4)) == (0, 0)
        assert ctl.faults() == ()
    finally:
        rig.close()
