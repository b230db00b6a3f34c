"""Golden-packet and property tests of the Dynamixel Protocol 2.0 codec.

Golden packets are the examples of the ROBOTIS Protocol 2.0 e-manual.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_hardware.core.codecs import CodecError, dynamixel, dynamixel_packet
from phil_hardware.core.codecs.dynamixel import (
    ControlTable,
    Instruction,
    ProfileGoal,
    StatusPacket,
    StatusPacketReader,
)

PING_1 = bytes.fromhex('ff ff fd 00 01 03 00 01 19 4e')
PING_STATUS_1 = bytes.fromhex('ff ff fd 00 01 07 00 55 00 06 04 26 65 5d')
READ_STATUS_1 = bytes.fromhex('ff ff fd 00 01 08 00 55 00 a6 00 00 00 8c c0')

# Byte values that provoke stuffing and header look-alikes far more often than uniform bytes.
tricky_bytes = st.lists(
    st.sampled_from([0xFF, 0xFD, 0x00, 0x55, 0x01]) | st.integers(0, 255), max_size=40
).map(bytes)


def test_manual_instruction_examples():
    assert dynamixel.build_ping(1) == PING_1
    assert dynamixel.build_read(1, ControlTable.PRESENT_POSITION, 4) == bytes.fromhex(
        'ff ff fd 00 01 07 00 02 84 00 04 00 1d 15'
    )
    assert dynamixel.build_write(1, ControlTable.GOAL_POSITION, bytes.fromhex('00020000')) == (
        bytes.fromhex('ff ff fd 00 01 09 00 03 74 00 00 02 00 00 ca 89')
    )
    assert dynamixel.build_sync_read(132, 4, [1, 2]) == bytes.fromhex(
        'ff ff fd 00 fe 09 00 82 84 00 04 00 01 02 ce fa'
    )
    records = {1: (150).to_bytes(4, 'little'), 2: (170).to_bytes(4, 'little')}
    assert dynamixel.build_sync_write(116, 4, records) == bytes.fromhex(
        'ff ff fd 00 fe 11 00 83 74 00 04 00 01 96 00 00 00 02 aa 00 00 00 82 87'
    )


def test_manual_status_examples_build_and_parse():
    assert dynamixel.build_status_packet(1, 0, bytes.fromhex('060426')) == PING_STATUS_1
    assert dynamixel.parse_status_packet(PING_STATUS_1) == StatusPacket(1, 0, b'\x06\x04\x26')
    status = dynamixel.parse_status_packet(READ_STATUS_1)
    assert dynamixel.decode_present_position(status) == 166


def test_crc_table_is_the_manual_table():
    assert dynamixel_packet.CRC_TABLE[:8] == (
        0x0000,
        0x8005,
        0x800F,
        0x000A,
        0x801B,
        0x001E,
        0x0014,
        0x8011,
    )
    assert dynamixel_packet.CRC_TABLE[-1] == 0x0202
    assert dynamixel_packet.crc16(PING_1[:-2]) == 0x4E19


def test_stuffing_inserts_fd_after_ff_ff_fd():
    assert dynamixel_packet.stuff(bytes.fromhex('03 ff ff fd 00')) == bytes.fromhex(
        '03 ff ff fd fd 00'
    )
    assert dynamixel_packet.stuff(bytes.fromhex('ff ff fd ff ff fd')) == bytes.fromhex(
        'ff ff fd fd ff ff fd fd'
    )
    assert dynamixel_packet.stuff(bytes.fromhex('ff fd ff fd')) == bytes.fromhex('ff fd ff fd')


def test_stuffed_packet_length_counts_stuffed_bytes():
    packet = dynamixel.build_write(1, 116, bytes.fromhex('ff ff fd 00'))
    assert packet == bytes.fromhex('ff ff fd 00 01 0a 00 03 74 00 ff ff fd fd 00 21 e7')
    parsed = dynamixel.parse_instruction_packet(packet)
    assert parsed.params == bytes.fromhex('74 00 ff ff fd 00')


def test_unstuff_rejects_missing_stuffing_byte():
    with pytest.raises(CodecError, match='unstuffed FF FF FD at offset 1'):
        dynamixel_packet.unstuff(bytes.fromhex('03 ff ff fd 00'))


@given(tricky_bytes)
def test_stuffing_round_trips_and_leaves_no_bare_pattern(body):
    stuffed = dynamixel_packet.stuff(body)
    assert dynamixel_packet.unstuff(stuffed) == body
    assert dynamixel_packet.HEADER not in stuffed
    # FF FF FD cannot overlap itself, so count() sees every occurrence.
    assert len(stuffed) - len(body) == body.count(b'\xff\xff\xfd')


@pytest.mark.parametrize(
    ('packet', 'message'),
    [
        (PING_STATUS_1[:9], 'too short: 9 bytes'),
        (b'\xff\xff\xfe\x00' + PING_STATUS_1[4:], 'bad header ff ff fe 00'),
        (PING_STATUS_1[:5] + b'\x08' + PING_STATUS_1[6:], r'\(id 1\): length field 8'),
        (PING_STATUS_1[:-1] + b'\x00', r'CRC mismatch, received 0x0065, computed 0x5D65'),
        (PING_1, r'\(id 1\) is not a status packet: instruction 0x01'),
        (dynamixel_packet.build_packet(1, Instruction.STATUS), 'has no error byte'),
    ],
)
def test_status_parser_names_what_failed(packet, message):
    with pytest.raises(CodecError, match=message):
        dynamixel.parse_status_packet(packet)


def test_instruction_parser_rejects_status_packets():
    with pytest.raises(CodecError, match='is a status packet'):
        dynamixel.parse_instruction_packet(PING_STATUS_1)


def test_builders_validate_ids_and_record_lengths():
    with pytest.raises(CodecError, match='id must be 0..252, got 253'):
        dynamixel.build_ping(253)
    with pytest.raises(CodecError, match='id must be 0..252, got 254'):
        dynamixel.build_status_packet(dynamixel.BROADCAST_ID)
    with pytest.raises(CodecError, match='record for id 2 has 3 bytes, expected 4'):
        dynamixel.build_sync_write(116, 4, {2: b'\x00\x00\x00'})
    with pytest.raises(CodecError, match='exceeds int32'):
        dynamixel.build_profile_goal_sync_write({1: ProfileGoal(0, 0, 2**31)})


def test_profile_goal_sync_write_layout():
    packet = dynamixel.build_profile_goal_sync_write(
        {
            1: ProfileGoal(2000, 1000, 2048),
            2: ProfileGoal(0, 0, 1024),
        }
    )
    parsed = dynamixel.parse_instruction_packet(packet)
    assert (parsed.dxl_id, parsed.instruction) == (dynamixel.BROADCAST_ID, Instruction.SYNC_WRITE)
    address, length, records = dynamixel.parse_sync_write_params(parsed.params)
    assert (address, length) == (108, 12)
    assert records[1] == bytes.fromhex('d0070000 e8030000 00080000')
    assert records[2] == bytes.fromhex('00000000 00000000 00040000')


def test_present_position_sync_read_layout():
    parsed = dynamixel.parse_instruction_packet(dynamixel.build_present_position_sync_read([1, 2]))
    assert parsed.instruction == Instruction.SYNC_READ
    assert dynamixel.parse_address_length_params(parsed.params) == (132, 4, b'\x01\x02')


def test_sync_write_param_parser_rejects_ragged_records():
    with pytest.raises(CodecError, match='not a multiple of 5'):
        dynamixel.parse_sync_write_params(bytes.fromhex('7400 0400 01 96000000 02'))


def test_status_error_text():
    assert dynamixel.describe_status_error(0) == 'no error'
    assert dynamixel.describe_status_error(0x84) == 'hardware alert; data range error'
    assert dynamixel.describe_status_error(0x80) == 'hardware alert'


def test_split_packets_resynchronises_on_garbage_and_keeps_partial_tail():
    garbage = bytes.fromhex('00 ff ff fd 00 01 ff 13')  # fake header with an absurd length
    stream = garbage + PING_STATUS_1 + READ_STATUS_1[:6]
    packets, remaining = dynamixel_packet.split_packets(stream)
    assert packets == [PING_STATUS_1]
    assert remaining == READ_STATUS_1[:6]
    packets, remaining = dynamixel_packet.split_packets(
        remaining + READ_STATUS_1[6:] + b'\xff\xff'
    )
    assert packets == [READ_STATUS_1]
    assert remaining == b'\xff\xff'


def test_split_packets_drops_packet_with_bad_crc_but_finds_the_next():
    corrupt = PING_STATUS_1[:-1] + b'\x00'
    packets, remaining = dynamixel_packet.split_packets(corrupt + READ_STATUS_1 + b'\x12\x34')
    assert packets == [READ_STATUS_1]
    assert remaining == b''


def test_status_reader_feeds_byte_by_byte_and_counts_garbage():
    reader = StatusPacketReader()
    received = []
    for byte in b'\x01\x02' + PING_1 + READ_STATUS_1:
        received += reader.feed(bytes((byte,)))
    assert received == [StatusPacket(1, 0, bytes.fromhex('a6000000'))]
    assert reader.discarded_bytes == 2
    assert reader.ignored_packets == 1
    assert reader.pending_bytes == 0


@given(
    st.lists(st.tuples(st.integers(0, 252), st.integers(0, 255), tricky_bytes), max_size=5),
    tricky_bytes,
    st.integers(1, 7),
)
def test_reader_recovers_every_packet_between_garbage_in_any_chunking(statuses, garbage, chunk):
    # Garbage without 0xFD cannot contain a header; the chunk size must not matter.
    garbage = bytes(byte for byte in garbage if byte != 0xFD)
    stream = garbage
    for dxl_id, error, params in statuses:
        stream += dynamixel.build_status_packet(dxl_id, error, params) + garbage
    reader = StatusPacketReader()
    received = []
    for start in range(0, len(stream), chunk):
        received += reader.feed(stream[start : start + chunk])
    assert received == [StatusPacket(*status) for status in statuses]


@given(st.integers(0, 252), st.sampled_from(list(Instruction)), tricky_bytes)
def test_instruction_packet_round_trip(dxl_id, instruction, params):
    if instruction is Instruction.STATUS:
        instruction = Instruction.PING
    packet = dynamixel_packet.build_packet(dxl_id, instruction, params)
    assert dynamixel.parse_instruction_packet(packet) == (dxl_id, instruction, params)
    assert int.from_bytes(packet[5:7], 'little') == len(packet) - 7


def test_tick_conversion_golden_values():
    # head_pitch joint 0 -> motor +90 deg -> tick 1024 (tick = 2048 - motor_deg * 4096 / 360).
    assert dynamixel.motor_deg_to_tick(90.0) == 1024
    assert dynamixel.motor_deg_to_tick(0.0) == 2048
    assert dynamixel.motor_deg_to_tick(-90.0) == 3072
    assert dynamixel.motor_deg_to_tick(500.0) == 0
    assert dynamixel.motor_deg_to_tick(-500.0) == 4096
    assert dynamixel.tick_to_motor_deg(1024) == 90.0
    assert dynamixel.motor_rad_to_tick(math.radians(45.0)) == 1536
    assert dynamixel.tick_to_motor_rad(3072) == pytest.approx(math.radians(-90.0))


def test_tick_rounding_ties_away_from_zero():
    # Exact ties: 2046.5 -> 2047 and 2048.5 -> 2049 (ties to even would give 2046 and 2048).
    assert dynamixel.motor_deg_to_tick(1.5 * 360 / 4096) == 2047
    assert dynamixel.motor_deg_to_tick(-0.5 * 360 / 4096) == 2049
    assert dynamixel.motor_deg_to_tick(0.6 * 360 / 4096) == 2047


def test_tick_conversion_rejects_nan():
    with pytest.raises(CodecError, match='motor_deg must be finite'):
        dynamixel.motor_deg_to_tick(math.nan)


@given(st.integers(0, 4096))
def test_tick_round_trip(tick):
    assert dynamixel.motor_deg_to_tick(dynamixel.tick_to_motor_deg(tick)) == tick


@given(st.floats(-180.0, 180.0))
def test_motor_deg_round_trip_within_half_tick(motor_deg):
    tick = dynamixel.motor_deg_to_tick(motor_deg)
    assert abs(dynamixel.tick_to_motor_deg(tick) - motor_deg) <= 180.0 / 4096 + 1e-9
