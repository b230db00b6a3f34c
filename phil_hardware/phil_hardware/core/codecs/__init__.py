"""Pure wire codecs of the hardware layer: no I/O, no threads, no bus library objects.

Modules: :mod:`.tmotor` (TMotor AK servo mode), :mod:`.epos4` (Maxon EPOS4 over CANopen; the
generic NMT/SYNC/SDO part is in :mod:`.cia301`), :mod:`.dynamixel` (Protocol 2.0),
:mod:`.conversions` (rounding, saturation, joint <-> motor angles). CAN frames are
:class:`CanFrame` tuples; every decoding or encoding failure raises :class:`CodecError`.
"""

from . import cia301, conversions, dynamixel, epos4, tmotor
from .frame import CanFrame, CodecError

__all__ = ['CanFrame', 'CodecError', 'cia301', 'conversions', 'dynamixel', 'epos4', 'tmotor']
