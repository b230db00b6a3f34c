"""CiA 301 PDO set-up: the communication and mapping objects of a PDO, and the SDO writes that
give a drive a PDO layout (and the reads that prove it took it).

A drive's PDOs are described by :class:`PdoLayout` (direction, number, COB-ID base, transmission
type, mapped objects). :func:`configuration_writes` is the CiA 301 sequence for one PDO: disable
it (COB-ID bit 31), clear its mapping (sub-index 0 = 0), write the entries, set their count, set
the transmission type (and inhibit time / event timer where used), enable it.
:func:`expected_values` lists what reading the objects back must give.

ROS-free and pure; the EPOS4 family runs the writes at configure and compares the read-back,
the simulated EPOS4 implements the objects (``sim/epos4_objects.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .frame import CodecError

RPDO_COMMUNICATION = 0x1400
RPDO_MAPPING = 0x1600
TPDO_COMMUNICATION = 0x1800
TPDO_MAPPING = 0x1A00
PDO_COUNT = 4  # PDOs 1..4 of each direction (the EPOS4 has four RPDOs and four TPDOs)

COB_ID_SUBINDEX = 1
TRANSMISSION_TYPE_SUBINDEX = 2
INHIBIT_TIME_SUBINDEX = 3  # TPDO only, 100 us units
EVENT_TIMER_SUBINDEX = 5  # ms
COB_ID_INVALID = 0x8000_0000  # bit 31: the PDO does not exist (disabled)
COB_ID_NO_RTR = 0x4000_0000  # bit 30: no remote request allowed (the drive's to set)
MAX_PDO_BITS = 64
TRANSMISSION_SYNC_EVERY = 1  # synchronous, every SYNC (1..240: every n-th SYNC)


class PdoDirection(Enum):
    RECEIVE = 'rpdo'  # controller -> drive
    TRANSMIT = 'tpdo'  # drive -> controller


@dataclass(frozen=True)
class MappedObject:
    """One mapping entry: the object and its length in bits (8, 16 or 32)."""

    index: int
    subindex: int
    bits: int

    @property
    def entry(self) -> int:
        """The UNSIGNED32 mapping entry: index (16 bits), sub-index (8), length (8)."""
        return (self.index << 16) | (self.subindex << 8) | self.bits

    @classmethod
    def from_entry(cls, entry: int) -> MappedObject:
        return cls(entry >> 16, (entry >> 8) & 0xFF, entry & 0xFF)


@dataclass(frozen=True)
class PdoLayout:
    """One PDO of a drive: its COB-ID is ``cob_base + node_id``; ``objects`` empty means the
    PDO is disabled (COB-ID bit 31 set, no mapping)."""

    direction: PdoDirection
    number: int  # 1..4
    cob_base: int
    objects: tuple[MappedObject, ...]
    transmission_type: int = TRANSMISSION_SYNC_EVERY
    inhibit_time_100us: int = 0  # TPDO only; 0 = none
    event_timer_ms: int = 0  # 0 = none

    def __post_init__(self) -> None:
        where = f'{self.direction.value.upper()}{self.number}'
        if not 1 <= self.number <= PDO_COUNT:
            raise CodecError(f'{where}: PDO number must be 1..{PDO_COUNT}')
        if not (0x180 <= self.cob_base <= 0x500 and self.cob_base % 0x80 == 0):
            raise CodecError(
                f'{where}: COB-ID base 0x{self.cob_base:03X} is not one of the PDO ranges '
                f'0x180, 0x200, ..., 0x500'
            )
        bits = 0
        for item in self.objects:
            if item.bits not in (8, 16, 32):
                raise CodecError(f'{where}: 0x{item.index:04X} length {item.bits} bits')
            bits += item.bits
        if bits > MAX_PDO_BITS:
            raise CodecError(f'{where}: {bits} bits mapped, a PDO holds {MAX_PDO_BITS}')
        if not 0 <= self.transmission_type <= 0xFF:
            raise CodecError(f'{where}: transmission type {self.transmission_type}')
        if self.inhibit_time_100us and self.direction is PdoDirection.RECEIVE:
            raise CodecError(f'{where}: an inhibit time only exists for a TPDO')

    @property
    def enabled(self) -> bool:
        return bool(self.objects)

    @property
    def communication_index(self) -> int:
        base = RPDO_COMMUNICATION if self.direction is PdoDirection.RECEIVE else TPDO_COMMUNICATION
        return base + self.number - 1

    @property
    def mapping_index(self) -> int:
        base = RPDO_MAPPING if self.direction is PdoDirection.RECEIVE else TPDO_MAPPING
        return base + self.number - 1

    @property
    def length_bytes(self) -> int:
        return sum(item.bits for item in self.objects) // 8

    def cob_id(self, node_id: int) -> int:
        """The COB-ID value as written (bit 31 set when the PDO is disabled)."""
        cob = self.cob_base + node_id
        return cob if self.enabled else cob | COB_ID_INVALID

    def name(self) -> str:
        return f'{self.direction.value.upper()}{self.number}'


@dataclass(frozen=True)
class ObjectValue:
    """An object value to write or to expect: index, sub-index, value, size in bytes."""

    index: int
    subindex: int
    value: int
    size: int

    def describe(self) -> str:
        return f'0x{self.index:04X}/{self.subindex}'


def configuration_writes(pdo: PdoLayout, node_id: int) -> list[ObjectValue]:
    """The CiA 301 sequence that gives drive ``node_id`` this PDO layout."""
    comm, mapping = pdo.communication_index, pdo.mapping_index
    cob = pdo.cob_base + node_id
    writes = [
        ObjectValue(comm, COB_ID_SUBINDEX, cob | COB_ID_INVALID, 4),  # disable while changing
        ObjectValue(mapping, 0, 0, 1),  # clear the mapping before its entries change
    ]
    writes += [
        ObjectValue(mapping, number, item.entry, 4)
        for number, item in enumerate(pdo.objects, start=1)
    ]
    writes.append(ObjectValue(mapping, 0, len(pdo.objects), 1))
    writes.append(ObjectValue(comm, TRANSMISSION_TYPE_SUBINDEX, pdo.transmission_type, 1))
    if pdo.direction is PdoDirection.TRANSMIT:
        writes.append(ObjectValue(comm, INHIBIT_TIME_SUBINDEX, pdo.inhibit_time_100us, 2))
    writes.append(ObjectValue(comm, EVENT_TIMER_SUBINDEX, pdo.event_timer_ms, 2))
    if pdo.enabled:
        writes.append(ObjectValue(comm, COB_ID_SUBINDEX, cob, 4))
    return writes


def expected_values(pdo: PdoLayout, node_id: int) -> list[ObjectValue]:
    """What reading the PDO's objects back must give once :func:`configuration_writes` ran."""
    comm, mapping = pdo.communication_index, pdo.mapping_index
    values = [
        ObjectValue(comm, COB_ID_SUBINDEX, pdo.cob_id(node_id), 4),
        ObjectValue(comm, TRANSMISSION_TYPE_SUBINDEX, pdo.transmission_type, 1),
        ObjectValue(mapping, 0, len(pdo.objects), 1),
    ]
    values += [
        ObjectValue(mapping, number, item.entry, 4)
        for number, item in enumerate(pdo.objects, start=1)
    ]
    return values


def is_cob_id(index: int, subindex: int) -> bool:
    """Whether the object is a PDO's COB-ID (sub-index 1 of a communication parameter)."""
    return subindex == COB_ID_SUBINDEX and any(
        base <= index < base + PDO_COUNT for base in (RPDO_COMMUNICATION, TPDO_COMMUNICATION)
    )


def mismatches(expected: list[ObjectValue], read: dict[tuple[int, int], int]) -> list[str]:
    """The objects whose read-back value differs, e.g. ``'0x1A00/2: 0x60640020 expected,
    0x00000000 read'`` (bit 30 of a COB-ID, no RTR, is the drive's to set and not compared)."""
    wrong = []
    for item in expected:
        have = read.get((item.index, item.subindex))
        want = item.value
        if have is not None and is_cob_id(item.index, item.subindex):
            have &= ~COB_ID_NO_RTR
        if have != want:
            digits = 2 * item.size
            shown = 'nothing' if have is None else f'0x{have:0{digits}X}'
            wrong.append(f'{item.describe()}: 0x{want:0{digits}X} expected, {shown} read')
    return wrong
