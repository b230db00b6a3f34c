"""CiA 301 PDO set-up: the mapping entries, the write sequence (golden values and golden SDO
frames), the read-back comparison and the layouts that cannot exist."""

from __future__ import annotations

import pytest

from phil_hardware.core.codecs.cia301_pdo import (
    COB_ID_INVALID,
    MappedObject,
    ObjectValue,
    PdoDirection,
    PdoLayout,
    configuration_writes,
    expected_values,
    is_cob_id,
    mismatches,
)
from phil_hardware.core.codecs.frame import CodecError

STATUSWORD = MappedObject(0x6041, 0, 16)
POSITION_ACTUAL = MappedObject(0x6064, 0, 32)
TORQUE_ACTUAL = MappedObject(0x6077, 0, 16)
TPDO1 = PdoLayout(
    PdoDirection.TRANSMIT, 1, 0x180, (STATUSWORD, POSITION_ACTUAL, TORQUE_ACTUAL)
)  # fmt: skip


def test_a_mapping_entry_packs_index_subindex_and_length():
    assert STATUSWORD.entry == 0x6041_00_10
    assert POSITION_ACTUAL.entry == 0x6064_00_20
    assert MappedObject(0x1A00, 3, 8).entry == 0x1A00_03_08
    assert MappedObject.from_entry(0x607A_00_20) == MappedObject(0x607A, 0, 32)


def test_the_tpdo1_sequence_disables_maps_and_enables_in_cia301_order():
    node = 7
    assert [(w.index, w.subindex, w.value, w.size) for w in configuration_writes(TPDO1, node)] == [
        (0x1800, 1, 0x8000_0187, 4),  # disabled while it changes
        (0x1A00, 0, 0, 1),  # mapping cleared
        (0x1A00, 1, 0x6041_0010, 4),
        (0x1A00, 2, 0x6064_0020, 4),
        (0x1A00, 3, 0x6077_0010, 4),
        (0x1A00, 0, 3, 1),  # three objects
        (0x1800, 2, 1, 1),  # sent on every SYNC
        (0x1800, 3, 0, 2),  # no inhibit time
        (0x1800, 5, 0, 2),  # no event timer
        (0x1800, 1, 0x0000_0187, 4),  # enabled
    ]


def test_an_rpdo_has_no_inhibit_time_and_a_disabled_pdo_stays_disabled():
    velocity = PdoLayout(PdoDirection.RECEIVE, 3, 0x400, ())
    writes = configuration_writes(velocity, 10)
    assert [(w.index, w.subindex, w.value) for w in writes] == [
        (0x1402, 1, 0x8000_040A),
        (0x1602, 0, 0),
        (0x1602, 0, 0),
        (0x1402, 2, 1),
        (0x1402, 5, 0),
    ]
    assert velocity.cob_id(10) == 0x40A | COB_ID_INVALID


def test_the_read_back_is_what_was_written():
    expected = expected_values(TPDO1, 8)
    read = {(item.index, item.subindex): item.value for item in expected}
    assert mismatches(expected, read) == []
    # A drive may set bit 30 (no RTR) in a COB-ID: that is not a mismatch.
    read[(0x1800, 1)] |= 0x4000_0000
    assert mismatches(expected, read) == []
    # A factory mapping (statusword only), a missing entry, and a PDO left disabled.
    read[(0x1A00, 0)] = 1
    del read[(0x1A00, 3)]
    read[(0x1800, 1)] = 0x8000_0188
    assert mismatches(expected, read) == [
        '0x1800/1: 0x00000188 expected, 0x80000188 read',
        '0x1A00/0: 0x03 expected, 0x01 read',
        '0x1A00/3: 0x60770010 expected, nothing read',
    ]


def test_only_communication_sub_index_1_is_a_cob_id():
    assert is_cob_id(0x1400, 1) and is_cob_id(0x1803, 1)
    assert not is_cob_id(0x1600, 1) and not is_cob_id(0x1A00, 1) and not is_cob_id(0x1800, 2)


@pytest.mark.parametrize(
    ('layout', 'said'),
    [
        (lambda: PdoLayout(PdoDirection.RECEIVE, 5, 0x200, ()), 'PDO number must be 1..4'),
        (lambda: PdoLayout(PdoDirection.RECEIVE, 1, 0x580, ()), 'not one of the PDO ranges'),
        (
            lambda: PdoLayout(PdoDirection.TRANSMIT, 1, 0x180, (POSITION_ACTUAL,) * 3),
            '96 bits mapped, a PDO holds 64',
        ),
        (
            lambda: PdoLayout(PdoDirection.TRANSMIT, 1, 0x180, (MappedObject(0x6041, 0, 12),)),
            '0x6041 length 12 bits',
        ),
        (
            lambda: PdoLayout(PdoDirection.RECEIVE, 1, 0x200, (), inhibit_time_100us=10),
            'an inhibit time only exists for a TPDO',
        ),
    ],
)
def test_an_impossible_layout_is_refused_by_name(layout, said):
    with pytest.raises(CodecError, match=said):
        layout()


def test_the_writes_go_out_as_expedited_size_indicated_sdo_downloads():
    from phil_hardware.core.codecs.cia301 import encode_sdo_download

    frames = [
        encode_sdo_download(7, w.index, w.subindex, w.value, w.size)
        for w in configuration_writes(TPDO1, 7)
    ]
    assert {frame.arbitration_id for frame in frames} == {0x607}
    assert frames[0].data == bytes.fromhex('23 00 18 01 87 01 00 80')  # COB-ID, 4 bytes
    assert frames[1].data == bytes.fromhex('2F 00 1A 00 00 00 00 00')  # count, 1 byte
    assert frames[2].data == bytes.fromhex('23 00 1A 01 10 00 41 60')  # entry 0x60410010
    assert frames[7].data == bytes.fromhex('2B 00 18 03 00 00 00 00')  # inhibit time, 2 bytes
    assert ObjectValue(0x1A00, 2, 0, 4).describe() == '0x1A00/2'
