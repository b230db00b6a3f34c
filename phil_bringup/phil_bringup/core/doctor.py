"""`phil doctor`'s judgements: is this machine set up to drive the robot, and what fixes it.

ROS-free and pure: every check takes what was read from the machine (interfaces, the serial
port, resource limits, the discovery pass) and returns findings, each a line that says what was
seen and, for a problem, the command or change that fixes it. ``cli/doctor.py`` reads the
machine and prints them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phil_bringup.core.can_bringup import CanInterfaceSettings, InterfaceState, wrong_settings

BRINGUP_FIX = 'sudo -E env "PATH=$PATH" phil bringup-can'
LIMITS_FILE = '/etc/security/limits.conf'


@dataclass(frozen=True)
class Finding:
    """One line of the report; ``fix`` is set exactly when it is a problem."""

    section: str
    text: str
    fix: str = ''

    @property
    def ok(self) -> bool:
        return not self.fix


@dataclass(frozen=True)
class SerialPortState:
    """The Dynamixel port as found: does it exist, and its FTDI latency timer (None: not an
    FTDI USB serial port, e.g. the simulator's PTY)."""

    port: str
    exists: bool
    latency_timer_ms: int | None = None
    latency_timer_path: str = ''


@dataclass(frozen=True)
class MotorAnswer:
    """One motor of the URDF in the discovery pass."""

    joint: str
    motor: str  # e.g. "EPOS4 node 7 on can3"
    answered: bool
    position_rad: float = math.nan
    status: str = ''
    statusword: int = 0
    error_code: int = 0
    temperature_c: float = math.nan


def check_can(
    wanted: Sequence[CanInterfaceSettings], present: Mapping[str, InterfaceState]
) -> list[Finding]:
    """Each CAN bus of the URDF: there, up, with its settings, error-active, no errors."""
    findings = []
    for bus in wanted:
        state = present.get(bus.name)
        if state is None or state.kind != 'can':
            what = 'missing' if state is None else f'a {state.kind or "non-CAN"} interface'
            findings.append(
                Finding(
                    'CAN',
                    f'{bus.name}: {what}',
                    'plug in the USB-CAN adapter, then ' + BRINGUP_FIX,
                )
            )
            continue
        seen = (
            f'{bus.name}: {"up" if state.up else "down"}, {state.can_state or "state unknown"}, '
            f'bitrate {state.bitrate}, restart-ms {state.restart_ms}, txqueuelen '
            f'{state.txqueuelen}, errors rx {_count(state.rx_errors)} tx '
            f'{_count(state.tx_errors)}, error counters rx {_count(state.berr_rx)} tx '
            f'{_count(state.berr_tx)}, bus-off {_count(state.bus_off)}'
        )
        wrong = wrong_settings(state, bus)
        if wrong:
            findings.append(Finding('CAN', f'{seen} ({"; ".join(wrong)})', BRINGUP_FIX))
        elif state.can_state not in ('', 'ERROR-ACTIVE'):
            findings.append(
                Finding(
                    'CAN',
                    f'{seen} (the controller is {state.can_state}: check termination, wiring '
                    f'and that every drive on it is powered)',
                    f'fix the bus, then `sudo ip link set {bus.name} down` and {BRINGUP_FIX}',
                )
            )
        else:
            findings.append(Finding('CAN', seen))
    return findings


def check_serial(state: SerialPortState, wanted_latency_ms: int) -> list[Finding]:
    """The Dynamixel port is there and, on an FTDI adapter, its latency timer is as wanted."""
    if not state.exists:
        return [
            Finding(
                'Dynamixel',
                f'{state.port}: missing',
                'plug in the U2D2 (USB); `ls /dev/ttyUSB*` shows where it is '
                '(the hardware parameter dxl_port moves it)',
            )
        ]
    if state.latency_timer_ms is None:
        return [Finding('Dynamixel', f'{state.port}: present (no FTDI latency timer)')]
    seen = f'{state.port}: present, FTDI latency timer {state.latency_timer_ms} ms'
    if state.latency_timer_ms <= wanted_latency_ms:
        return [Finding('Dynamixel', seen)]
    return [
        Finding(
            'Dynamixel',
            f'{seen} (should be {wanted_latency_ms} ms: every reply waits that long)',
            f'echo {wanted_latency_ms} | sudo tee {state.latency_timer_path}; for good, the '
            f'udev rule in the README ("On the robot")',
        )
    ]


def check_realtime(
    rtprio_limit: int, memlock_limit: int, root: bool, bus_loop_priority: int
) -> list[Finding]:
    """Real-time limits: the bus loop's SCHED_FIFO priority and mlockall need them.

    Args:
        rtprio_limit: RLIMIT_RTPRIO (soft).
        memlock_limit: RLIMIT_MEMLOCK (soft), bytes; -1 (RLIM_INFINITY) is unlimited.
        root: Running as root (the limits do not bind root).
        bus_loop_priority: The bus loop's SCHED_FIFO priority.
    """
    if root:
        return [Finding('real time', 'root: SCHED_FIFO and mlockall allowed')]
    findings = []
    user_fix = f'in {LIMITS_FILE}: `<user> - {{}}`, then log in again'
    if rtprio_limit >= bus_loop_priority:
        findings.append(Finding('real time', f'rtprio limit {rtprio_limit}'))
    else:
        findings.append(
            Finding(
                'real time',
                f'rtprio limit {rtprio_limit}: the bus loop (SCHED_FIFO {bus_loop_priority}) '
                f'would run time-sharing',
                user_fix.format('rtprio 99'),
            )
        )
    if memlock_limit < 0:
        findings.append(Finding('real time', 'memlock limit unlimited'))
    else:
        findings.append(
            Finding(
                'real time',
                f'memlock limit {memlock_limit} bytes: the bus loop cannot lock its memory '
                f'(page faults mid-tick)',
                user_fix.format('memlock unlimited'),
            )
        )
    return findings


def check_motors(answers: Sequence[MotorAnswer]) -> list[Finding]:
    """The discovery pass: one line per motor of the URDF."""
    findings = []
    for answer in answers:
        if not answer.answered:
            findings.append(
                Finding(
                    'motors',
                    f'{answer.joint} ({answer.motor}): no answer',
                    'check its power, its cable and its id',
                )
            )
            continue
        details = ['answered']
        if not math.isnan(answer.position_rad):
            details.append(f'at {math.degrees(answer.position_rad):.1f} deg')
        if answer.status:
            details.append(answer.status)
        if answer.statusword:
            details.append(f'statusword 0x{answer.statusword:04x}')
        if answer.error_code:
            details.append(f'error 0x{answer.error_code:02x}')
        if not math.isnan(answer.temperature_c):
            details.append(f'{answer.temperature_c:.0f} C')
        line = f'{answer.joint} ({answer.motor}): ' + ', '.join(details)
        findings.append(Finding('motors', line))
    return findings


def _count(value: int | None) -> str:
    return '?' if value is None else str(value)
