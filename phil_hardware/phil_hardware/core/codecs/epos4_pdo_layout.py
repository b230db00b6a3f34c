"""The PDO layout Phil's EPOS4 drives are given at configure, and what a drive would hold
without it.

:data:`PHIL_PDO_LAYOUT` is the one table: upstream's objects (FACTS 4): the controlword on
0x200+n (applied on reception), the target position on 0x300+n, the target velocity on
0x400+n (unused) and the target torque on 0x500+n (these three applied at the next SYNC);
statusword, position actual and torque actual on 0x180+n after every SYNC. Upstream relied on
the drives holding it (set with EPOS Studio); the EPOS4 family writes it and reads it back.
The frames of :mod:`.epos4` are this layout on the wire.
"""

from __future__ import annotations

from .cia301_pdo import TRANSMISSION_SYNC_EVERY, MappedObject, PdoDirection, PdoLayout
from .epos4 import (
    RPDO_CONTROLWORD_BASE,
    RPDO_TARGET_POSITION_BASE,
    RPDO_TARGET_TORQUE_BASE,
    RPDO_TARGET_VELOCITY_BASE,
    TPDO1_BASE,
    TPDO2_BASE,
    ObjectIndex,
)

TRANSMISSION_ON_RECEPTION = 255  # asynchronous: an RPDO applied as it arrives
TPDO3_BASE = 0x380
TPDO4_BASE = 0x480

RECEIVE, TRANSMIT = PdoDirection.RECEIVE, PdoDirection.TRANSMIT


def _pdo(
    direction: PdoDirection, number: int, cob_base: int, *objects: tuple[int, int], at_once=False
) -> PdoLayout:
    """A PDO of ``objects`` (index, bits); ``at_once``: an RPDO applied as it arrives."""
    return PdoLayout(
        direction,
        number,
        cob_base,
        tuple(MappedObject(index, 0, bits) for index, bits in objects),
        TRANSMISSION_ON_RECEPTION if at_once else TRANSMISSION_SYNC_EVERY,
    )


OBJ = ObjectIndex
CONTROLWORD, STATUSWORD = (OBJ.CONTROLWORD, 16), (OBJ.STATUSWORD, 16)

PHIL_PDO_LAYOUT: tuple[PdoLayout, ...] = (
    _pdo(RECEIVE, 1, RPDO_CONTROLWORD_BASE, CONTROLWORD, at_once=True),
    _pdo(RECEIVE, 2, RPDO_TARGET_POSITION_BASE, (OBJ.TARGET_POSITION, 32)),
    _pdo(RECEIVE, 3, RPDO_TARGET_VELOCITY_BASE, (OBJ.TARGET_VELOCITY, 32)),
    _pdo(RECEIVE, 4, RPDO_TARGET_TORQUE_BASE, (OBJ.TARGET_TORQUE, 16)),
    _pdo(
        TRANSMIT,
        1,
        TPDO1_BASE,
        STATUSWORD,
        (OBJ.POSITION_ACTUAL_VALUE, 32),
        (OBJ.TORQUE_ACTUAL_VALUE, 16),
    ),
    # Off: upstream configured position + torque on 0x280+n but never read it.
    _pdo(TRANSMIT, 2, TPDO2_BASE),
    _pdo(TRANSMIT, 3, TPDO3_BASE),
    _pdo(TRANSMIT, 4, TPDO4_BASE),
)

# A layout a drive can hold that is not Phil's, in the style of the CiA 402 predefined
# mappings (every RPDO leads with the controlword, every TPDO with the statusword): what a
# drive reset to its defaults or set up for another machine could hold. The simulated EPOS4
# powers on with it on request (a replaced drive); its exact factory values are in the
# EPOS4 Firmware Specification, not reproduced here.
OTHER_PDO_LAYOUT: tuple[PdoLayout, ...] = (
    _pdo(
        RECEIVE, 1, RPDO_CONTROLWORD_BASE, CONTROLWORD, (OBJ.MODES_OF_OPERATION, 8), at_once=True
    ),
    _pdo(
        RECEIVE, 2, RPDO_TARGET_POSITION_BASE, CONTROLWORD, (OBJ.TARGET_POSITION, 32), at_once=True
    ),
    _pdo(
        RECEIVE, 3, RPDO_TARGET_VELOCITY_BASE, CONTROLWORD, (OBJ.TARGET_VELOCITY, 32), at_once=True
    ),
    _pdo(RECEIVE, 4, RPDO_TARGET_TORQUE_BASE, CONTROLWORD, (OBJ.TARGET_TORQUE, 16), at_once=True),
    _pdo(TRANSMIT, 1, TPDO1_BASE, STATUSWORD, (OBJ.MODES_OF_OPERATION_DISPLAY, 8)),
    _pdo(TRANSMIT, 2, TPDO2_BASE, STATUSWORD, (OBJ.POSITION_ACTUAL_VALUE, 32)),
    _pdo(TRANSMIT, 3, TPDO3_BASE, STATUSWORD, (OBJ.VELOCITY_ACTUAL_VALUE, 32)),
    _pdo(TRANSMIT, 4, TPDO4_BASE, STATUSWORD, (OBJ.TORQUE_ACTUAL_VALUE, 16)),
)
