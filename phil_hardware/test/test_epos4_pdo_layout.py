"""The EPOS4 PDO layout: the simulated drive's PDO objects follow CiA 301 and define what its
PDOs carry; the controller gives a drive that holds another layout Phil's (and reads it back),
and without that the drive cannot understand the controller."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_bus_rig import make_rig

from phil_description.core import default_robot_model
from phil_hardware.core.codecs.cia301_pdo import COB_ID_INVALID, configuration_writes
from phil_hardware.core.codecs.epos4_pdo_layout import OTHER_PDO_LAYOUT, PHIL_PDO_LAYOUT
from phil_hardware.sim import Epos4DeviceConfig, SimConfig
from phil_hardware.sim.epos4_objects import MAPPABLE, SdoAbortError
from phil_hardware.sim.epos4_pdos import PdoObjects

DEG = math.pi / 180.0
NODE = 7
OTHER_DRIVES = SimConfig(epos4=Epos4DeviceConfig(pdo_layout='other'))
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


@pytest.fixture
def pdos():
    return PdoObjects(NODE, PHIL_PDO_LAYOUT, MAPPABLE)


def _abort_code(action) -> int:
    with pytest.raises(SdoAbortError) as refused:
        action()
    return refused.value.code


# --- the simulated drive's PDO objects --------------------------------------------------------


def test_the_power_on_layout_defines_the_pdos(pdos):
    assert sorted(hex(cob) for cob in pdos.rpdos) == ['0x207', '0x307', '0x407', '0x507']
    (tpdo1,) = pdos.tpdos
    assert tpdo1.cob_id == 0x187 and tpdo1.length_bytes == 8 and tpdo1.transmission_type == 1
    assert pdos.rpdos[0x207].on_sync is False and pdos.rpdos[0x307].on_sync is True
    assert pdos.read(0x1A00, 2) == (0x6064_0020, 4)
    assert pdos.read(0x1801, 1) == (0x281 + 6 | COB_ID_INVALID, 4)  # TPDO2 off
    other = PdoObjects(NODE, OTHER_PDO_LAYOUT, MAPPABLE)
    assert other.rpdos[0x307].length_bytes == 6 and len(other.tpdos) == 4


def test_a_mapping_changes_only_while_its_pdo_is_off_and_its_count_is_zero(pdos):
    assert _abort_code(lambda: pdos.write(0x1A00, 0, 0)) == 0x06040043  # TPDO1 is on
    pdos.write(0x1800, 1, 0x187 | COB_ID_INVALID)
    assert _abort_code(lambda: pdos.write(0x1A00, 1, 0x6041_0010)) == 0x06040043  # count 3
    pdos.write(0x1A00, 0, 0)
    pdos.write(0x1A00, 1, 0x6041_0010)
    pdos.write(0x1A00, 0, 1)
    pdos.write(0x1800, 1, 0x187)
    (tpdo1,) = pdos.tpdos
    assert tpdo1.length_bytes == 2


def test_what_cannot_be_mapped_is_refused_with_its_cia301_code(pdos):
    pdos.write(0x1401, 1, 0x307 | COB_ID_INVALID)  # RPDO2 off
    pdos.write(0x1601, 0, 0)
    # A TPDO object in an RPDO, an unknown object, a wrong length: cannot be mapped.
    for entry in (0x6041_0010, 0x2000_0010, 0x607A_0010):
        assert _abort_code(lambda e=entry: pdos.write(0x1601, 1, e)) == 0x06040041
    for number in (1, 2, 3):
        pdos.write(0x1601, number, 0x607A_0020)
    assert _abort_code(lambda: pdos.write(0x1601, 0, 3)) == 0x06040042  # 96 bits > 64
    assert _abort_code(lambda: pdos.write(0x1601, 0, 9)) == 0x06090030
    assert 0x307 not in pdos.rpdos  # still off


def test_a_cob_id_changes_only_while_its_pdo_is_off(pdos):
    assert _abort_code(lambda: pdos.write(0x1400, 1, 0x208)) == 0x06090030
    pdos.write(0x1400, 1, 0x207 | COB_ID_INVALID)
    pdos.write(0x1400, 1, 0x208 | COB_ID_INVALID)
    pdos.write(0x1400, 1, 0x208)
    assert 0x208 in pdos.rpdos and 0x207 not in pdos.rpdos
    assert _abort_code(lambda: pdos.write(0x1400, 2, 250)) == 0x06090030  # no such type
    assert _abort_code(lambda: pdos.write(0x1400, 0, 2)) == 0x06010002  # read-only
    assert _abort_code(lambda: pdos.read(0x1400, 3)) == 0x06090011  # no inhibit for an RPDO


def test_phils_writes_turn_the_other_layout_into_phils():
    drive = PdoObjects(NODE, OTHER_PDO_LAYOUT, MAPPABLE)
    for pdo in PHIL_PDO_LAYOUT:
        for write in configuration_writes(pdo, NODE):
            drive.write(write.index, write.subindex, write.value)
    assert drive.rpdos == PdoObjects(NODE, PHIL_PDO_LAYOUT, MAPPABLE).rpdos
    assert drive.tpdos == PdoObjects(NODE, PHIL_PDO_LAYOUT, MAPPABLE).tpdos


# --- the controller against drives that hold another layout -----------------------------------


def test_configure_writes_phils_layout_into_drives_that_hold_another_and_the_robot_moves(model):
    rig = make_rig(model, sim_config=OTHER_DRIVES)
    try:
        ctl = rig.controller
        ctl.configure()
        rewritten = [m for m in ctl.messages if 'held another PDO layout' in m]
        assert len(rewritten) == 4, ctl.messages  # both wrists and both pedals
        assert 'right_wrist (EPOS4 node 7 on can3) held another PDO layout' in rewritten[0]
        assert (
            'read back (RPDO1, RPDO2, RPDO3, RPDO4, TPDO1, TPDO2, TPDO3, TPDO4; e.g. '
            in (rewritten[0])
        )
        assert '0x1600/0: 0x01 expected, 0x02 read' in rewritten[0]  # RPDO1 held 2 objects
        for name in ('right_wrist', 'left_pedal'):
            device = rig.robot.device(name)
            assert (
                device.pdos.rpdos == PdoObjects(device.device_id, PHIL_PDO_LAYOUT, MAPPABLE).rpdos
            )
        ctl.activate()
        goal = np.array(ctl.queue.target_rad)
        wrist, pedal = (
            model.joint_names.index('right_wrist'),
            model.joint_names.index('left_pedal'),
        )
        goal[wrist] -= 20 * DEG
        goal[pedal] += 10 * DEG
        from test_bus_controller_sim import move_chunk

        assert ctl.push_chunk(move_chunk(ctl, goal, 0.5)) is None
        rig.run(1.5)
        truth = rig.robot.joint_positions_rad()
        assert abs(truth[wrist] - goal[wrist]) < 0.5 * DEG and abs(truth[pedal] - goal[pedal]) < (
            0.5 * DEG
        )
        assert ctl.faults() == ()
    finally:
        rig.close()


def test_a_second_configure_finds_the_layout_and_writes_nothing(model):
    from phil_hardware.core.bus_controller import BusController

    rig = make_rig(model, sim_config=OTHER_DRIVES)
    try:
        first = rig.controller
        first.configure()
        first.shutdown()
        rig.collect()
        seen = len(rig.seen['can3'])
        # The node's next configure (a new controller on the same drives): they hold the layout.
        again = BusController(first.config, first.open_transports, clock=first.clock)
        rig.controller = again
        again.configure()
        rig.collect()
        assert not [m for m in again.messages if 'PDO layout' in m]
        downloads = [
            f
            for f in rig.seen['can3'][seen:]
            if f.arbitration_id == 0x607 and f.data[0] in (0x23, 0x2B, 0x2F)
        ]
        assert downloads and not [f for f in downloads if f.data[2] in (0x14, 0x16, 0x18, 0x1A)]
    finally:
        rig.close()


def test_without_the_layout_written_such_a_drive_cannot_understand_the_controller(model):
    rig = make_rig(model, sim_config=OTHER_DRIVES, write_epos4_pdo_layout=False)
    try:
        ctl = rig.controller
        ctl.configure()  # upstream's behaviour: nothing checks the drives' layout
        with pytest.raises(Exception, match=r'no status from right_wrist \(EPOS4 node 7'):
            ctl.activate()
        # The drive refuses the 2-byte controlword its RPDO1 mapping reads as 3 bytes, and the
        # controller cannot read the TPDO 0x187 (statusword and mode, 3 bytes).
        wrist = rig.robot.device('right_wrist')
        assert wrist.frames_rejected > 0
        assert 'frame 0x207: 2 data bytes, its mapping needs 3' in wrist.last_rejection
        assert ctl.counters.frames_rejected > 0
        assert wrist.power_state.name == 'SWITCH_ON_DISABLED'
    finally:
        rig.close()
