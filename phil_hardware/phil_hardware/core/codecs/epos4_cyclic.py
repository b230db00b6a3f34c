"""One EPOS4 drive's cyclic frames with its ids and scales computed once.

The bus loop encodes a target position and decodes a TPDO of every drive on every tick. The
general functions (:func:`.epos4.encode_target_position`, :func:`.epos4.decode_feedback`) check
the node id, the length and finiteness through several calls each; here a frame and a number
inside the ordinary range take one call, and everything else goes through those same functions,
so the results, the saturation and the errors are theirs, bit for bit.
"""

from __future__ import annotations

import math

from .conversions import INT32_RANGE, saturating_int
from .epos4 import (
    _TPDO,
    DEFAULT_GEAR_RATIO,
    ENCODER_COUNTS_PER_MOTOR_REV,
    RATED_TORQUE_MNM,
    RPDO_TARGET_POSITION_BASE,
    TPDO1_BASE,
    check_node,
    counts_per_output_rev,
    decode_feedback,
)
from .frame import CanFrame

_INT32_MIN, _INT32_MAX = INT32_RANGE


class DriveCodec:
    """The target-position RPDO and the TPDO of drive ``node_id``."""

    __slots__ = (
        '_counts_per_output_rev',
        '_counts_per_rev',
        '_target_id',
        '_tpdo_id',
        'gear_ratio',
        'node_id',
        'rated_torque_mnm',
    )

    def __init__(
        self,
        node_id: int,
        gear_ratio: float = DEFAULT_GEAR_RATIO,
        rated_torque_mnm: float = RATED_TORQUE_MNM,
    ) -> None:
        """Check the node id (1..127) once.

        Raises:
            CodecError: ``node_id`` is not a CANopen node id.
        """
        check_node(node_id)
        self.node_id = node_id
        self.gear_ratio = gear_ratio
        self.rated_torque_mnm = rated_torque_mnm
        self._tpdo_id = TPDO1_BASE + node_id
        self._target_id = RPDO_TARGET_POSITION_BASE + node_id
        self._counts_per_rev = ENCODER_COUNTS_PER_MOTOR_REV * gear_ratio
        self._counts_per_output_rev = counts_per_output_rev(gear_ratio)

    def target_position_frame(self, position_rad: float) -> CanFrame:
        """:func:`.epos4.encode_target_position` for this drive.

        Raises:
            CodecError: ``position_rad`` is NaN or infinite.
        """
        scaled = position_rad * self._counts_per_rev / (2.0 * math.pi)
        if _INT32_MIN < scaled < _INT32_MAX:  # finite and inside int32: round half away
            magnitude = math.floor(abs(scaled) + 0.5)
            counts = magnitude if scaled >= 0 else -magnitude
        else:  # saturates, or raises naming the non-finite value
            counts = saturating_int(scaled, INT32_RANGE, 'position_rad')
        return CanFrame(self._target_id, counts.to_bytes(4, 'little', signed=True))

    def feedback(self, frame: CanFrame) -> tuple[int, float, float]:
        """(statusword, position [rad, output shaft], torque [mNm]) of a TPDO, as
        :func:`.epos4.decode_feedback` gives them.

        Raises:
            CodecError: The frame is not a valid TPDO.
        """
        data = frame.data
        if frame.arbitration_id != self._tpdo_id or frame.is_extended_id or len(data) < 8:
            decoded = decode_feedback(frame, self.gear_ratio, self.rated_torque_mnm)
            return decoded.statusword, decoded.position_rad, decoded.torque_mnm
        statusword, counts, permille = _TPDO.unpack_from(data)
        return (
            statusword,
            counts * 2.0 * math.pi / self._counts_per_output_rev,
            permille * self.rated_torque_mnm / 1000.0,
        )


__all__ = ['DriveCodec']
