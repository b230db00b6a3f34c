"""The CiA 402 power state machine of a drive, driven by the controlword (pure functions).

Statusword values are real CiA 402 ones (bit 9 "remote" set, bit 4 "voltage enabled" set while
the power stage is on), so :func:`phil_hardware.core.codecs.epos4.cia402_state` decodes them.
Like the EPOS4, "Switch on + Enable operation" from Ready to switch on goes straight to
Operation enabled (transitions 3 + 4), and quick stop stays in Quick stop active until the
controlword changes (quick stop option code 6).
"""

from __future__ import annotations

import enum

from phil_hardware.core.codecs.epos4 import Cia402State

_SWITCH_ON = 0x01
_ENABLE_VOLTAGE = 0x02
_QUICK_STOP = 0x04  # active low: 0 requests a quick stop
_ENABLE_OPERATION = 0x08
FAULT_RESET_BIT = 0x80
HOMING_START_BIT = 0x10

REMOTE_BIT = 0x0200
TARGET_REACHED_BIT = 0x0400
MODE_SPECIFIC_12_BIT = 0x1000  # CSP/CST: drive follows the command value; HMM: homing attained
MODE_SPECIFIC_13_BIT = 0x2000  # HMM: homing error
POSITION_REFERENCED_BIT = 0x8000

POWER_STATES = (
    Cia402State.SWITCH_ON_DISABLED,
    Cia402State.READY_TO_SWITCH_ON,
    Cia402State.SWITCHED_ON,
    Cia402State.OPERATION_ENABLED,
    Cia402State.QUICK_STOP_ACTIVE,
    Cia402State.FAULT,
)

_STATUSWORD = {
    Cia402State.SWITCH_ON_DISABLED: 0x0040,
    Cia402State.READY_TO_SWITCH_ON: 0x0031,
    Cia402State.SWITCHED_ON: 0x0033,
    Cia402State.OPERATION_ENABLED: 0x0037,
    Cia402State.QUICK_STOP_ACTIVE: 0x0017,
    Cia402State.FAULT: 0x0018,
}


class Command(enum.Enum):
    """Device-control command encoded in controlword bits 0-3 (bit 7 clear)."""

    DISABLE_VOLTAGE = 'disable voltage'
    QUICK_STOP = 'quick stop'
    SHUTDOWN = 'shutdown'
    SWITCH_ON = 'switch on'
    ENABLE_OPERATION = 'enable operation'


def decode_command(controlword: int) -> Command:
    """Classify a controlword's device-control bits (CiA 402 table of commands)."""
    if not controlword & _ENABLE_VOLTAGE:
        return Command.DISABLE_VOLTAGE
    if not controlword & _QUICK_STOP:
        return Command.QUICK_STOP
    if not controlword & _SWITCH_ON:
        return Command.SHUTDOWN
    if not controlword & _ENABLE_OPERATION:
        return Command.SWITCH_ON
    return Command.ENABLE_OPERATION


# (from state, command) -> to state; a pair not listed leaves the state unchanged.
_TRANSITIONS = {
    (Cia402State.SWITCH_ON_DISABLED, Command.SHUTDOWN): Cia402State.READY_TO_SWITCH_ON,
    (Cia402State.READY_TO_SWITCH_ON, Command.SWITCH_ON): Cia402State.SWITCHED_ON,
    (Cia402State.READY_TO_SWITCH_ON, Command.ENABLE_OPERATION): Cia402State.OPERATION_ENABLED,
    (Cia402State.READY_TO_SWITCH_ON, Command.DISABLE_VOLTAGE): Cia402State.SWITCH_ON_DISABLED,
    (Cia402State.READY_TO_SWITCH_ON, Command.QUICK_STOP): Cia402State.SWITCH_ON_DISABLED,
    (Cia402State.SWITCHED_ON, Command.ENABLE_OPERATION): Cia402State.OPERATION_ENABLED,
    (Cia402State.SWITCHED_ON, Command.SHUTDOWN): Cia402State.READY_TO_SWITCH_ON,
    (Cia402State.SWITCHED_ON, Command.DISABLE_VOLTAGE): Cia402State.SWITCH_ON_DISABLED,
    (Cia402State.SWITCHED_ON, Command.QUICK_STOP): Cia402State.SWITCH_ON_DISABLED,
    (Cia402State.OPERATION_ENABLED, Command.SWITCH_ON): Cia402State.SWITCHED_ON,
    (Cia402State.OPERATION_ENABLED, Command.SHUTDOWN): Cia402State.READY_TO_SWITCH_ON,
    (Cia402State.OPERATION_ENABLED, Command.DISABLE_VOLTAGE): Cia402State.SWITCH_ON_DISABLED,
    (Cia402State.OPERATION_ENABLED, Command.QUICK_STOP): Cia402State.QUICK_STOP_ACTIVE,
    (Cia402State.QUICK_STOP_ACTIVE, Command.ENABLE_OPERATION): Cia402State.OPERATION_ENABLED,
    (Cia402State.QUICK_STOP_ACTIVE, Command.DISABLE_VOLTAGE): Cia402State.SWITCH_ON_DISABLED,
}


def next_state(state: Cia402State, controlword: int, previous_controlword: int) -> Cia402State:
    """Return the power state after receiving ``controlword``.

    Args:
        state: Present state (one of :data:`POWER_STATES`).
        controlword: Received controlword.
        previous_controlword: The one before (fault reset acts on the rising edge of bit 7).
    """
    if state is Cia402State.FAULT:
        rising_reset = controlword & FAULT_RESET_BIT and not previous_controlword & FAULT_RESET_BIT
        return Cia402State.SWITCH_ON_DISABLED if rising_reset else state
    if controlword & FAULT_RESET_BIT:
        return state  # a fault reset outside Fault does nothing
    return _TRANSITIONS.get((state, decode_command(controlword)), state)


def statusword(state: Cia402State, mode_bits: int = 0) -> int:
    """Return the statusword of ``state`` with bit 9 (remote) and extra mode-specific bits."""
    return _STATUSWORD[state] | REMOTE_BIT | mode_bits


def torque_on(state: Cia402State) -> bool:
    """True when the drive controls the motor (Operation enabled)."""
    return state is Cia402State.OPERATION_ENABLED
