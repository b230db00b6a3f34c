"""The object dictionary of the simulated EPOS4: the objects the controller reads and writes.

Values are plain integers; live objects (statusword, position and torque actual, controlword,
targets) are read from or written to the owning :class:`~phil_hardware.sim.epos4_device.
Epos4Device`. Errors are CiA 301 SDO abort codes raised as :class:`SdoAbortError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from phil_hardware.core.codecs.cia301_pdo import PdoDirection
from phil_hardware.core.codecs.conversions import INT16_RANGE
from phil_hardware.core.codecs.epos4 import ObjectIndex

if TYPE_CHECKING:
    from phil_hardware.sim.epos4_device import Epos4Device
    from phil_hardware.sim.epos4_pdos import PdoObjects

ABORT_BAD_COMMAND = 0x05040001
ABORT_WRITE_READ_ONLY = 0x06010002
ABORT_NO_OBJECT = 0x06020000
ABORT_LENGTH_MISMATCH = 0x06070010
ABORT_NO_SUBINDEX = 0x06090011
ABORT_VALUE_RANGE = 0x06090030

DEVICE_TYPE = 0x1000
TORQUE_ACTUAL = ObjectIndex.TORQUE_ACTUAL_VALUE
RECEIVE, TRANSMIT = PdoDirection.RECEIVE, PdoDirection.TRANSMIT
EPOS4_DEVICE_TYPE = 0x00020192  # CiA 402 drive profile, servo drive
SUPPORTED_MODES = frozenset({1, 3, 6, 8, 9, 10})  # PPM, PVM, HMM, CSP, CSV, CST
HOMING_METHODS_HERE = frozenset({35, 37})  # "homing on the current position"


class SdoAbortError(Exception):
    """An SDO request the server refuses; ``code`` is the CiA 301 abort code."""

    def __init__(self, code: int) -> None:
        super().__init__(f'SDO abort 0x{code:08X}')
        self.code = code


@dataclass(frozen=True)
class ObjectSpec:
    """One sub-index-0 object: size [bytes], signedness, access, power-on value, and the PDO
    direction it can be mapped in (None: not mappable)."""

    name: str
    size: int
    signed: bool
    writable: bool
    default: int = 0
    pdo: PdoDirection | None = None


OBJECTS: dict[int, ObjectSpec] = {
    DEVICE_TYPE: ObjectSpec('Device type', 4, False, False, EPOS4_DEVICE_TYPE),
    ObjectIndex.HOME_POSITION: ObjectSpec('Home position', 4, True, True),
    ObjectIndex.HOME_OFFSET_MOVE_DISTANCE: ObjectSpec('Home offset move distance', 4, True, True),
    ObjectIndex.HOMING_CURRENT_THRESHOLD: ObjectSpec(
        'Homing current threshold', 2, False, True, 500
    ),
    ObjectIndex.CONTROLWORD: ObjectSpec('Controlword', 2, False, True, pdo=RECEIVE),
    ObjectIndex.STATUSWORD: ObjectSpec('Statusword', 2, False, False, pdo=TRANSMIT),
    ObjectIndex.MODES_OF_OPERATION: ObjectSpec('Modes of operation', 1, True, True, pdo=RECEIVE),
    ObjectIndex.MODES_OF_OPERATION_DISPLAY: ObjectSpec(
        'Modes of operation display', 1, True, False, pdo=TRANSMIT
    ),
    ObjectIndex.POSITION_ACTUAL_VALUE: ObjectSpec(
        'Position actual value', 4, True, False, pdo=TRANSMIT
    ),
    ObjectIndex.FOLLOWING_ERROR_WINDOW: ObjectSpec('Following error window', 4, False, True, 2000),
    ObjectIndex.VELOCITY_ACTUAL_VALUE: ObjectSpec(
        'Velocity actual value', 4, True, False, pdo=TRANSMIT
    ),
    ObjectIndex.TARGET_TORQUE: ObjectSpec('Target torque', 2, True, True, pdo=RECEIVE),
    TORQUE_ACTUAL: ObjectSpec('Torque actual value', 2, True, False, pdo=TRANSMIT),
    ObjectIndex.TARGET_POSITION: ObjectSpec('Target position', 4, True, True, pdo=RECEIVE),
    ObjectIndex.TARGET_VELOCITY: ObjectSpec('Target velocity', 4, True, True, pdo=RECEIVE),
    ObjectIndex.HOMING_METHOD: ObjectSpec('Homing method', 1, True, True, 7),
    ObjectIndex.POSITION_OFFSET: ObjectSpec('Position offset', 4, True, True),
    ObjectIndex.VELOCITY_OFFSET: ObjectSpec('Velocity offset', 4, True, True),
    ObjectIndex.TORQUE_OFFSET: ObjectSpec('Torque offset', 2, True, True),
}


# What can be mapped into a PDO: index -> (length in bits, direction).
MAPPABLE = {
    index: (8 * spec.size, spec.pdo) for index, spec in OBJECTS.items() if spec.pdo is not None
}


class Epos4Objects:
    """Object values of one drive plus the SDO read/write rules.

    Args:
        device: The drive whose live values some objects show.
        pdos: The drive's PDO communication and mapping objects (0x1400-0x1A03).
    """

    def __init__(self, device: Epos4Device, pdos: PdoObjects) -> None:
        self._device = device
        self._pdos = pdos
        self._values: dict[int, int] = {}
        self.reset()

    def reset(self) -> None:
        """Back to the power-on values (the PDO layout included)."""
        self._values = {index: spec.default for index, spec in OBJECTS.items()}
        self._pdos.reset()

    @property
    def mode(self) -> int:
        """Modes of operation (0x6060); 0 = none selected yet."""
        return self._values[ObjectIndex.MODES_OF_OPERATION]

    def value(self, index: int) -> int:
        """Stored value of a plain object (not the live ones)."""
        return self._values[index]

    def _live_value(self, index: int) -> int:
        device = self._device
        if index == ObjectIndex.STATUSWORD:
            return device.statusword()
        if index == ObjectIndex.POSITION_ACTUAL_VALUE:
            return device.position_actual_counts()
        if index == TORQUE_ACTUAL:
            permille = round(device.torque_actual_mnm() / device.params.rated_torque_mnm * 1000)
            return max(INT16_RANGE[0], min(INT16_RANGE[1], permille))
        if index == ObjectIndex.MODES_OF_OPERATION_DISPLAY:
            return self.mode
        if index == ObjectIndex.VELOCITY_ACTUAL_VALUE:
            return device.velocity_actual_rpm()
        return self._values[index]

    @staticmethod
    def _spec(index: int, subindex: int) -> ObjectSpec:
        spec = OBJECTS.get(index)
        if spec is None:
            raise SdoAbortError(ABORT_NO_OBJECT)
        if subindex != 0:
            raise SdoAbortError(ABORT_NO_SUBINDEX)
        return spec

    def read(self, index: int, subindex: int) -> bytes:
        """Return an object's value as little-endian bytes of its size.

        Raises:
            SdoAbortError: Unknown object or sub-index.
        """
        if self._pdos.handles(index):
            value, size = self._pdos.read(index, subindex)
            return value.to_bytes(size, 'little')
        spec = self._spec(index, subindex)
        value = self._live_value(index)
        return (value & ((1 << (8 * spec.size)) - 1)).to_bytes(spec.size, 'little')

    def write(self, index: int, subindex: int, data: bytes, *, size_indicated: bool) -> None:
        """Write an object from an expedited download.

        Args:
            index: Object index.
            subindex: Sub-index (only 0 exists).
            data: Received data bytes.
            size_indicated: The request stated its size; it must then match the object. Without
                it (upstream's command 0x22) the first bytes of the 4 transmitted are used.

        Raises:
            SdoAbortError: Unknown object, read-only object, wrong length or a value out of range.
        """
        if self._pdos.handles(index):
            _value, size = self._pdos.read(index, subindex)
            if len(data) < size or (size_indicated and len(data) != size):
                raise SdoAbortError(ABORT_LENGTH_MISMATCH)
            self._pdos.write(index, subindex, int.from_bytes(data[:size], 'little'))
            return
        spec = self._spec(index, subindex)
        if not spec.writable:
            raise SdoAbortError(ABORT_WRITE_READ_ONLY)
        if len(data) < spec.size or (size_indicated and len(data) != spec.size):
            raise SdoAbortError(ABORT_LENGTH_MISMATCH)
        value = int.from_bytes(data[: spec.size], 'little', signed=spec.signed)
        device = self._device
        if index == ObjectIndex.MODES_OF_OPERATION:
            if value not in SUPPORTED_MODES:
                raise SdoAbortError(ABORT_VALUE_RANGE)
            changed = value != self.mode
            self._values[index] = value
            if changed:
                device.on_mode_change()
            return
        self._values[index] = value
        if index == ObjectIndex.CONTROLWORD:
            device.apply_controlword(value)
        elif index == ObjectIndex.TARGET_POSITION:
            device.set_target_position_counts(value)
        elif index == ObjectIndex.TARGET_TORQUE:
            device.set_target_torque_permille(value)


__all__ = [
    'ABORT_BAD_COMMAND',
    'ABORT_LENGTH_MISMATCH',
    'ABORT_NO_OBJECT',
    'ABORT_NO_SUBINDEX',
    'ABORT_VALUE_RANGE',
    'ABORT_WRITE_READ_ONLY',
    'HOMING_METHODS_HERE',
    'MAPPABLE',
    'OBJECTS',
    'Epos4Objects',
    'SdoAbortError',
]
