"""`phil doctor`: is this machine ready to drive Phil? Safe at any time: no torque, nothing
enabled, no setting changed.

It reads the CAN interfaces (``ip -details -statistics -json link show``), the Dynamixel port
and its FTDI latency timer, the real-time limits, lists the motors the URDF expects per bus,
and then runs a discovery pass as START would (probes only: an SDO read per EPOS4, a PING per
Dynamixel, listening for the TMotors' status) and says which motors answered. Judgements and
fixes: ``core/doctor.py``. Exit status 1 when anything is missing or wrong.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
from pathlib import Path

from phil_bringup.cli.bringup_can import read_links, wanted_interfaces
from phil_bringup.core.can_bringup import BringupError
from phil_bringup.core.doctor import (
    Finding,
    MotorAnswer,
    SerialPortState,
    check_can,
    check_motors,
    check_realtime,
    check_serial,
)

# Generous: the doctor is not on a deadline, and a busy machine must not make a motor "missing".
DISCOVERY_LISTEN_S = 1.0
DXL_REPLY_TIMEOUT_S = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        '--sim', action='store_true', help='check the simulated robot (make run) instead'
    )
    parser.add_argument(
        '--dxl-port', default=None, metavar='PATH', help="the Dynamixel port (default: the URDF's)"
    )
    parser.add_argument(
        '--sim-channel-base',
        default='',
        metavar='IPV6',
        help="with --sim: the simulator's first CAN group (the launcher's option of that name)",
    )
    parser.add_argument(
        '--no-discovery', action='store_true', help='skip the discovery pass (no bus traffic)'
    )


def doctor(args: argparse.Namespace) -> int:
    from phil_description.core import default_robot_model
    from phil_hardware.core.realtime import RealtimeConfig

    model = default_robot_model(sim=args.sim)
    hardware = model.hardware
    robot = 'simulated' if args.sim else 'real'
    print(f'phil doctor on {socket.gethostname()}: the {robot} robot')
    findings: list[Finding] = []
    if args.sim:
        findings.append(Finding('CAN', 'simulated buses (IPv6 multicast): no interface to check'))
    else:
        findings += _can_findings()
    serial_ports = {name: args.dxl_port or bus.port for name, bus in hardware.serial_buses.items()}
    for name, bus in hardware.serial_buses.items():
        findings += check_serial(_serial_state(serial_ports[name]), bus.latency_timer_ms)
    rtprio = resource.getrlimit(resource.RLIMIT_RTPRIO)[0]
    memlock = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    findings += check_realtime(rtprio, memlock, os.geteuid() == 0, RealtimeConfig().sched_priority)
    _print(findings)
    print('expected motors (URDF):')
    for bus, motors in _motors_per_bus(model).items():
        print(f'  {bus}: {", ".join(motors)}')
    if not args.no_discovery:
        motors = _discovery(model, args.sim_channel_base, args.dxl_port or '')
        _print(motors)
        findings += motors
    problems = [finding for finding in findings if not finding.ok]
    print(f'{len(problems)} problem(s)' if problems else 'ready: nothing missing')
    return 1 if problems else 0


def _can_findings() -> list[Finding]:
    try:
        return check_can(wanted_interfaces(), read_links())
    except BringupError as error:
        return [Finding('CAN', f'cannot read the interfaces: {error}', 'install iproute2')]


def _serial_state(port: str) -> SerialPortState:
    if not os.path.exists(port):
        return SerialPortState(port, exists=False)
    device = Path(os.path.realpath(port)).name
    timer = Path('/sys/bus/usb-serial/devices') / device / 'latency_timer'
    try:
        latency = int(timer.read_text().strip())
    except (OSError, ValueError):
        return SerialPortState(port, exists=True)
    return SerialPortState(port, True, latency, str(timer))


def _motors_per_bus(model) -> dict[str, list[str]]:
    from phil_hardware.core.bus_controller.config import motor_kind

    per_bus: dict[str, list[str]] = {}
    for joint in model.joints:
        motor = joint.motor
        per_bus.setdefault(motor.bus, []).append(f'{joint.name} ({motor_kind(motor)})')
    return per_bus


def _discovery(model, channel_base: str, serial_port: str) -> list[Finding]:
    """Open the buses, probe every motor, close them; nothing is configured or enabled."""
    from phil_hardware.core.bus_controller import BusController
    from phil_hardware.core.bus_controller.config import (
        SequenceTiming,
        controller_config_from_model,
        motor_kind,
        relocate_buses,
    )
    from phil_hardware.rt.process import open_transports

    can_buses, serial_buses = relocate_buses(
        model.hardware.can_buses,
        model.hardware.serial_buses,
        can_channel_base=channel_base,
        serial_port=serial_port,
    )
    config = controller_config_from_model(
        model,
        timing=SequenceTiming(
            discovery_listen_s=DISCOVERY_LISTEN_S, dxl_reply_timeout_s=DXL_REPLY_TIMEOUT_S
        ),
        allow_missing=model.joint_names,
        can_buses=can_buses,
        serial_buses=serial_buses,
    )
    controller = BusController(config, lambda: open_transports(config, controller.warn))
    print('discovery (probes only; nothing is enabled):')
    try:
        silent = set(controller.survey())
    except Exception as error:  # a bus that cannot be opened: say which and why
        return [
            Finding(
                'motors',
                f'no discovery: the buses could not be opened ({error})',
                'fix the CAN and Dynamixel findings above, then run phil doctor again',
            )
        ]
    measured = controller.measured
    return check_motors([
        MotorAnswer(
            joint=joint.name,
            motor=f'{motor_kind(joint.motor)} on {joint.motor.bus}',
            answered=index not in silent,
            position_rad=measured.position_rad[index],
            status=measured.status[index],
            statusword=measured.statusword[index],
            error_code=measured.error_code[index],
            temperature_c=measured.temperature_c[index],
        )
        for index, joint in enumerate(config.joints)
    ])  # fmt: skip


def _print(findings: list[Finding]) -> None:
    section = None
    for finding in findings:
        if finding.section != section:
            section = finding.section
            print(f'{section}:')
        print(f'  {"ok  " if finding.ok else "FAIL"} {finding.text}')
        if finding.fix:
            print(f'       fix: {finding.fix}')
