"""A drive's cyclic codec gives exactly what the general EPOS4 functions give: the same bytes,
the same numbers, the same errors, for any number and any frame."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.codecs import CanFrame, CodecError, epos4
from phil_hardware.core.codecs.epos4_cyclic import DriveCodec

GEAR_RATIOS = st.sampled_from([1.0, epos4.DEFAULT_GEAR_RATIO, 51.0, 113.0])
NODES = st.integers(1, 127)
# Everything: ordinary angles, the int32 edges after scaling, huge, infinite and NaN.
POSITIONS = st.one_of(
    st.floats(-50.0, 50.0),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, -0.5, 1e12, -1e12, math.inf, -math.inf, math.nan]),
)


def outcome(call, *args):
    """The result of ``call`` or the error it raised, comparable."""
    try:
        return 'ok', call(*args)
    except CodecError as error:
        return 'error', str(error)


@given(NODES, GEAR_RATIOS, POSITIONS)
def test_target_frames_equal_the_general_encoder(node_id, gear_ratio, position_rad):
    codec = DriveCodec(node_id, gear_ratio)
    assert outcome(codec.target_position_frame, position_rad) == outcome(
        epos4.encode_target_position, node_id, position_rad, gear_ratio
    )


def test_values_at_the_int32_edges_saturate_like_the_general_encoder():
    codec = DriveCodec(3, 1.0)
    per_count = 2.0 * math.pi / epos4.ENCODER_COUNTS_PER_MOTOR_REV
    for counts in (2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2.5, -2.5):
        position = counts * per_count
        assert codec.target_position_frame(position) == epos4.encode_target_position(
            3, position, 1.0
        )


@given(
    NODES,
    GEAR_RATIOS,
    st.integers(0x100, 0x200),
    st.binary(min_size=0, max_size=8),
    st.booleans(),
)
def test_feedback_equals_the_general_decoder(node_id, gear_ratio, can_id, data, extended):
    codec = DriveCodec(node_id, gear_ratio, rated_torque_mnm=epos4.RATED_TORQUE_MNM)
    frame = CanFrame(can_id, data, extended)

    def general(frame):
        decoded = epos4.decode_feedback(frame, gear_ratio, epos4.RATED_TORQUE_MNM)
        return decoded.statusword, decoded.position_rad, decoded.torque_mnm

    assert outcome(codec.feedback, frame) == outcome(general, frame)


@given(NODES, GEAR_RATIOS, st.binary(min_size=8, max_size=8))
def test_the_drives_own_tpdos_decode_to_the_general_decoders_numbers(node_id, gear_ratio, data):
    codec = DriveCodec(node_id, gear_ratio)
    frame = CanFrame(epos4.TPDO1_BASE + node_id, data)
    decoded = epos4.decode_feedback(frame, gear_ratio)
    assert codec.feedback(frame) == (decoded.statusword, decoded.position_rad, decoded.torque_mnm)


@pytest.mark.parametrize('node_id', [0, 128, -1])
def test_a_node_id_outside_1_to_127_is_refused(node_id):
    with pytest.raises(CodecError, match='1..127'):
        DriveCodec(node_id)
