"""Golden-frame and property tests of the EPOS4 / CANopen codec (upstream's frames)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.codecs import CanFrame, CodecError, epos4
from phil_hardware.core.codecs.epos4 import (
    Cia402State,
    Controlword,
    ModeOfOperation,
    NmtCommand,
    ObjectIndex,
    SdoService,
)

WRIST = 7


def test_nmt_start_is_standard_two_byte_frame_or_upstream_dlc8():
    assert epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, WRIST) == CanFrame(0x000, b'\x01\x07')
    padded = epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, WRIST, pad_to_dlc8=True)
    assert padded == CanFrame(0x000, bytes.fromhex('0107000000000000'))
    assert epos4.decode_nmt(padded) == (NmtCommand.START_REMOTE_NODE, WRIST)


def test_nmt_command_values():
    assert [int(command) for command in NmtCommand] == [0x01, 0x02, 0x80, 0x81, 0x82]
    assert epos4.encode_nmt(NmtCommand.RESET_COMMUNICATION, 0).data == b'\x82\x00'


def test_nmt_errors():
    with pytest.raises(CodecError, match='NMT node id must be 0..127, got 128'):
        epos4.encode_nmt(NmtCommand.STOP_REMOTE_NODE, 128)
    with pytest.raises(CodecError, match='unknown command specifier 0x05'):
        epos4.decode_nmt(CanFrame(0x000, b'\x05\x07'))
    with pytest.raises(CodecError, match='NMT frame 0x000 is too short'):
        epos4.decode_nmt(CanFrame(0x000, b'\x01'))


def test_sync_frame_is_id_0x080_without_data():
    assert epos4.encode_sync() == CanFrame(0x080, b'')


# Upstream's SDO downloads (start-up and mode switches), all with "size not indicated" 0x22.
UPSTREAM_SDO_DOWNLOADS = [
    (
        ObjectIndex.MODES_OF_OPERATION,
        ModeOfOperation.CYCLIC_SYNC_POSITION,
        1,
        '22 60 60 00 08 00 00 00',
    ),
    (
        ObjectIndex.MODES_OF_OPERATION,
        ModeOfOperation.CYCLIC_SYNC_VELOCITY,
        1,
        '22 60 60 00 09 00 00 00',
    ),
    (
        ObjectIndex.MODES_OF_OPERATION,
        ModeOfOperation.CYCLIC_SYNC_TORQUE,
        1,
        '22 60 60 00 0a 00 00 00',
    ),
    (ObjectIndex.MODES_OF_OPERATION, ModeOfOperation.HOMING, 1, '22 60 60 00 06 00 00 00'),
    (ObjectIndex.POSITION_OFFSET, 0, 4, '22 b0 60 00 00 00 00 00'),
    (ObjectIndex.VELOCITY_OFFSET, 0, 4, '22 b1 60 00 00 00 00 00'),
    (ObjectIndex.TORQUE_OFFSET, 0, 2, '22 b2 60 00 00 00 00 00'),
    (
        ObjectIndex.HOMING_METHOD,
        epos4.HOMING_METHOD_CURRENT_POSITION,
        1,
        '22 98 60 00 25 00 00 00',
    ),
    (ObjectIndex.HOME_OFFSET_MOVE_DISTANCE, 3982, 2, '22 b1 30 00 8e 0f 00 00'),
    (ObjectIndex.HOME_POSITION, -3982, 4, '22 b0 30 00 72 f0 ff ff'),
]


@pytest.mark.parametrize(('index', 'value', 'size', 'expected'), UPSTREAM_SDO_DOWNLOADS)
def test_upstream_sdo_download_layouts(index, value, size, expected):
    frame = epos4.encode_sdo_download(WRIST, index, 0, value, size, size_indicated=False)
    assert frame == CanFrame(0x607, bytes.fromhex(expected))


def test_size_indicated_sdo_download_command_bytes():
    def command(size):
        return epos4.encode_sdo_download(1, 0x2000, 0, 1, size).data[0]

    assert [command(size) for size in (1, 2, 3, 4)] == [0x2F, 0x2B, 0x27, 0x23]
    csp = epos4.encode_sdo_download(WRIST, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1)
    assert csp == CanFrame(0x607, bytes.fromhex('2f 60 60 00 08 00 00 00'))
    # Upstream's homing current threshold and SDO target torque (0x23 / 0x2B forms).
    threshold = epos4.encode_sdo_download(WRIST, ObjectIndex.HOMING_CURRENT_THRESHOLD, 0, 500, 4)
    assert threshold.data == bytes.fromhex('23 b2 30 00 f4 01 00 00')
    torque = epos4.encode_sdo_download(WRIST, ObjectIndex.TARGET_TORQUE, 0, -100, 2)
    assert torque.data == bytes.fromhex('2b 71 60 00 9c ff 00 00')


def test_sdo_download_rejects_values_that_do_not_fit():
    with pytest.raises(CodecError, match='does not fit 1 B'):
        epos4.encode_sdo_download(1, 0x6060, 0, 256, 1)
    with pytest.raises(CodecError, match='does not fit 2 B'):
        epos4.encode_sdo_download(1, 0x6071, 0, -32769, 2)
    with pytest.raises(CodecError, match='size must be 1..4'):
        epos4.encode_sdo_download(1, 0x6060, 0, 0, 5)
    with pytest.raises(CodecError, match='node id must be 1..127, got 0'):
        epos4.encode_sdo_download(0, 0x6060, 0, 8, 1)


def test_sdo_upload_request_and_probe():
    request = epos4.encode_sdo_upload_request(WRIST, ObjectIndex.POSITION_ACTUAL_VALUE, 0)
    assert request == CanFrame(0x607, bytes.fromhex('40 64 60 00 00 00 00 00'))
    assert epos4.encode_sdo_probe(0x0A) == CanFrame(0x60A, bytes(8))


@pytest.mark.parametrize(
    ('payload', 'service', 'data'),
    [
        ('60 60 60 00 00 00 00 00', SdoService.DOWNLOAD, b''),
        ('4f 61 60 00 08 00 00 00', SdoService.UPLOAD, b'\x08'),
        ('4b 41 60 00 37 06 00 00', SdoService.UPLOAD, b'\x37\x06'),
        ('47 00 10 00 01 02 03 00', SdoService.UPLOAD, b'\x01\x02\x03'),
        ('43 64 60 00 8e 0f 00 00', SdoService.UPLOAD, b'\x8e\x0f\x00\x00'),
        ('42 64 60 00 72 f0 ff ff', SdoService.UPLOAD, b'\x72\xf0\xff\xff'),
    ],
)
def test_sdo_response_parsing(payload, service, data):
    response = epos4.decode_sdo_response(CanFrame(0x587, bytes.fromhex(payload)))
    assert (response.node_id, response.service, response.data) == (WRIST, service, data)
    assert response.abort_code is None and response.abort_text == ''


def test_sdo_upload_values_signed_and_unsigned():
    response = epos4.decode_sdo_response(CanFrame(0x587, bytes.fromhex('42 64 60 00 72 f0 ff ff')))
    assert (response.index, response.subindex) == (0x6064, 0)
    assert response.value(signed=True) == -3982
    assert response.value() == 0xFFFFF072


def test_sdo_abort_parsing_with_text():
    frame = CanFrame(0x587, bytes.fromhex('80 60 60 00 00 00 02 06'))
    response = epos4.decode_sdo_response(frame)
    assert response.service is SdoService.ABORT
    assert response.abort_code == 0x06020000
    assert response.abort_text == 'Object does not exist in the object dictionary'
    unknown = epos4.decode_sdo_response(epos4.encode_sdo_abort(1, 0x6060, 0, 0x12345678))
    assert unknown.abort_text == 'unknown abort code 0x12345678'


def test_sdo_response_errors_name_the_frame():
    with pytest.raises(CodecError, match=r'frame 0x587: segmented transfer \(command 0x41\)'):
        epos4.decode_sdo_response(CanFrame(0x587, bytes.fromhex('41 08 10 00 10 00 00 00')))
    with pytest.raises(CodecError, match='SDO response frame 0x587 is too short'):
        epos4.decode_sdo_response(CanFrame(0x587, b'\x60\x60\x60\x00'))
    with pytest.raises(CodecError, match=r'frame 0x607 is not a valid SDO response frame'):
        epos4.decode_sdo_response(CanFrame(0x607, bytes(8)))
    with pytest.raises(CodecError, match='unsupported command byte 0x20'):
        epos4.decode_sdo_response(CanFrame(0x587, bytes.fromhex('20 00 00 00 00 00 00 00')))


def test_sdo_request_decoding_for_simulators():
    upstream = epos4.encode_sdo_download(WRIST, 0x6060, 0, 8, 1, size_indicated=False)
    request = epos4.decode_sdo_request(upstream)
    assert (request.service, request.index, request.data) == (
        SdoService.DOWNLOAD,
        0x6060,
        bytes((8, 0, 0, 0)),
    )
    indicated = epos4.decode_sdo_request(epos4.encode_sdo_download(WRIST, 0x6071, 0, -5, 2))
    assert indicated.value(signed=True) == -5
    upload = epos4.decode_sdo_request(epos4.encode_sdo_upload_request(WRIST, 0x6041, 0))
    assert (upload.service, upload.data) == (SdoService.UPLOAD, b'')
    with pytest.raises(CodecError, match='unsupported command byte 0x00'):
        epos4.decode_sdo_request(epos4.encode_sdo_probe(WRIST))


def test_controlword_rpdo_is_dlc2_little_endian():
    assert epos4.encode_controlword(WRIST, Controlword.SHUTDOWN) == CanFrame(0x207, b'\x06\x00')
    assert epos4.encode_controlword(8, Controlword.ENABLE_OPERATION).data == b'\x0f\x00'
    assert [int(word) for word in Controlword] == [0x02, 0x06, 0x07, 0x0F, 0x1F, 0x80]
    with pytest.raises(CodecError, match='controlword must be'):
        epos4.encode_controlword(WRIST, 0x10000)


def test_target_position_10_deg_is_3982_counts():
    assert epos4.counts_per_output_rev(35) == 143360
    assert epos4.counts_per_output_rev(35) / 360 == pytest.approx(398.22, abs=0.005)
    frame = epos4.encode_target_position(WRIST, math.radians(10.0))
    assert frame == CanFrame(0x307, bytes.fromhex('8e0f0000'))
    negative = epos4.encode_target_position(WRIST, math.radians(-10.0))
    assert negative.data == bytes.fromhex('72f0ffff')


def test_target_position_rounds_to_nearest_not_truncates():
    # 10.0015 deg = 3982.82 counts: truncation would give 3982.
    assert epos4.position_rad_to_counts(math.radians(10.0015)) == 3983
    assert epos4.position_rad_to_counts(math.radians(-10.0015)) == -3983


def test_target_torque_per_mille_and_saturation():
    assert epos4.encode_target_torque(WRIST, 31.052) == CanFrame(0x507, b'\xe8\x03')
    assert epos4.encode_target_torque(WRIST, 100.0).data == (3220).to_bytes(2, 'little')
    # +-293.8 mNm limit = +-9461.55 per mille, rounded to nearest.
    assert epos4.encode_target_torque(WRIST, 1000.0).data == (9462).to_bytes(2, 'little')
    assert epos4.encode_target_torque(WRIST, -1e9).data == (-9462).to_bytes(
        2, 'little', signed=True
    )
    assert epos4.torque_mnm_to_permille(50.0, rated_torque_mnm=10.0, torque_limit_mnm=20.0) == 2000


def test_tpdo_decoding_keeps_full_statusword_and_high_byte():
    frame = CanFrame(0x187, bytes.fromhex('37 06 8e 0f 00 00 64 00'))
    feedback = epos4.decode_feedback(frame)
    assert feedback.node_id == WRIST
    assert feedback.statusword == 0x0637
    assert feedback.statusword_high_byte == 0x06
    assert math.degrees(feedback.position_rad) == pytest.approx(3982 * 360 / 143360)
    assert feedback.torque_mnm == pytest.approx(3.1052)


def test_tpdo_as_sent_by_upstream_sil_has_status_in_byte_1():
    frame = CanFrame(0x188, bytes.fromhex('00 37 00 00 00 00 00 00'))
    assert epos4.decode_feedback(frame).statusword_high_byte == 0x37


def test_tpdo_errors():
    with pytest.raises(CodecError, match=r'EPOS4 TPDO frame 0x187 is too short: .* got 7'):
        epos4.decode_feedback(CanFrame(0x187, bytes(7)))
    with pytest.raises(CodecError, match=r'frame 0x207 is not a valid EPOS4 TPDO frame'):
        epos4.decode_feedback(CanFrame(0x207, bytes(8)))


def test_rpdo_decoding_for_simulators():
    assert epos4.decode_rpdo(CanFrame(0x20A, b'\x0f\x00')).controlword == 0x0F
    position = epos4.decode_rpdo(epos4.encode_target_position(0x0B, -1.0))
    assert (position.node_id, position.position_rad) == (0x0B, pytest.approx(-1.0, abs=1e-4))
    assert epos4.decode_rpdo(CanFrame(0x508, b'\xe8\x03')).torque_mnm == pytest.approx(31.052)
    with pytest.raises(CodecError, match='not a known EPOS4 RPDO'):
        epos4.decode_rpdo(CanFrame(0x187, bytes(8)))


@pytest.mark.parametrize(
    ('statusword', 'state'),
    [
        (0x0000, Cia402State.NOT_READY_TO_SWITCH_ON),
        (0x0250, Cia402State.SWITCH_ON_DISABLED),
        (0x0221, Cia402State.READY_TO_SWITCH_ON),
        (0x0233, Cia402State.SWITCHED_ON),
        (0x0637, Cia402State.OPERATION_ENABLED),
        (0x0217, Cia402State.QUICK_STOP_ACTIVE),
        (0x021F, Cia402State.FAULT_REACTION_ACTIVE),
        (0x0218, Cia402State.FAULT),
        (0x0001, Cia402State.UNKNOWN),
    ],
)
def test_cia402_state_decoding(statusword, state):
    assert epos4.cia402_state(statusword) is state


def test_cia402_state_names():
    assert epos4.cia402_state(0x0027).value == 'Operation enabled'
    assert epos4.cia402_state(0x0008) == 'Fault'


def test_mode_and_object_constants():
    assert [int(mode) for mode in ModeOfOperation] == [6, 8, 9, 10]
    expected = {
        0x6060,
        0x60B0,
        0x60B1,
        0x60B2,
        0x6098,
        0x30B0,
        0x30B1,
        0x6064,
        0x6041,
        0x6040,
        0x6071,
        0x607A,
    }
    assert expected <= {int(index) for index in ObjectIndex}


def test_gravity_term_matches_facts_constants():
    expected = 0.0845 * 9.81 * 0.121 / 35 * 1000
    assert epos4.gravity_torque_mnm([math.pi / 4, math.pi / 8, math.pi / 8]) == pytest.approx(
        expected
    )
    assert expected == pytest.approx(2.8658, abs=1e-4)
    assert epos4.gravity_torque_mnm([0.0, 0.0, 0.0]) == 0.0
    assert epos4.gravity_torque_mnm([math.pi / 2], gear_ratio=1.0) == pytest.approx(expected * 35)


def test_cst_torque_law_golden():
    torque, filtered = epos4.cst_torque_law(0.01, 0.009, 0.5, kp=60.0, kd=1.0, gravity_mnm=2.0)
    # e_dot = 1.0 rad/s; filtered = 0.2 * 1.0 + 0.8 * 0.5 = 0.6; tau = 0.6 + 0.6 - 2.0.
    assert filtered == pytest.approx(0.6)
    assert torque == pytest.approx(-0.8)


@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-100, 100))
def test_cst_filter_converges_to_constant_derivative(error, step, start_filtered):
    filtered = start_filtered
    previous = error
    for _ in range(200):
        current = previous + step * 0.001
        _, filtered = epos4.cst_torque_law(current, previous, filtered, 0.0, 0.0, 0.0)
        previous = current
    assert filtered == pytest.approx(step, abs=1e-6)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(1, 127))
def test_target_position_counts_round_trip(counts, node_id):
    position_rad = epos4.counts_to_position_rad(counts)
    frame = epos4.encode_target_position(node_id, position_rad)
    assert int.from_bytes(frame.data, 'little', signed=True) == counts
    assert frame.arbitration_id == 0x300 + node_id


@given(st.floats(-1e6, 1e6))
def test_target_torque_never_exceeds_limit(torque_mnm):
    permille = epos4.torque_mnm_to_permille(torque_mnm)
    assert abs(permille) <= 9462
    decoded = epos4.decode_rpdo(epos4.encode_target_torque(1, torque_mnm)).torque_mnm
    assert abs(decoded - max(-293.8, min(293.8, torque_mnm))) <= 31.052 / 2000 + 1e-9


@given(st.integers(0, 0xFFFF), st.floats(-100, 100), st.integers(-32768, 32767))
def test_tpdo_round_trip(statusword, position_rad, permille):
    torque_mnm = epos4.permille_to_torque_mnm(permille)
    feedback = epos4.decode_feedback(
        epos4.encode_feedback(9, statusword, position_rad, torque_mnm)
    )
    assert feedback.statusword == statusword
    assert abs(feedback.position_rad - position_rad) <= math.pi / 143360 + 1e-12
    assert feedback.torque_mnm == pytest.approx(torque_mnm, abs=1e-9)


@given(
    st.integers(1, 4).flatmap(
        lambda size: st.tuples(
            st.just(size), st.integers(-(2 ** (8 * size - 1)), 2 ** (8 * size) - 1)
        )
    ),
    st.booleans(),
)
def test_sdo_download_request_round_trip(size_and_value, size_indicated):
    size, value = size_and_value
    frame = epos4.encode_sdo_download(3, 0x2000, 1, value, size, size_indicated=size_indicated)
    request = epos4.decode_sdo_request(frame)
    assert len(request.data) == (size if size_indicated else 4)
    assert request.value() & ((1 << (8 * size)) - 1) == value & ((1 << (8 * size)) - 1)
