"""Golden-frame and property tests of the TMotor AK servo-mode codec (upstream's frames)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.codecs import CanFrame, CodecError, tmotor
from phil_hardware.core.codecs.tmotor import OriginMode, TMotorPacket

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


def test_set_pos_to_waist_uses_facts_id_and_big_endian_deg_times_10000():
    frame = tmotor.encode_set_position(0, math.radians(10.0))
    assert frame == CanFrame(0x0000_0400, bytes.fromhex('000186a0'), True)


def test_set_rpm_to_node_4_uses_facts_id():
    assert tmotor.encode_set_rpm(4, 1000) == CanFrame(0x304, bytes.fromhex('000003e8'), True)
    assert tmotor.encode_set_rpm(4, -1).data == bytes.fromhex('ffffffff')


def test_set_origin_is_one_byte_temporary_by_default():
    assert tmotor.encode_set_origin(2) == CanFrame(0x502, b'\x00', True)
    assert tmotor.encode_set_origin(2, OriginMode.PERMANENT).data == b'\x01'


def test_set_pos_spd_packs_position_speed_and_accel():
    frame = tmotor.encode_set_position_speed(1, math.radians(90.0), 5000, 10000)
    assert frame == CanFrame(0x601, bytes.fromhex('000dbba0 01f4 03e8'), True)


def test_current_duty_and_brake_encoders():
    assert tmotor.encode_current_brake(3, 2.5) == CanFrame(0x203, bytes.fromhex('000009c4'), True)
    assert tmotor.encode_set_current(5, -1.5) == CanFrame(0x105, bytes.fromhex('fffffa24'), True)
    assert tmotor.encode_set_duty(6, 0.5) == CanFrame(0x006, bytes.fromhex('0000c350'), True)


def test_encoders_saturate_instead_of_overflowing():
    assert tmotor.encode_set_rpm(1, 3e9).data == bytes.fromhex('7fffffff')
    assert tmotor.encode_set_rpm(1, -3e9).data == bytes.fromhex('80000000')
    assert tmotor.encode_set_position(1, 1e6).data == bytes.fromhex('7fffffff')
    spd = tmotor.encode_set_position_speed(1, 0.0, 1e7, -1e7)
    assert spd.data[4:] == bytes.fromhex('7fff 8000')


def test_encoders_reject_nan_and_bad_node():
    with pytest.raises(CodecError, match='position_rad must be finite'):
        tmotor.encode_set_position(0, math.nan)
    with pytest.raises(CodecError, match='erpm must be finite'):
        tmotor.encode_set_rpm(0, math.inf)
    with pytest.raises(CodecError, match='node id must be 0..255, got 256'):
        tmotor.encode_set_rpm(256, 0)


def test_feedback_decodes_facts_layout_from_standard_id():
    # 90.0 deg, 2000 ERPM, -1.5 A, 32 degC, no error (the SIL sends 11-bit id = node).
    frame = CanFrame(0x004, bytes.fromhex('0384 00c8 ff6a 20 00'))
    feedback = tmotor.decode_feedback(frame)
    assert feedback.node_id == 4
    assert feedback.position_rad == pytest.approx(math.radians(90.0))
    assert feedback.speed_erpm == 2000
    assert feedback.current_a == pytest.approx(-1.5)
    assert feedback.temperature_c == 32
    assert feedback.error_code == 0
    assert feedback.error_text == 'no fault'


def test_feedback_accepts_extended_id_and_signed_fields():
    frame = CanFrame(0x0000_2906, bytes.fromhex('fc7c ff38 0064 f6 02'), True)
    feedback = tmotor.decode_feedback(frame)
    assert feedback.node_id == 6
    assert feedback.position_rad == pytest.approx(math.radians(-90.0))
    assert feedback.speed_erpm == -2000
    assert feedback.current_a == pytest.approx(1.0)
    assert feedback.temperature_c == -10
    assert feedback.error_text == 'over-current'


def test_error_code_table_matches_facts():
    assert [tmotor.ERROR_CODE_TEXT[code] for code in range(7)] == [
        'no fault',
        'motor over-temperature',
        'over-current',
        'over-voltage',
        'under-voltage',
        'encoder fault',
        'phase current unbalance',
    ]
    assert tmotor.TMotorFeedback(1, 0.0, 0, 0.0, 0, 9).error_text == 'unknown error code 9'


def test_feedback_rejects_short_frame_naming_the_id():
    with pytest.raises(CodecError, match=r'TMotor feedback frame 0x004 is too short: .* got 7'):
        tmotor.decode_feedback(CanFrame(0x004, bytes(7)))
    with pytest.raises(CodecError, match='0x00002903'):
        tmotor.decode_feedback(CanFrame(0x2903, b'', True))


def test_encode_feedback_matches_sil_frame():
    # SIL: 11-bit id = node, position deg x 10, speed 0, current 0, temperature 0x20, error 0.
    frame = tmotor.encode_feedback(3, math.radians(-12.3), temperature_c=32)
    assert frame == CanFrame(0x003, bytes.fromhex('ff85 0000 0000 20 00'))


def test_decode_servo_command_recovers_every_packet_kind():
    cases = [
        (tmotor.encode_set_rpm(4, -1234), 'erpm', -1234),
        (tmotor.encode_set_position(0, math.radians(12.5)), 'position_rad', math.radians(12.5)),
        (tmotor.encode_set_current(1, 2.0), 'current_a', 2.0),
        (tmotor.encode_current_brake(1, -3.0), 'current_a', -3.0),
        (tmotor.encode_set_duty(1, -0.25), 'duty', -0.25),
        (tmotor.encode_set_origin(5, OriginMode.PERMANENT), 'origin_mode', OriginMode.PERMANENT),
    ]
    for frame, field, expected in cases:
        command = tmotor.decode_servo_command(frame)
        assert getattr(command, field) == pytest.approx(expected), frame
    spd = tmotor.decode_servo_command(tmotor.encode_set_position_speed(2, 1.0, 3000, -4000))
    assert spd.packet is TMotorPacket.SET_POS_SPD
    assert (spd.speed_erpm, spd.accel_erpm_s) == (3000, -4000)
    assert spd.position_rad == pytest.approx(1.0, abs=1e-6)


def test_decode_servo_command_errors():
    with pytest.raises(CodecError, match='not a servo-mode command'):
        tmotor.decode_servo_command(CanFrame(0x304, bytes(4)))
    with pytest.raises(CodecError, match='unknown servo packet id 9'):
        tmotor.decode_servo_command(CanFrame(0x904, bytes(4), True))
    with pytest.raises(CodecError, match='SET_RPM frame 0x00000304 is too short'):
        tmotor.decode_servo_command(CanFrame(0x304, bytes(3), True))
    with pytest.raises(CodecError, match='unknown origin mode 7'):
        tmotor.decode_servo_command(CanFrame(0x504, b'\x07', True))


def test_velocity_law_feed_forward_is_about_2005_erpm_per_rad_s_for_gear_10():
    assert tmotor.velocity_law_erpm(0.0, 1.0, 0.0, 1, 10, 21, 1000) == 2005
    assert tmotor.velocity_law_erpm(0.0, 1.0, 0.0, -1, 10, 21, 1000) == -2005


def test_velocity_law_adds_gain_times_position_error():
    # 0.5 rad/s * 21 * 9 * 60 / (2 pi) = 902.41, plus 1000 * 0.01 = 10.
    assert tmotor.velocity_law_erpm(0.11, 0.5, 0.1, 1, 9, 21, 1000) == 912
    assert tmotor.velocity_law_erpm(0.0, 0.0, 0.5, 1, 10, 21, 1000) == -500


def test_velocity_law_rounds_ties_away_from_zero_and_clamps():
    assert tmotor.velocity_law_erpm(2.5, 0.0, 0.0, 1, 10, 21, 1) == 3
    assert tmotor.velocity_law_erpm(-2.5, 0.0, 0.0, 1, 10, 21, 1) == -3
    assert tmotor.velocity_law_erpm(100.0, 0.0, 0.0, 1, 10, 21, 4000) == 100_000
    assert tmotor.velocity_law_erpm(0.0, -500.0, 0.0, 1, 10, 21, 4000) == -100_000


def test_velocity_law_rejects_nan():
    with pytest.raises(ValueError, match='finite'):
        tmotor.velocity_law_erpm(math.nan, 0.0, 0.0, 1, 10, 21, 1000)


@given(st.integers(INT32_MIN, INT32_MAX), st.integers(0, 255))
def test_set_rpm_round_trips_every_int32(erpm, node_id):
    frame = tmotor.encode_set_rpm(node_id, erpm)
    assert frame.arbitration_id == node_id | 0x300
    command = tmotor.decode_servo_command(frame)
    assert (command.node_id, command.erpm) == (node_id, erpm)


@given(
    st.floats(min_value=2**31, max_value=1e300) | st.floats(min_value=-1e300, max_value=-(2**31))
)
def test_set_rpm_out_of_range_saturates_with_same_sign(erpm):
    decoded = tmotor.decode_servo_command(tmotor.encode_set_rpm(1, erpm)).erpm
    assert decoded == (INT32_MAX if erpm > 0 else INT32_MIN)


@given(st.floats(-3700.0, 3700.0))
def test_set_position_round_trips_to_encoder_resolution(position_rad):
    decoded = tmotor.decode_servo_command(tmotor.encode_set_position(0, position_rad))
    assert math.degrees(abs(decoded.position_rad - position_rad)) <= 0.5e-4 + 1e-9


@given(
    st.floats(-3276.0, 3276.0),
    st.integers(-32768, 32767).map(lambda counts: counts * 10),
    st.integers(-32768, 32767).map(lambda counts: counts / 100),
    st.integers(-128, 127),
    st.integers(0, 255),
)
def test_feedback_round_trip(position_deg, speed_erpm, current_a, temperature_c, error_code):
    frame = tmotor.encode_feedback(
        7, math.radians(position_deg), speed_erpm, current_a, temperature_c, error_code
    )
    feedback = tmotor.decode_feedback(frame)
    assert abs(math.degrees(feedback.position_rad) - position_deg) <= 0.05 + 1e-9
    assert feedback.speed_erpm == speed_erpm
    assert feedback.current_a == pytest.approx(current_a, abs=1e-9)
    assert (feedback.temperature_c, feedback.error_code) == (temperature_c, error_code)


@given(
    st.floats(-10, 10),
    st.floats(-50, 50),
    st.floats(-10, 10),
    st.sampled_from([1, -1]),
    st.sampled_from([9, 10]),
    st.floats(0, 5000),
)
def test_velocity_law_matches_formula_within_rounding_and_limit(
    target, velocity, measured, direction, gear, gain
):
    erpm = tmotor.velocity_law_erpm(target, velocity, measured, direction, gear, 21, gain)
    raw = direction * velocity * 21 * gear * 60 / (2 * math.pi) + gain * (target - measured)
    assert abs(erpm) <= tmotor.ERPM_LIMIT
    assert abs(erpm - max(-100_000, min(100_000, raw))) <= 0.5 + 1e-6
