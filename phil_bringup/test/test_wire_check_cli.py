"""`phil wire-check` as a user runs it: a clean capture exits 0 with the counts, one with a
frame that reads wrong exits 1 naming the line's record and the problem, an unreadable one
exits 2 naming the file and line, without a traceback."""

from __future__ import annotations

import subprocess

from phil_bringup.testing.graph import run_phil

GOOD = """\
(10.000000) can3 000#0107
(10.000100) can3 307#00000000
(10.000200) can3 080#
(10.000300) can0 00000300#000003E8
(10.000400) dxl FFFFFD000103000119
(10.000401) dxl 4E
"""


def _wire_check(tmp_path, text: str) -> subprocess.CompletedProcess:
    capture = tmp_path / 'capture.log'
    capture.write_text(text)
    return run_phil('wire-check', capture, timeout_s=60)


def test_a_clean_capture_exits_0_with_the_counts(tmp_path):
    done = _wire_check(tmp_path, GOOD)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith('capture.log: 5 commands')
    assert any(line.split()[:3] == ['tmotor', 'set_rpm', '1'] for line in lines)
    assert 'all read alike' in lines[-1]


def test_a_wrong_frame_exits_1_naming_its_record(tmp_path):
    # The right wrist (node 7) is on can3, not can1.
    done = _wire_check(tmp_path, GOOD + '(10.0005) can1 307#00000000\n')
    assert done.returncode == 1, done.stdout + done.stderr
    assert '2 problem(s):' in done.stdout  # our codecs refuse it too
    assert 'record 7 can1 307#00000000: no epos4 7 on can1 in the URDF' in done.stdout


def test_an_unreadable_capture_exits_2_naming_file_and_line(tmp_path):
    done = _wire_check(tmp_path, GOOD + 'garbage\n')
    assert done.returncode == 2
    assert 'capture.log:7: expected' in done.stderr and 'Traceback' not in done.stderr
