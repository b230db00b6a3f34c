"""`phil doctor`: the judgements (pure), the command on a machine without CAN or Dynamixel
(a clear list, exit 1, no traceback) and against the device simulators (every motor answers,
exit 0)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from phil_bringup.core.can_bringup import CanInterfaceSettings, InterfaceState
from phil_bringup.core.doctor import (
    BRINGUP_FIX,
    MotorAnswer,
    SerialPortState,
    check_can,
    check_motors,
    check_realtime,
    check_serial,
)

WANTED = [CanInterfaceSettings(f'can{i}', 1_000_000, 100, 1000) for i in range(2)]
GOOD = InterfaceState(
    'can0', True, 'can', 1_000_000, 100, 1000, 'ERROR-ACTIVE', 0, 0, 0, 0, 0
)  # fmt: skip


def test_a_right_can_interface_is_ok_and_shows_its_counters():
    findings = check_can(WANTED[:1], {'can0': GOOD})
    assert [(f.ok, f.text) for f in findings] == [
        (
            True,
            'can0: up, ERROR-ACTIVE, bitrate 1000000, restart-ms 100, txqueuelen 1000, errors '
            'rx 0 tx 0, error counters rx 0 tx 0, bus-off 0',
        )
    ]


def test_can_problems_each_come_with_their_fix():
    present = {
        'can0': InterfaceState('can0', False, 'can', 500_000, 0, 10),
        'can1': InterfaceState('can1', True, 'can', 1_000_000, 100, 1000, 'BUS-OFF', bus_off=3),
    }
    down, bus_off = check_can(WANTED, present)
    assert (
        '(down; bitrate should be 1000000; restart-ms should be 100; txqueuelen should be 1000)'
        in (down.text)
    )
    assert down.fix == BRINGUP_FIX
    assert 'the controller is BUS-OFF: check termination' in bus_off.text
    assert 'bus-off 3' in bus_off.text and 'sudo ip link set can1 down' in bus_off.fix
    (missing,) = check_can(WANTED[:1], {})
    assert missing.text == 'can0: missing' and 'plug in the USB-CAN adapter' in missing.fix


def test_the_dynamixel_port_and_its_latency_timer():
    (gone,) = check_serial(SerialPortState('/dev/ttyUSB0', False), 1)
    assert gone.text == '/dev/ttyUSB0: missing' and 'plug in the U2D2' in gone.fix
    timer = '/sys/bus/usb-serial/devices/ttyUSB0/latency_timer'
    (slow,) = check_serial(SerialPortState('/dev/ttyUSB0', True, 16, timer), 1)
    assert 'FTDI latency timer 16 ms (should be 1 ms' in slow.text
    assert slow.fix.startswith(f'echo 1 | sudo tee {timer}')
    assert check_serial(SerialPortState('/dev/ttyUSB0', True, 1, timer), 1)[0].ok
    assert check_serial(SerialPortState('/dev/pts/3', True), 1)[0].ok  # a PTY has no timer


def test_real_time_limits():
    assert all(f.ok for f in check_realtime(0, 65536, root=True, bus_loop_priority=40))
    low, locked = check_realtime(0, 65536, root=False, bus_loop_priority=40)
    assert 'would run time-sharing' in low.text and '`<user> - rtprio 99`' in low.fix
    assert 'cannot lock its memory' in locked.text and 'memlock unlimited' in locked.fix
    assert all(f.ok for f in check_realtime(99, -1, root=False, bus_loop_priority=40))


def test_motor_answers():
    answered = MotorAnswer(
        'waist', 'TMotor node 0 on can0', True, math.radians(10), 'ok', 0, 0, 31
    )
    epos = MotorAnswer('right_wrist', 'EPOS4 node 7 on can3', True, statusword=0x0250)
    silent = MotorAnswer('head_yaw', 'Dynamixel id 1 on dxl', False)
    findings = check_motors([answered, epos, silent])
    assert [f.text for f in findings] == [
        'waist (TMotor node 0 on can0): answered, at 10.0 deg, ok, 31 C',
        'right_wrist (EPOS4 node 7 on can3): answered, statusword 0x0250',
        'head_yaw (Dynamixel id 1 on dxl): no answer',
    ]
    assert [f.ok for f in findings] == [True, True, False]


# --- the command ------------------------------------------------------------------------------


def _phil_doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, '-m', 'phil_bringup.cli.main', 'doctor', *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_machine_without_can_or_dynamixel_gets_the_list_and_exit_1(tmp_path):
    fakes = tmp_path / 'bin'
    fakes.mkdir()
    ip = fakes / 'ip'  # the links of a laptop: loopback only
    ip.write_text('#!/bin/sh\necho \'[{"ifname": "lo", "flags": ["UP"], "txqlen": 1000}]\'\n')
    ip.chmod(0o755)
    env = {**os.environ, 'PATH': f'{fakes}{os.pathsep}{os.environ["PATH"]}'}
    done = _phil_doctor('--dxl-port', str(tmp_path / 'ttyUSB9'), env=env)
    assert done.returncode == 1
    out = done.stdout
    for bus in ('can0', 'can1', 'can2', 'can3'):
        assert f'FAIL {bus}: missing' in out
    assert f'FAIL {tmp_path / "ttyUSB9"}: missing' in out
    assert 'fix: plug in the U2D2' in out
    assert 'can3: right_wrist (EPOS4 node 7), left_wrist (EPOS4 node 8)' in out
    assert 'FAIL no discovery: the buses could not be opened' in out
    assert out.rstrip().endswith('problem(s)')
    assert 'Traceback' not in out + done.stderr


@pytest.fixture
def simulator(tmp_path):
    """The device simulator on private multicast groups and its own PTY link."""
    channel_base = f'ff11::7068:{os.getpid() % 0xF000 + 0x400:x}:0'
    dxl_port = str(tmp_path / 'ttyDXL')
    process = subprocess.Popen(
        [sys.executable, '-m', 'phil_hardware.sim', '--can-channel-base', channel_base,
         '--dxl-port', dxl_port],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        from phil_hardware.sim.runner import READY_LINE

        for line in process.stdout:
            if line.startswith(READY_LINE):
                break
        else:
            pytest.fail('the device simulator ended before it was ready')
        yield channel_base, dxl_port
    finally:
        process.kill()
        process.wait(10)


def test_against_the_simulators_every_motor_answers(simulator):
    channel_base, dxl_port = simulator
    done = _phil_doctor('--sim', '--sim-channel-base', channel_base, '--dxl-port', dxl_port)
    assert done.returncode == 0, done.stdout + done.stderr
    for motor in (
        'waist (TMotor node 0 on can0): answered',
        'right_elbow (TMotor node 4 on can1): answered',
        # The EPOS4 statusword, read by SDO: powered, nothing enabled.
        'right_pedal (EPOS4 node 10 on can2): answered, switch on disabled, statusword 0x0240',
        'left_wrist (EPOS4 node 8 on can3): answered',
        # Model and firmware from the discovery PING (the simulated XM430-W210-T's).
        'head_pitch (Dynamixel id 2 on dxl): answered, model 1030, firmware 46',
    ):
        assert f'ok   {motor}' in done.stdout
    assert done.stdout.count(': answered') == 13
    assert done.stdout.rstrip().endswith('ready: nothing missing')
