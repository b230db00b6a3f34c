"""CiA 402 (drives and motion control) device profile: the controlword values and modes of
operation the controller uses, and the power state a statusword encodes."""

from __future__ import annotations

from enum import Enum, IntEnum


class Controlword(IntEnum):
    """CiA 402 controlword values used by the controller."""

    QUICK_STOP = 0x02
    SHUTDOWN = 0x06
    SWITCH_ON = 0x07
    ENABLE_OPERATION = 0x0F
    START_HOMING = 0x1F
    FAULT_RESET = 0x80


class ModeOfOperation(IntEnum):
    """Values of object 0x6060."""

    HOMING = 6
    CYCLIC_SYNC_POSITION = 8
    CYCLIC_SYNC_VELOCITY = 9
    CYCLIC_SYNC_TORQUE = 10


class Cia402State(str, Enum):
    """CiA 402 power state decoded from a statusword."""

    NOT_READY_TO_SWITCH_ON = 'Not ready to switch on'
    SWITCH_ON_DISABLED = 'Switch on disabled'
    READY_TO_SWITCH_ON = 'Ready to switch on'
    SWITCHED_ON = 'Switched on'
    OPERATION_ENABLED = 'Operation enabled'
    QUICK_STOP_ACTIVE = 'Quick stop active'
    FAULT_REACTION_ACTIVE = 'Fault reaction active'
    FAULT = 'Fault'
    UNKNOWN = 'Unknown'


# (mask, value, state), checked in order; masks are the standard CiA 402 ones.
_STATUSWORD_PATTERNS = (
    (0x4F, 0x00, Cia402State.NOT_READY_TO_SWITCH_ON),
    (0x4F, 0x40, Cia402State.SWITCH_ON_DISABLED),
    (0x6F, 0x21, Cia402State.READY_TO_SWITCH_ON),
    (0x6F, 0x23, Cia402State.SWITCHED_ON),
    (0x6F, 0x27, Cia402State.OPERATION_ENABLED),
    (0x6F, 0x07, Cia402State.QUICK_STOP_ACTIVE),
    (0x4F, 0x0F, Cia402State.FAULT_REACTION_ACTIVE),
    (0x4F, 0x08, Cia402State.FAULT),
)


def cia402_state(statusword: int) -> Cia402State:
    """Decode the CiA 402 power state from a statusword with the standard masks."""
    for mask, value, state in _STATUSWORD_PATTERNS:
        if statusword & mask == value:
            return state
    return Cia402State.UNKNOWN
