"""Tests of the codec frame type, rounding/saturation helpers and joint <-> motor conversion."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.codecs import CanFrame, CodecError
from phil_hardware.core.codecs.conversions import (
    INT16_RANGE,
    INT32_RANGE,
    joint_to_motor_rad,
    motor_to_joint_rad,
    round_half_away,
    saturating_int,
)
from phil_hardware.core.codecs.frame import make_frame, require_length

finite_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


def test_codec_error_is_a_value_error():
    assert issubclass(CodecError, ValueError)


def test_can_frame_defaults_to_standard_id_and_reports_dlc():
    frame = CanFrame(0x607, b'\x01\x02')
    assert frame.is_extended_id is False
    assert frame.dlc == 2
    assert frame.describe_id() == '0x607'
    assert CanFrame(0x304, b'', True).describe_id() == '0x00000304'


def test_make_frame_rejects_ids_that_do_not_fit():
    with pytest.raises(CodecError, match='does not fit a 11-bit'):
        make_frame(0x800, b'')
    with pytest.raises(CodecError, match='does not fit a 29-bit'):
        make_frame(0x2000_0000, b'', is_extended_id=True)
    assert make_frame(0x1FFF_FFFF, b'', is_extended_id=True).arbitration_id == 0x1FFF_FFFF


def test_make_frame_rejects_payloads_longer_than_eight_bytes():
    with pytest.raises(CodecError, match=r'frame 0x123: payload of 9 bytes'):
        make_frame(0x123, bytes(9))


def test_make_frame_converts_bytearray_to_immutable_bytes():
    frame = make_frame(0x10, bytearray(b'\x01'))
    assert type(frame.data) is bytes


def test_require_length_names_frame_and_lengths():
    frame = CanFrame(0x187, bytes(7))
    with pytest.raises(CodecError, match=r'TPDO frame 0x187 is too short: expected 8 .* got 7'):
        require_length(frame, 8, 'TPDO')
    with pytest.raises(CodecError, match='too long: expected 6'):
        require_length(frame, 6, 'thing', exact=True)
    require_length(frame, 6, 'thing')


@pytest.mark.parametrize(
    ('value', 'expected'),
    [(2.5, 3), (-2.5, -3), (0.5, 1), (-0.5, -1), (3982.22, 3982), (1.4999, 1), (-0.4, 0)],
)
def test_round_half_away_rounds_ties_away_from_zero(value, expected):
    assert round_half_away(value) == expected


@given(finite_floats.filter(lambda v: abs(v) < 1e15))
def test_round_half_away_is_odd_and_within_half(value):
    rounded = round_half_away(value)
    assert abs(rounded - value) <= 0.5
    assert round_half_away(-value) == -rounded


def test_saturating_int_clamps_instead_of_wrapping():
    assert saturating_int(40000.0, INT16_RANGE, 'x') == 32767
    assert saturating_int(-40000.0, INT16_RANGE, 'x') == -32768
    assert saturating_int(1e300, INT32_RANGE, 'x') == 2**31 - 1
    assert saturating_int(-7.5, INT16_RANGE, 'x') == -8


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf])
def test_saturating_int_rejects_non_finite(bad):
    with pytest.raises(CodecError, match='speed_erpm must be finite'):
        saturating_int(bad, INT32_RANGE, 'speed_erpm')


def test_joint_to_motor_follows_facts_examples():
    # right_shoulder_1: dir -1, initial 90 deg; joint 90 -> motor 0, joint 0 -> motor +90 deg.
    initial = math.radians(90.0)
    assert joint_to_motor_rad(initial, initial, -1) == 0.0
    assert joint_to_motor_rad(0.0, initial, -1) == pytest.approx(math.radians(90.0))
    # head_pitch: dir +1, initial -90 deg; joint 0 -> motor +90 deg.
    assert joint_to_motor_rad(0.0, math.radians(-90.0), 1) == pytest.approx(math.radians(90.0))
    assert motor_to_joint_rad(math.radians(90.0), initial, -1) == pytest.approx(0.0)


def test_joint_motor_conversion_rejects_bad_direction_sign():
    with pytest.raises(ValueError, match='direction_sign must be'):
        joint_to_motor_rad(0.0, 0.0, 2)
    with pytest.raises(ValueError, match='direction_sign must be'):
        motor_to_joint_rad(0.0, 0.0, 0)


@given(
    st.floats(-10.0, 10.0),
    st.floats(-3.2, 3.2),
    st.sampled_from([1, -1]),
)
def test_joint_motor_round_trip(joint_rad, initial_rad, direction_sign):
    motor = joint_to_motor_rad(joint_rad, initial_rad, direction_sign)
    assert motor_to_joint_rad(motor, initial_rad, direction_sign) == pytest.approx(
        joint_rad, abs=1e-12
    )
