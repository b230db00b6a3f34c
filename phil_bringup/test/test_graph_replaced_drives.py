"""Drives that were replaced or reset: the simulated EPOS4s power on holding another PDO
layout; the hardware node gives them Phil's at configure, says so, and the robot plays
(wrist strokes and pedal beats land) through the whole graph."""

from __future__ import annotations

import time

import pytest

from phil_bringup.plots import runlog
from phil_bringup.testing.graph import RunningGraph, last_bar, wait_until

pytest.importorskip('rclpy')

pytestmark = pytest.mark.timeout(300)


def test_drives_holding_another_pdo_layout_are_given_phils_and_the_robot_plays(tmp_path):
    with RunningGraph(tmp_path, ('--sim-epos4-pdo-layout', 'other')) as robot:
        log = (robot.log_dir / 'hardware.log').read_text()
        for drive in ('right_wrist', 'left_wrist', 'right_pedal', 'left_pedal'):
            assert f'{drive} (EPOS4 node' in log and 'held another PDO layout' in log, log
        robot.start_robot()
        robot.wait_state('IDLE', 30.0)
        assert robot.line('PLAY|rock') == 'OK|PLAY'
        hits = robot.log_dir / 'hits.csv'
        assert wait_until(lambda: last_bar(hits) >= 3, 60.0), robot.story()
        assert robot.line('PLAY_CTRL|stop') == 'OK|PLAY_CTRL'
        robot.wait_state('IDLE', 30.0)
        time.sleep(1.0)  # the last impacts flushed
        detected = runlog.load_impacts(robot.log_dir / 'impacts.jsonl')
        # Bass (a pedal) and snare or hi-hat (a wrist): both EPOS4 kinds act on their set-points.
        assert 'bass' in detected.instrument, detected
        assert {'snare', 'closed hihat'} & set(detected.instrument), detected
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()
