"""A latched fault of the hardware layer: its code and the record the bus loop keeps, sends to
the node in the snapshot and the node publishes. The rules that latch one are in
:mod:`.safety`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class FaultCode(IntEnum):
    """Fault codes; the numbers mirror phil_msgs/Fault CODE_*."""

    UNKNOWN = 0
    ESTOP = 1
    POSITION_OUT_OF_RANGE = 2
    OVER_CURRENT = 3
    FEEDBACK_TIMEOUT = 4
    INVALID_TARGET = 5
    MOTOR_ERROR = 6
    MOTOR_MISSING = 7
    BUS_ERROR = 8
    PROCESS_DIED = 9


@dataclass(frozen=True)
class Fault:
    """One latched fault.

    Attributes:
        code: What kind of fault.
        joint: Joint name, '' when not tied to one joint.
        reason: What happened and what to check, for a human.
        time_s: Robot monotonic time it latched [s].
    """

    code: FaultCode
    joint: str
    reason: str
    time_s: float

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-able form."""
        return {
            'code': int(self.code),
            'joint': self.joint,
            'reason': self.reason,
            'time_s': self.time_s,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Fault:
        """Inverse of :meth:`to_dict`."""
        return cls(
            FaultCode(int(data['code'])),
            str(data['joint']),
            str(data['reason']),
            float(data['time_s']),
        )
