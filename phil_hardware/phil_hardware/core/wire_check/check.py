"""Check a wire capture three ways: the independent decoder (:mod:`.spec_decoder`), upstream's
simulator's rules (:mod:`.sil_decoder`) and our codecs (:mod:`.own_decoder`) must read every
command alike, each command must address a motor the URDF puts on that bus, and every
position target must lie within its joint's limits (a wrong byte order or scale would not).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from phil_description.core import (
    CanopenFrameForm,
    DynamixelParams,
    Epos4Params,
    JointSpec,
    RobotModel,
    TMotorParams,
)
from phil_hardware.core.codecs import dynamixel

from .capture import CapturedCan, CapturedSerial
from .own_decoder import OwnDecoder
from .sil_decoder import UpstreamSilDecoder, as_upstream_sil_sees
from .spec_decoder import WireCommand, WireError, decode_can, decode_dynamixel, split_serial

#: Problems listed in full; the rest are counted.
LISTED_PROBLEMS = 20
#: How far outside its joint's limits a position target may lie (the codecs round).
LIMIT_MARGIN_RAD = math.radians(1.0)
_FAMILY = {'tmotor': TMotorParams, 'epos4': Epos4Params, 'dynamixel': DynamixelParams}


@dataclass
class WireReport:
    """What a check found.

    Attributes:
        commands: Commands read (a CAN frame is one; a sync write one per servo).
        device_frames: Frames the motors sent (a ``candump`` capture on the robot has them):
            counted, not read.
        by_kind: Commands per ``device kind``.
        ignored_upstream: Commands upstream's simulator ignores, per ``device kind``.
        problems: The first :data:`LISTED_PROBLEMS` problems, each naming line and frame.
        problem_count: All problems.
    """

    commands: int = 0
    device_frames: int = 0
    by_kind: Counter = field(default_factory=Counter)
    ignored_upstream: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    @property
    def ok(self) -> bool:
        return self.problem_count == 0 and self.commands > 0

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < LISTED_PROBLEMS:
            self.problems.append(text)


class WireChecker:
    """Feed it a capture's records in order (:meth:`add`), then read :attr:`report`."""

    def __init__(self, model: RobotModel) -> None:
        motors = model.hardware.motors
        self._joints: dict[tuple[str, int], JointSpec] = {
            (spec.motor.bus, spec.motor.device_id): spec for spec in model.joints
        }
        self._upstream = UpstreamSilDecoder(
            [m.device_id for m in motors.values() if isinstance(m, TMotorParams)],
            [m.device_id for m in motors.values() if isinstance(m, Epos4Params)],
        )
        self._own = OwnDecoder(model)
        self._forms = {
            (m.bus, m.device_id): m.frame_form
            for m in motors.values()
            if isinstance(m, Epos4Params)
        }
        self._pending: dict[str, bytes] = {}
        self._pending_own: dict[str, bytes] = {}
        self.report = WireReport()

    def check(self, records: Iterable[CapturedCan | CapturedSerial]) -> WireReport:
        for number, record in enumerate(records, 1):
            self.add(record, f'record {number}')
        for bus, rest in self._pending.items():
            if rest:
                self.report.problem(f'{bus}: {len(rest)} bytes of an unfinished packet at the end')
        return self.report

    def add(self, record: CapturedCan | CapturedSerial, where: str) -> None:
        if isinstance(record, CapturedSerial):
            self._add_serial(record, where)
            return
        bus, can_id, extended, data = record.bus, record.can_id, record.extended, record.data
        if sent_by_a_device(can_id, extended):
            self.report.device_frames += 1
            return
        what = f'{where} {bus} {can_id:0{8 if extended else 3}X}#{data.hex().upper()}'
        try:
            command = decode_can(can_id, extended, data)
        except WireError as error:
            self.report.problem(f'{what}: independent decoder: {error}')
            return
        upstream = _guarded(self._upstream.can, can_id, extended, data)
        try:
            own = self._own.can(bus, can_id, extended, data)
        except ValueError as error:
            own = f'refused ({error})'
        self._compare_upstream(what, upstream, as_upstream_sil_sees(command))
        self._judge(what, bus, command, own)
        self._check_form(what, bus, command, len(data))

    def _add_serial(self, record: CapturedSerial, where: str) -> None:
        bus = record.bus
        stream = self._pending.get(bus, b'') + record.data
        try:
            packets, self._pending[bus] = split_serial(stream)
        except WireError as error:
            self.report.problem(f'{where} {bus}: independent decoder: {error}')
            self._pending[bus] = self._pending_own[bus] = b''
            return
        own_packets, self._pending_own[bus] = dynamixel.split_packets(
            self._pending_own.get(bus, b'') + record.data
        )
        if len(own_packets) != len(packets):
            self.report.problem(
                f'{where} {bus}: {len(packets)} packets, our codec cut {len(own_packets)}'
            )
            return
        for (dxl_id, instruction, params), raw in zip(packets, own_packets, strict=True):
            what = f'{where} {bus} packet {raw.hex().upper()}'
            try:
                commands = decode_dynamixel(dxl_id, instruction, params)
                own = self._own.dynamixel(raw)
            except ValueError as error:
                self.report.problem(f'{what}: {error}')
                continue
            upstream = _guarded(self._upstream.dynamixel, dxl_id, instruction, params)
            expected = [c for c in map(as_upstream_sil_sees, commands) if c is not None]
            self._compare_upstream(what, upstream, expected)
            for index, command in enumerate(commands):
                self._judge(what, bus, command, own[index] if index < len(own) else 'missing')

    def _compare_upstream(self, what: str, upstream, expected) -> None:
        if upstream != expected:
            self.report.problem(
                f'{what}: upstream simulator reads {upstream}, expected {expected}'
            )

    def _judge(self, what: str, bus: str, command: WireCommand, own) -> None:
        """Count ``command``, compare our codecs' reading, check its target."""
        report = self.report
        report.commands += 1
        name = f'{command.device} {command.kind}'
        report.by_kind[name] += 1
        if as_upstream_sil_sees(command) is None:
            report.ignored_upstream[name] += 1
        if own != command and not _same_sdo(own, command):
            report.problem(f'{what}: our codecs read {own}, the independent decoder {command}')
        self._check_target(what, bus, command)

    def _check_form(self, what: str, bus: str, command: WireCommand, length: int) -> None:
        """The EPOS4 frames in the addressed drive's frame form (the URDF's ``frame_form``):
        sized SDO downloads, an SDO read as the probe, 2-byte NMT and controlword frames
        (CiA 301), or upstream's SDO 0x22, zero-byte probe and 8-byte frames."""
        device, node, kind, values = command
        form = self._forms.get((bus, node))
        if form is None or device not in ('can', 'epos4') or kind == 'sync':
            return
        cia301 = form is CanopenFrameForm.CIA301
        if kind in ('nmt', 'controlword'):
            wrong = length != (2 if cia301 else 8)
        elif kind == 'sdo_download':
            wrong = (values[3] != 0) != cia301  # 0: the size was not stated (0x22)
        else:
            wrong = kind == 'sdo_segment' and cia301
        if wrong:
            self.report.problem(f'{what}: not in the {form.value} frame form of node {node}')

    def _check_target(self, what: str, bus: str, command: WireCommand) -> None:
        device, node, kind, values = command
        if device == 'can':
            return
        spec = self._joints.get((bus, node))
        if spec is None or not isinstance(spec.motor, _FAMILY[device]):
            self.report.problem(f'{what}: no {device} {node} on {bus} in the URDF')
            return
        motor_rad = _target_motor_rad(spec.motor, kind, values)
        if motor_rad is None:
            return
        joint_rad = spec.motor.motor_to_joint_rad(motor_rad)
        if not spec.lower_rad - LIMIT_MARGIN_RAD <= joint_rad <= spec.upper_rad + LIMIT_MARGIN_RAD:
            self.report.problem(
                f'{what}: {spec.name} target {math.degrees(joint_rad):.2f} deg is outside its '
                f'limits [{math.degrees(spec.lower_rad):.1f}, {math.degrees(spec.upper_rad):.1f}]'
            )


_DEVICE_FUNCTIONS = frozenset({0x180, 0x280, 0x380, 0x480, 0x580, 0x700})
_TMOTOR_STATUS_PACKET = 0x29


def sent_by_a_device(can_id: int, extended: bool) -> bool:
    """A frame a motor sends: a TMotor status (extended packet 0x29, or the 11-bit id = node
    of upstream's simulator), a CANopen TPDO, SDO response, heartbeat or emergency."""
    if extended:
        return (can_id >> 8) & 0xFF == _TMOTOR_STATUS_PACKET
    function = can_id & 0x780
    return (
        0x001 <= can_id <= 0x07F
        or function in _DEVICE_FUNCTIONS
        or (function == 0x080 and can_id != 0x080)
    )


def _target_motor_rad(motor, kind: str, values: tuple[int, ...]) -> float | None:
    """A position target in motor rad, from the documented scalings (None: not a position)."""
    if kind == 'target_position':
        return values[0] * 2.0 * math.pi / (motor.encoder_counts_per_rev * motor.gear_ratio)
    if kind in ('set_position', 'set_position_speed'):
        return math.radians(values[0] / 10_000)
    if kind == 'profile_goal':
        return math.radians((2048 - values[2]) * 360.0 / 4096)
    return None


def _same_sdo(own, command: WireCommand) -> bool:
    """Our codec does not say whether a download stated its size; the rest must match."""
    return (
        isinstance(own, WireCommand)
        and command.kind == own.kind == 'sdo_download'
        and own[:3] == command[:3]
        and own.values == command.values[:3]
    )


def _guarded(read, *args):
    """Upstream's decoder on bytes it was not written for may fail: that is its reading too."""
    try:
        return read(*args)
    except (IndexError, ValueError) as error:  # struct.error is a ValueError
        return f'failed ({error})'
