"""The wire form end to end: the whole graph, told to speak upstream's EPOS4 frame form
(``hardware.epos4_frame_form=upstream``), starts and plays while the device simulator
captures every frame and serial block the hardware node sends; ``phil wire-check`` then reads
the capture three ways (independent decoder, upstream's simulator's rules, our codecs) and
they agree on every command."""

from __future__ import annotations

import pytest

from phil_bringup.testing.graph import RunningGraph, last_bar, run_phil, wait_until
from phil_hardware.core.wire_check import read_capture

pytest.importorskip('rclpy')

pytestmark = pytest.mark.timeout(300)


def test_a_captured_session_in_upstreams_frame_form_reads_alike_three_ways(tmp_path):
    capture = tmp_path / 'capture.log'
    arguments = ('--sim-capture', str(capture), '--param', 'hardware.epos4_frame_form=upstream')
    with RunningGraph(tmp_path, arguments) as robot:
        robot.start_robot()
        robot.wait_state('IDLE', 30.0)
        assert robot.line('LOOK|20|10') == 'OK|LOOK'
        robot.wait_state('IDLE', 30.0)
        assert robot.line('PLAY|rock') == 'OK|PLAY'
        assert wait_until(lambda: last_bar(robot.log_dir / 'hits.csv') >= 2, 60.0), robot.story()
        assert robot.line('PLAY_CTRL|stop') == 'OK|PLAY_CTRL'
        robot.wait_state('IDLE', 30.0)
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
    # Upstream's frame form on the wire: SDO downloads 0x22, NMT and controlwords of 8 bytes.
    frames = [r for r in read_capture(capture) if hasattr(r, 'can_id')]
    sdo = {r.data[0] for r in frames if 0x601 <= r.can_id <= 0x67F and r.data[0] >> 5 == 1}
    assert sdo == {0x22}
    assert {len(r.data) for r in frames if r.can_id == 0 or 0x201 <= r.can_id <= 0x27F} == {8}
    done = run_phil('wire-check', capture, '--epos4-frame-form', 'upstream')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'all read alike' in done.stdout
    counts = {
        line.split()[0] + ' ' + line.split()[1]: int(line.split()[2])
        for line in done.stdout.splitlines()[1:]
        if line.startswith('  ')
    }
    assert counts['epos4 target_position'] > 4 * 1000  # 4 drives at 1 kHz for seconds
    assert counts['tmotor set_rpm'] > 7 * 200 and counts['dynamixel profile_goal'] > 2 * 200
