"""The PDO communication and mapping objects of the simulated EPOS4 (CiA 301), and the PDOs
they define: which frame carries which objects, applied when.

Objects: RPDO communication 0x1400-0x1403 (sub 1 COB-ID, 2 transmission type, 5 event timer),
RPDO mapping 0x1600-0x1603, TPDO communication 0x1800-0x1803 (sub 3 inhibit time as well) and
TPDO mapping 0x1A00-0x1A03 (sub 0 the number of entries, 1..8 the entries). The CiA 301 rules a
real drive enforces: a COB-ID changes only while the PDO is off (bit 31), a mapping only while
its PDO is off and its entry count is 0, an entry names an object that can be mapped, and the
mapped objects fit 64 bits. Refusals are SDO aborts with the CiA 301 codes.

The device asks :meth:`PdoObjects.rpdo` which objects a received frame carries and
:attr:`PdoObjects.tpdos` what to send after a SYNC; both follow every write at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from phil_hardware.core.codecs.cia301_pdo import (
    COB_ID_INVALID,
    COB_ID_SUBINDEX,
    EVENT_TIMER_SUBINDEX,
    INHIBIT_TIME_SUBINDEX,
    MAX_PDO_BITS,
    PDO_COUNT,
    RPDO_COMMUNICATION,
    RPDO_MAPPING,
    TPDO_COMMUNICATION,
    TPDO_MAPPING,
    TRANSMISSION_TYPE_SUBINDEX,
    MappedObject,
    PdoDirection,
    PdoLayout,
    configuration_writes,
)
from phil_hardware.sim.epos4_objects import (
    ABORT_NO_SUBINDEX,
    ABORT_VALUE_RANGE,
    ABORT_WRITE_READ_ONLY,
    SdoAbortError,
)

ABORT_CANNOT_MAP = 0x06040041
ABORT_EXCEEDS_PDO_LENGTH = 0x06040042
ABORT_INCOMPATIBLE = 0x06040043
MAX_ENTRIES = 8
SYNC_TYPES = range(0, 241)  # 0..240: applied / sent with the SYNC
ASYNC_TYPES = (254, 255)

HIGHEST_COMMUNICATION_SUBINDEX = EVENT_TIMER_SUBINDEX  # sub-index 0 of a communication object


@dataclass(frozen=True)
class MappedPdo:
    """A PDO as the device uses it: its COB-ID, transmission type and objects."""

    cob_id: int
    transmission_type: int
    objects: tuple[MappedObject, ...]

    @property
    def length_bytes(self) -> int:
        return sum(item.bits for item in self.objects) // 8

    @property
    def on_sync(self) -> bool:
        return self.transmission_type in SYNC_TYPES


def _locate(index: int) -> tuple[PdoDirection, bool, int] | None:
    """(direction, is it the mapping object, its PDO's communication object index) of a PDO
    object index, or None."""
    for base, direction, mapping, communication in (
        (RPDO_COMMUNICATION, PdoDirection.RECEIVE, False, RPDO_COMMUNICATION),
        (RPDO_MAPPING, PdoDirection.RECEIVE, True, RPDO_COMMUNICATION),
        (TPDO_COMMUNICATION, PdoDirection.TRANSMIT, False, TPDO_COMMUNICATION),
        (TPDO_MAPPING, PdoDirection.TRANSMIT, True, TPDO_COMMUNICATION),
    ):
        if base <= index < base + PDO_COUNT:
            return direction, mapping, communication + index - base
    return None


def is_pdo_object(index: int) -> bool:
    """Whether ``index`` is one of the PDO communication or mapping objects."""
    return _locate(index) is not None


class PdoObjects:
    """The PDO objects of one drive.

    Args:
        node_id: The drive's node id (COB-IDs are the layout's base + it).
        power_on: The layout the drive holds at power-on (and after an application reset).
        mappable: Object index -> (size in bits, direction it can be mapped in).
    """

    def __init__(
        self,
        node_id: int,
        power_on: tuple[PdoLayout, ...],
        mappable: dict[int, tuple[int, PdoDirection]],
    ) -> None:
        self._node_id = node_id
        self._power_on = power_on
        self._mappable = mappable
        self._values: dict[tuple[int, int], int] = {}
        self.rpdos: dict[int, MappedPdo] = {}
        self.tpdos: tuple[MappedPdo, ...] = ()
        self.reset()

    def reset(self) -> None:
        """Back to the power-on layout."""
        self._values = {}
        for pdo in self._power_on:
            comm, mapping = pdo.communication_index, pdo.mapping_index
            self._values[(comm, COB_ID_SUBINDEX)] = COB_ID_INVALID
            for write in configuration_writes(pdo, self._node_id):
                self._values[(write.index, write.subindex)] = write.value
            self._values.setdefault((comm, INHIBIT_TIME_SUBINDEX), 0)
            for number in range(len(pdo.objects) + 1, MAX_ENTRIES + 1):
                self._values[(mapping, number)] = 0
        self._rebuild()

    @staticmethod
    def handles(index: int) -> bool:
        """Whether ``index`` is one of these objects."""
        return is_pdo_object(index)

    def read(self, index: int, subindex: int) -> tuple[int, int]:
        """(value, size in bytes) of a PDO object.

        Raises:
            SdoAbortError: No such sub-index.
        """
        direction, mapping, _communication = self._where(index)
        if not mapping and subindex == 0:
            return HIGHEST_COMMUNICATION_SUBINDEX, 1
        size = self._size(direction, mapping, subindex)
        return self._values[(index, subindex)], size

    def write(self, index: int, subindex: int, value: int) -> None:
        """Write a PDO object under the CiA 301 rules.

        Raises:
            SdoAbortError: Refused (read-only, value out of range, PDO on, cannot be mapped, too
                long).
        """
        direction, mapping, communication = self._where(index)
        if not mapping and subindex == 0:
            raise SdoAbortError(ABORT_WRITE_READ_ONLY)
        self._size(direction, mapping, subindex)  # the sub-index exists
        cob_id = self._values[(communication, COB_ID_SUBINDEX)]
        on = not cob_id & COB_ID_INVALID
        if mapping:
            self._write_mapping(direction, index, subindex, value, on)
        elif subindex == COB_ID_SUBINDEX:
            if on and not value & COB_ID_INVALID and (value ^ cob_id) & 0x1FFF_FFFF:
                raise SdoAbortError(ABORT_VALUE_RANGE)  # the COB-ID of a PDO that is on
            self._values[(index, subindex)] = value
        elif subindex == TRANSMISSION_TYPE_SUBINDEX:
            if value not in SYNC_TYPES and value not in ASYNC_TYPES:
                raise SdoAbortError(ABORT_VALUE_RANGE)
            self._values[(index, subindex)] = value
        else:
            self._values[(index, subindex)] = value
        self._rebuild()

    def _write_mapping(
        self, direction: PdoDirection, index: int, subindex: int, value: int, on: bool
    ) -> None:
        if on:
            raise SdoAbortError(ABORT_INCOMPATIBLE)  # a PDO's mapping changes only while it is off
        if subindex == 0:
            if value > MAX_ENTRIES:
                raise SdoAbortError(ABORT_VALUE_RANGE)
            entries = [
                MappedObject.from_entry(self._values[(index, n)]) for n in range(1, value + 1)
            ]
            for entry in entries:
                self._check_mappable(direction, entry)
            if sum(entry.bits for entry in entries) > MAX_PDO_BITS:
                raise SdoAbortError(ABORT_EXCEEDS_PDO_LENGTH)
        else:
            if self._values[(index, 0)] != 0:
                raise SdoAbortError(ABORT_INCOMPATIBLE)  # entries change only with the count at 0
            if value:
                self._check_mappable(direction, MappedObject.from_entry(value))
        self._values[(index, subindex)] = value

    def _check_mappable(self, direction: PdoDirection, entry: MappedObject) -> None:
        known = self._mappable.get(entry.index)
        if entry.subindex != 0 or known is None or known != (entry.bits, direction):
            raise SdoAbortError(ABORT_CANNOT_MAP)

    @staticmethod
    def _where(index: int) -> tuple[PdoDirection, bool, int]:
        located = _locate(index)
        if located is None:
            raise SdoAbortError(ABORT_NO_SUBINDEX)
        return located

    @staticmethod
    def _size(direction: PdoDirection, mapping: bool, subindex: int) -> int:
        if mapping:
            if subindex == 0:
                return 1
            if 1 <= subindex <= MAX_ENTRIES:
                return 4
        elif subindex == COB_ID_SUBINDEX:
            return 4
        elif subindex == TRANSMISSION_TYPE_SUBINDEX:
            return 1
        elif subindex == EVENT_TIMER_SUBINDEX or (
            subindex == INHIBIT_TIME_SUBINDEX and direction is PdoDirection.TRANSMIT
        ):
            return 2
        raise SdoAbortError(ABORT_NO_SUBINDEX)

    def _rebuild(self) -> None:
        """The PDOs that are on, as the device uses them."""
        rpdos, tpdos = {}, []
        for direction, comm_base, map_base in (
            (PdoDirection.RECEIVE, RPDO_COMMUNICATION, RPDO_MAPPING),
            (PdoDirection.TRANSMIT, TPDO_COMMUNICATION, TPDO_MAPPING),
        ):
            for offset in range(PDO_COUNT):
                cob_id = self._values.get((comm_base + offset, COB_ID_SUBINDEX), COB_ID_INVALID)
                if cob_id & COB_ID_INVALID:
                    continue
                count = self._values[(map_base + offset, 0)]
                pdo = MappedPdo(
                    cob_id & 0x7FF,
                    self._values[(comm_base + offset, TRANSMISSION_TYPE_SUBINDEX)],
                    tuple(
                        MappedObject.from_entry(self._values[(map_base + offset, n)])
                        for n in range(1, count + 1)
                    ),
                )
                if direction is PdoDirection.RECEIVE:
                    rpdos[pdo.cob_id] = pdo
                else:
                    tpdos.append(pdo)
        self.rpdos, self.tpdos = rpdos, tuple(tpdos)
