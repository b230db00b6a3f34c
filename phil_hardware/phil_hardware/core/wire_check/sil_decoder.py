"""What upstream's frame-level simulator (PHIL_Simulation, FACTS 13) makes of each frame: its
routing rules, restated as a decoder. Its code is not ours to run; these are its documented
rules (``sil/decoder.py``, ``router.py``), which a capture must satisfy for the same frames to
drive upstream's simulator as they drive ours.

* id 0x000: NMT ``[command, node]``; id 0x080: SYNC.
* TMotor: ``(id >> 8) & 0xFF`` is 3 (SET_RPM) or 4 (SET_POS) and ``id & 0xFF`` one of its
  TMotor nodes; int32 big-endian. Other TMotor packets are ignored.
* Maxon node n: 0x600+n any SDO (acknowledged, content unread); 0x300+n position (int32 LE),
  0x400+n velocity (int32 LE), 0x500+n torque (int16 LE); 0x200+n (controlword) ignored.
* Dynamixel: PING, WRITE (acknowledged, content unread), SYNC_WRITE only at address 108 with
  12 bytes (the goal at byte 8), SYNC_READ; anything else ignored.

``None`` / ``[]``: the simulator ignores it. :func:`as_upstream_sil_sees` reduces a
:class:`~.spec_decoder.WireCommand` of the independent decoder to what this decoder reports,
so the two can be compared frame by frame.
"""

from __future__ import annotations

import struct
from collections.abc import Collection

from .spec_decoder import WireCommand

_TMOTOR_PACKETS = {3: ('set_rpm', '>i'), 4: ('set_position', '>i')}
_MAXON_TARGETS = {0x300: ('target_position', '<i'), 0x400: ('target_velocity', '<i'),
                  0x500: ('target_torque', '<h')}  # fmt: skip
_PROFILE_GOAL = (108, 12)


class UpstreamSilDecoder:
    """Upstream's simulator's view, for the robot's TMotor and Maxon node ids."""

    def __init__(self, tmotor_nodes: Collection[int], maxon_nodes: Collection[int]) -> None:
        self.tmotor_nodes = frozenset(tmotor_nodes)
        self.maxon_nodes = frozenset(maxon_nodes)

    def can(self, can_id: int, extended: bool, data: bytes) -> WireCommand | None:
        """The command the simulator takes from a CAN frame, or None if it ignores it."""
        if can_id == 0x000:
            return WireCommand('can', data[1], 'nmt', (data[0],))
        if can_id == 0x080:
            return WireCommand('can', 0, 'sync')
        packet, node = (can_id >> 8) & 0xFF, can_id & 0xFF
        if packet in _TMOTOR_PACKETS and node in self.tmotor_nodes:
            kind, layout = _TMOTOR_PACKETS[packet]
            return WireCommand('tmotor', node, kind, struct.unpack_from(layout, data))
        for node in self.maxon_nodes:
            base = can_id - node
            if base == 0x600:
                return WireCommand('epos4', node, 'sdo')
            if base in _MAXON_TARGETS:
                kind, layout = _MAXON_TARGETS[base]
                return WireCommand('epos4', node, kind, struct.unpack_from(layout, data))
        return None

    @staticmethod
    def dynamixel(dxl_id: int, instruction: int, params: bytes) -> list[WireCommand]:
        """The commands the simulator takes from one instruction packet."""
        if instruction == 0x01:
            return [WireCommand('dynamixel', dxl_id, 'ping')]
        if instruction == 0x03:
            return [WireCommand('dynamixel', dxl_id, 'write')]
        if instruction == 0x82:
            return [WireCommand('dynamixel', servo, 'sync_read') for servo in params[4:]]
        if instruction == 0x83 and struct.unpack_from('<HH', params) == _PROFILE_GOAL:
            records = params[4:]
            return [
                WireCommand('dynamixel', records[at], 'goal', _goal_tick(records, at))
                for at in range(0, len(records), 13)
            ]
        return []


def as_upstream_sil_sees(command: WireCommand) -> WireCommand | None:
    """The independent decoder's ``command`` reduced to what :class:`UpstreamSilDecoder`
    reports for the same bytes (None: ignored by upstream's simulator)."""
    device, node, kind, values = command
    if device == 'can':
        return command
    if device == 'tmotor':
        return command if kind in ('set_rpm', 'set_position') else None
    if device == 'epos4':
        if kind.startswith('sdo_'):
            return WireCommand(device, node, 'sdo')
        return None if kind == 'controlword' else command
    if kind == 'ping':
        return command
    if kind in ('write', 'sync_read'):
        return WireCommand(device, node, kind)
    if kind == 'profile_goal':
        return WireCommand(device, node, 'goal', values[2:])
    return None


def _goal_tick(records: bytes, at: int) -> tuple[int]:
    """The goal of the 13-byte record at ``at`` (id, acceleration, velocity, goal)."""
    return struct.unpack_from('<i', records, at + 9)
