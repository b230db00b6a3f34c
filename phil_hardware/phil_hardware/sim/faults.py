"""Fault injection for the simulated devices: what can go wrong on the wire, set at run time.

Kinds (one :class:`FaultSet` per device; any combination may be active):

* ``silence``: the device transmits nothing (no status, no TPDO, no SDO or status-packet reply)
  but keeps receiving and following commands, like a broken transmit line.
* ``over_current``: the reported current (TMotor), torque actual (EPOS4) or hardware alert and
  present current (Dynamixel) exceed the device's limit. ``value``: the reported current [A]
  (TMotor) or torque [mNm] (EPOS4); default 1.5x the limit.
* ``out_of_range``: the reported position is a joint angle beyond the hard limit.
  ``value``: that joint angle [rad]; default 0.2 rad above the upper limit.
* ``corrupt``: every transmitted frame or packet keeps its id and length but carries garbage
  (random CAN payload; a Dynamixel packet with a broken CRC).
* ``short``: every transmitted frame or packet is truncated to half its length.

The injected values only change what the device *reports*; the joint truth is unaffected.
"""

from __future__ import annotations

import enum
import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from phil_hardware.core.codecs import CanFrame


class FaultKind(str, enum.Enum):
    """What a device does wrong."""

    SILENCE = 'silence'
    OVER_CURRENT = 'over_current'
    OUT_OF_RANGE = 'out_of_range'
    CORRUPT = 'corrupt'
    SHORT = 'short'


@dataclass(frozen=True)
class InjectedFault:
    """One fault injected into a simulated device (a latched fault is core.safety.Fault).

    Attributes:
        kind: What goes wrong.
        value: Kind-specific number (see the module docstring), None for the default.
    """

    kind: FaultKind
    value: float | None = None


class FaultSet:
    """The faults active on one device. Thread-safe: set from any thread, read by the loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[FaultKind, InjectedFault] = {}

    def set(self, kind: FaultKind | str, value: float | None = None) -> InjectedFault:
        """Activate (or re-parametrise) a fault and return it.

        Raises:
            ValueError: If ``kind`` is not a fault kind (the message lists the valid ones).
        """
        fault = InjectedFault(parse_kind(kind), None if value is None else float(value))
        with self._lock:
            self._faults[fault.kind] = fault
        return fault

    def clear(self, kind: FaultKind | str | None = None) -> None:
        """Deactivate one fault kind, or all of them when ``kind`` is None."""
        with self._lock:
            if kind is None:
                self._faults.clear()
            else:
                self._faults.pop(parse_kind(kind), None)

    def get(self, kind: FaultKind) -> InjectedFault | None:
        """Return the active fault of ``kind``, or None."""
        with self._lock:
            return self._faults.get(kind)

    def active(self) -> tuple[InjectedFault, ...]:
        """Return every active fault."""
        with self._lock:
            return tuple(self._faults.values())

    def __contains__(self, kind: object) -> bool:
        with self._lock:
            return kind in self._faults


def parse_kind(kind: FaultKind | str) -> FaultKind:
    """Return ``kind`` as a :class:`FaultKind` (accepts 'over-current' and 'over_current').

    Raises:
        ValueError: Listing the valid kinds.
    """
    if isinstance(kind, FaultKind):
        return kind
    try:
        return FaultKind(str(kind).strip().lower().replace('-', '_'))
    except ValueError:
        valid = ', '.join(k.value for k in FaultKind)
        raise ValueError(f'unknown fault kind {kind!r}; valid kinds: {valid}') from None


def parse_fault_spec(text: str) -> tuple[str, InjectedFault]:
    """Parse a command-line fault ``joint:kind`` or ``joint:kind=value``.

    Returns:
        (joint name, fault). The joint name is not checked here.

    Raises:
        ValueError: Naming the malformed part of ``text``.
    """
    joint, separator, rest = text.partition(':')
    if not separator or not joint.strip() or not rest.strip():
        raise ValueError(f'fault {text!r} must look like joint:kind or joint:kind=value')
    kind_text, equals, value_text = rest.partition('=')
    value = None
    if equals:
        try:
            value = float(value_text)
        except ValueError:
            raise ValueError(f'fault {text!r}: value {value_text!r} is not a number') from None
    return joint.strip(), InjectedFault(parse_kind(kind_text), value)


def mangle_frames(
    frames: Iterable[CanFrame], faults: FaultSet, rng: random.Random
) -> list[CanFrame]:
    """Apply the transmit-side faults (silence, corrupt, short) to outgoing CAN frames.

    Args:
        frames: What the healthy device would send.
        faults: The device's faults.
        rng: Source of the garbage bytes (seeded by the caller for reproducible runs).
    """
    if FaultKind.SILENCE in faults:
        return []
    result = list(frames)
    if FaultKind.CORRUPT in faults:
        result = [
            CanFrame(f.arbitration_id, rng.randbytes(len(f.data)), f.is_extended_id)
            for f in result
        ]
    if FaultKind.SHORT in faults:
        result = [
            CanFrame(f.arbitration_id, f.data[: len(f.data) // 2], f.is_extended_id)
            for f in result
        ]
    return result


def mangle_packet(packet: bytes, faults: FaultSet) -> bytes:
    """Apply the transmit-side faults to one serial packet (empty result = nothing sent)."""
    if FaultKind.SILENCE in faults:
        return b''
    if FaultKind.CORRUPT in faults and packet:
        # Flipping the last CRC byte keeps the length and header, so only the CRC check fails.
        packet = packet[:-1] + bytes((packet[-1] ^ 0xFF,))
    if FaultKind.SHORT in faults:
        packet = packet[: len(packet) // 2]
    return packet
