"""The EPOS4 frame form chosen in the URDF (xacro argument ``epos4_frame_form``) is what goes on
the wire, in every frame the controller sends a drive: SDO downloads that state their size and
2-byte NMT / controlword frames (CiA 301), or upstream's SDO 0x22 and 8-byte frames. A drive
that held another PDO layout (so the layout writes and the NMT pre-operational go out too) is
configured, enabled and moved either way."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_bus_controller_sim import move_chunk
from test_bus_rig import make_rig

from phil_description.core import CanopenFrameForm, load_robot_model
from phil_hardware.sim import Epos4DeviceConfig, SimConfig

DEG = math.pi / 180.0
pytestmark = pytest.mark.timeout(60)

# Per form: the SDO download command bytes and the NMT / controlword lengths allowed.
EXPECTED = {
    CanopenFrameForm.CIA301: ({0x2F, 0x2B, 0x23}, 2),
    CanopenFrameForm.UPSTREAM: ({0x22}, 8),
}


def _requests_to_drives(frames, nodes):
    """SDO downloads (by command byte), NMT and controlword frames addressed to ``nodes``."""
    downloads, short_frames = [], []
    for frame in frames:
        cob = frame.arbitration_id
        if cob - 0x600 in nodes and frame.data[0] >> 5 == 1:  # initiate download
            downloads.append(frame)
        elif cob == 0x000 and frame.data[1] in nodes or cob - 0x200 in nodes:
            short_frames.append(frame)
    return downloads, short_frames


@pytest.mark.parametrize('form', list(CanopenFrameForm), ids=lambda form: form.value)
def test_the_chosen_frame_form_is_every_frame_and_the_drives_follow(form):
    model = load_robot_model(xacro_args={'sim': 'true', 'epos4_frame_form': form.value})
    rig = make_rig(model, sim_config=SimConfig(epos4=Epos4DeviceConfig(pdo_layout='other')))
    try:
        ctl = rig.controller
        ctl.configure()
        ctl.activate()
        goal = np.array(ctl.queue.target_rad)
        wrist, pedal = (model.joint_names.index(n) for n in ('right_wrist', 'left_pedal'))
        goal[wrist] -= 20 * DEG
        goal[pedal] += 10 * DEG
        assert ctl.push_chunk(move_chunk(ctl, goal, 0.5)) is None
        rig.run(1.5)
        truth = rig.robot.joint_positions_rad()
        assert abs(truth[wrist] - goal[wrist]) < 0.5 * DEG
        assert abs(truth[pedal] - goal[pedal]) < 0.5 * DEG
        assert ctl.faults() == ()
        nodes = {7, 8, 10, 11}
        downloads, short_frames = _requests_to_drives(rig.seen['can2'] + rig.seen['can3'], nodes)
        commands, length = EXPECTED[form]
        # The start-up list, the mode switches and the PDO layout writes; NMT start and
        # pre-operational; Shutdown and Enable.
        assert len(downloads) > 4 * 11 and {f.data[0] for f in downloads} == commands
        assert len({f.arbitration_id for f in short_frames}) == 5  # NMT + 4 controlwords
        assert {len(f.data) for f in short_frames} == {length}
        for name in ('right_wrist', 'left_pedal'):
            assert rig.robot.device(name).frames_rejected == 0
    finally:
        rig.close()
