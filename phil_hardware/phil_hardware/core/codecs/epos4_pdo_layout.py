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

from .cia301_pdo import MappedObject, PdoDirection, PdoLayout
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


def _objects(*items: tuple[int, int]) -> tuple[MappedObject, ...]:
    return tuple(MappedObject(index, 0, bits) for index, bits in items)


PHIL_PDO_LAYOUT: tuple[PdoLayout, ...] = (
    PdoLayout(
        RECEIVE,
        1,
        RPDO_CONTROLWORD_BASE,
        _objects((ObjectIndex.CONTROLWORD, 16)),
        transmission_type=TRANSMISSION_ON_RECEPTION,
    ),
    PdoLayout(RECEIVE, 2, RPDO_TARGET_POSITION_BASE, _objects((ObjectIndex.TARGET_POSITION, 32))),
    PdoLayout(RECEIVE, 3, RPDO_TARGET_VELOCITY_BASE, _objects((ObjectIndex.TARGET_VELOCITY, 32))),
    PdoLayout(RECEIVE, 4, RPDO_TARGET_TORQUE_BASE, _objects((ObjectIndex.TARGET_TORQUE, 16))),
    PdoLayout(
        TRANSMIT,
        1,
        TPDO1_BASE,
        _objects(
            (ObjectIndex.STATUSWORD, 16),
            (ObjectIndex.POSITION_ACTUAL_VALUE, 32),
            (ObjectIndex.TORQUE_ACTUAL_VALUE, 16),
        ),
    ),
    # Off: upstream configured position + torque on 0x280+n but never read it.
    PdoLayout(TRANSMIT, 2, TPDO2_BASE, ()),
    PdoLayout(TRANSMIT, 3, TPDO3_BASE, ()),
    PdoLayout(TRANSMIT, 4, TPDO4_BASE, ()),
)

# A layout a drive can hold that is not Phil's, in the style of the CiA 402 predefined
# mappings (every RPDO leads with the controlword, every TPDO with the statusword): what a
# drive reset to its defaults or set up for another machine could hold. The simulated EPOS4
# powers on with it on request (a replaced drive); its exact factory values are in the
# EPOS4 Firmware Specification, not reproduced here.
OTHER_PDO_LAYOUT: tuple[PdoLayout, ...] = (
    PdoLayout(
        RECEIVE,
        1,
        RPDO_CONTROLWORD_BASE,
        _objects((ObjectIndex.CONTROLWORD, 16), (ObjectIndex.MODES_OF_OPERATION, 8)),
        transmission_type=TRANSMISSION_ON_RECEPTION,
    ),
    PdoLayout(
        RECEIVE,
        2,
        RPDO_TARGET_POSITION_BASE,
        _objects((ObjectIndex.CONTROLWORD, 16), (ObjectIndex.TARGET_POSITION, 32)),
        transmission_type=TRANSMISSION_ON_RECEPTION,
    ),
    PdoLayout(
        RECEIVE,
        3,
        RPDO_TARGET_VELOCITY_BASE,
        _objects((ObjectIndex.CONTROLWORD, 16), (ObjectIndex.TARGET_VELOCITY, 32)),
        transmission_type=TRANSMISSION_ON_RECEPTION,
    ),
    PdoLayout(
        RECEIVE,
        4,
        RPDO_TARGET_TORQUE_BASE,
        _objects((ObjectIndex.CONTROLWORD, 16), (ObjectIndex.TARGET_TORQUE, 16)),
        transmission_type=TRANSMISSION_ON_RECEPTION,
    ),
    PdoLayout(
        TRANSMIT,
        1,
        TPDO1_BASE,
        _objects((ObjectIndex.STATUSWORD, 16), (ObjectIndex.MODES_OF_OPERATION_DISPLAY, 8)),
    ),
    PdoLayout(
        TRANSMIT,
        2,
        TPDO2_BASE,
        _objects((ObjectIndex.STATUSWORD, 16), (ObjectIndex.POSITION_ACTUAL_VALUE, 32)),
    ),
    PdoLayout(
        TRANSMIT,
        3,
        TPDO3_BASE,
        _objects((ObjectIndex.STATUSWORD, 16), (ObjectIndex.VELOCITY_ACTUAL_VALUE, 32)),
    ),
    PdoLayout(
        TRANSMIT,
        4,
        TPDO4_BASE,
        _objects((ObjectIndex.STATUSWORD, 16), (ObjectIndex.TORQUE_ACTUAL_VALUE, 16)),
    ),
)
