"""The device simulator's command line: its options, grouped by what they set up.

Parsed by :func:`phil_hardware.sim.runner.main`; the groups are the CAN buses, the TMotor and the
Dynamixel devices, the fault injection and the impact and ROS outputs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from phil_hardware.sim.faults import FaultKind


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog='device_simulator',
        description='Simulated TMotor, EPOS4 and Dynamixel devices of Phil on their buses.',
    )
    parser.add_argument(
        '--urdf',
        type=Path,
        help='robot description (.urdf or .urdf.xacro, '
        'expanded with sim:=true); default: the installed one',
    )
    _add_can_options(parser)
    _add_tmotor_options(parser)
    _add_epos4_options(parser)
    _add_dynamixel_options(parser)
    _add_fault_options(parser)
    _add_output_options(parser)
    parser.add_argument(
        '--nice',
        type=int,
        default=0,
        metavar='N',
        help='niceness of the simulator (e.g. -10: the devices keep up while '
        'the ROS nodes load the machine; negative needs privileges)',
    )
    parser.add_argument('--log-level', default='WARNING', help='Python log level')
    return parser


def _add_can_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('CAN buses')
    group.add_argument(
        '--can-channel-base',
        metavar='GROUP',
        help='IPv6 multicast group of the first CAN bus; the others follow '
        '(+1, +2, ...) in model order, e.g. ff11::7068:6a00',
    )
    group.add_argument(
        '--can-channel',
        action='append',
        default=[],
        metavar='BUS=GROUP',
        help='channel of one CAN bus (repeatable; overrides the base)',
    )
    group.add_argument(
        '--can-port',
        type=int,
        help='UDP port of the udp_multicast buses (default: python-can 43113)',
    )


def _add_tmotor_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('TMotor')
    group.add_argument(
        '--status-hz',
        type=float,
        default=200.0,
        help='TMotor status broadcast rate [Hz] (default 200)',
    )
    group.add_argument(
        '--status-extended-id',
        action='store_true',
        help='send TMotor status with the extended id node | 0x29 << 8',
    )


def _add_epos4_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('EPOS4')
    group.add_argument(
        '--epos4-pdo-layout',
        choices=('phil', 'other'),
        default='phil',
        help="the drives' PDO layout at power-on: phil (as the lab's drives hold it) or other "
        '(a replaced or reset drive: the controller must write its layout)',
    )


def _add_dynamixel_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('Dynamixel')
    group.add_argument(
        '--dxl-port',
        type=Path,
        help="symlink to the Dynamixel PTY; default: the model's serial port",
    )
    group.add_argument('--no-dxl', action='store_true', help='simulate no Dynamixels')
    group.add_argument(
        '--dxl-return-delay-us',
        type=float,
        default=500.0,
        help='Dynamixel Return Delay Time [us] (default 500)',
    )


def _add_fault_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('faults')
    group.add_argument(
        '--fault',
        action='append',
        default=[],
        metavar='JOINT:KIND[=VALUE]',
        help='inject a fault at start (repeatable); kinds: '
        + ', '.join(kind.value for kind in FaultKind),
    )
    group.add_argument(
        '--control-stdin', action='store_true', help='read fault/clear/faults commands from stdin'
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('impacts and ROS')
    group.add_argument(
        '--impacts-jsonl', type=Path, help='append one JSON line per detected impact to this file'
    )
    group.add_argument(
        '--capture',
        type=Path,
        help='write every frame and serial block the controller sends to this file '
        '(candump -l format; phil wire-check reads it)',
    )
    group.add_argument(
        '--ros',
        action='store_true',
        help='publish /phil/sim/impacts and /phil/sim/joint_states from a separate ROS process',
    )
    group.add_argument(
        '--joint-state-hz',
        type=float,
        default=100.0,
        help='rate of /phil/sim/joint_states with --ros [Hz]',
    )
