"""Process entry of the device simulator: ``python -m phil_hardware.sim [options]``.

Loads the simulated robot model (``default_robot_model(sim=True)`` or ``--urdf``), opens one
python-can bus per CAN bus of the model (``udp_multicast`` on IPv6 interface-local groups) and a
PTY for the Dynamixels (symlinked to the model's port), runs every device in one loop, prints one
line per bus with what it serves and then ``device simulator ready``, and stops cleanly on
SIGINT/SIGTERM with exit code 0.

Manual fault tests: ``--fault right_elbow:over_current`` at start, or ``--control-stdin`` and
then lines ``fault <joint> <kind> [value]``, ``clear <joint> [kind]``, ``faults`` on stdin.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TextIO

import can

from phil_description.core import (
    DescriptionError,
    RobotModel,
    default_robot_model,
    load_robot_model,
)
from phil_hardware.core.transport import TransportError, open_can_bus
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.faults import FaultKind, parse_fault_spec, parse_kind
from phil_hardware.sim.impacts import Impact
from phil_hardware.sim.multicast import check_channel
from phil_hardware.sim.pty_port import PtyPort
from phil_hardware.sim.robot import SimulatedRobot

_LOG = logging.getLogger('phil_hardware.sim')
READY_LINE = 'device simulator ready'


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
    parser.add_argument(
        '--can-channel-base',
        metavar='GROUP',
        help='IPv6 multicast group of the first CAN bus; the others follow '
        '(+1, +2, ...) in model order, e.g. ff11::7068:6a00',
    )
    parser.add_argument(
        '--can-channel',
        action='append',
        default=[],
        metavar='BUS=GROUP',
        help='channel of one CAN bus (repeatable; overrides the base)',
    )
    parser.add_argument(
        '--can-port',
        type=int,
        help='UDP port of the udp_multicast buses (default: python-can 43113)',
    )
    parser.add_argument(
        '--dxl-port',
        type=Path,
        help="symlink to the Dynamixel PTY; default: the model's serial port",
    )
    parser.add_argument('--no-dxl', action='store_true', help='simulate no Dynamixels')
    parser.add_argument(
        '--status-hz',
        type=float,
        default=200.0,
        help='TMotor status broadcast rate [Hz] (default 200)',
    )
    parser.add_argument(
        '--status-extended-id',
        action='store_true',
        help='send TMotor status with the extended id node | 0x29 << 8',
    )
    parser.add_argument(
        '--dxl-return-delay-us',
        type=float,
        default=500.0,
        help='Dynamixel Return Delay Time [us] (default 500)',
    )
    parser.add_argument(
        '--impacts-jsonl', type=Path, help='append one JSON line per detected impact to this file'
    )
    parser.add_argument(
        '--fault',
        action='append',
        default=[],
        metavar='JOINT:KIND[=VALUE]',
        help='inject a fault at start (repeatable); kinds: '
        + ', '.join(kind.value for kind in FaultKind),
    )
    parser.add_argument(
        '--control-stdin', action='store_true', help='read fault/clear/faults commands from stdin'
    )
    parser.add_argument(
        '--ros',
        action='store_true',
        help='publish /phil/sim/impacts and /phil/sim/joint_states from a separate ROS process',
    )
    parser.add_argument(
        '--joint-state-hz',
        type=float,
        default=100.0,
        help='rate of /phil/sim/joint_states with --ros [Hz]',
    )
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


def can_channels(model: RobotModel, base: str | None, overrides: Sequence[str]) -> dict[str, str]:
    """Channel per CAN bus: the model's, then ``base + index``, then explicit overrides.

    Raises:
        ValueError: On a malformed override, an unknown bus or a bad base address.
    """
    channels = {name: params.channel for name, params in model.hardware.can_buses.items()}
    if base is not None:
        try:
            first = ipaddress.IPv6Address(base)
        except ValueError:
            raise ValueError(f'--can-channel-base {base!r} is not an IPv6 address') from None
        channels = {name: str(first + index) for index, name in enumerate(channels)}
    for item in overrides:
        bus, separator, channel = item.partition('=')
        if not separator or bus not in channels:
            raise ValueError(
                f'--can-channel {item!r} must be BUS=GROUP with BUS one of {", ".join(channels)}'
            )
        channels[bus] = channel
    return channels


def _emit(stream: TextIO, text: str) -> None:
    """Write one line and flush (the runner's output is read by people and by tests)."""
    stream.write(text + '\n')
    stream.flush()


def _impact_record(impact: Impact) -> dict:
    record = impact.as_dict()
    record['wall_time_s'] = time.time() - (time.monotonic() - impact.time_s)
    return record


def _control_loop(robot: SimulatedRobot, stream: TextIO, out: TextIO) -> None:
    """Serve stdin commands until EOF: fault/clear/faults."""
    for line in stream:
        words = line.split()
        try:
            if not words:
                continue
            if words[0] == 'fault' and len(words) in (3, 4):
                value = float(words[3]) if len(words) == 4 else None
                fault = robot.set_fault(words[1], words[2], value)
                _emit(out, f'ok fault {words[1]} {fault.kind.value}')
            elif words[0] == 'clear' and len(words) in (2, 3):
                robot.clear_fault(words[1], parse_kind(words[2]) if len(words) == 3 else None)
                _emit(out, f'ok clear {" ".join(words[1:])}')
            elif words[0] == 'faults':
                active = {
                    name: [f.kind.value for f in device.faults.active()]
                    for name, device in robot.devices.items()
                    if device.faults.active()
                }
                _emit(out, f'ok faults {json.dumps(active)}')
            else:
                raise ValueError(
                    'commands: fault <joint> <kind> [value] | clear <joint> [kind] | faults'
                )
        except (KeyError, ValueError) as error:
            _emit(out, f'error {line.strip()!r}: {error}')


def run(args: argparse.Namespace, stop: threading.Event, out: TextIO = sys.stdout) -> int:
    """Build everything from parsed arguments, serve until ``stop`` is set, clean up."""
    try:
        model = (
            load_robot_model(args.urdf, xacro_args={'sim': 'true'})
            if args.urdf
            else default_robot_model(sim=True)
        )
        channels = can_channels(model, args.can_channel_base, args.can_channel)
        for name, params in model.hardware.can_buses.items():
            check_channel(name, params.interface, channels[name])
        if args.can_port is not None and not 0 < args.can_port < 65536:
            raise ValueError(f'--can-port {args.can_port} is not a UDP port')
        faults = [parse_fault_spec(text) for text in args.fault]
        if not args.status_hz > 0:
            raise ValueError('--status-hz must be > 0')
        base = SimConfig()
        config = replace(
            base,
            tmotor=replace(
                base.tmotor,
                status_period_s=1.0 / args.status_hz,
                status_extended_id=args.status_extended_id,
            ),
            dynamixel=replace(base.dynamixel, return_delay_s=args.dxl_return_delay_us * 1e-6),
        )
    except (DescriptionError, ValueError) as error:
        _emit(sys.stderr, f'device_simulator: {error}')
        return 2
    with ExitStack() as stack:
        try:
            buses = {}
            kwargs = {} if args.can_port is None else {'port': args.can_port}
            for name, params in model.hardware.can_buses.items():
                bus = open_can_bus(replace(params, channel=channels[name]), **kwargs)
                stack.callback(bus.shutdown)
                buses[name] = bus
            pty = None
            serial_buses = model.hardware.serial_buses
            if not args.no_dxl and serial_buses:
                link = args.dxl_port or Path(next(iter(serial_buses.values())).port)
                pty = stack.enter_context(PtyPort(link))
            robot = SimulatedRobot(model, buses, pty, config=config)
            for joint, fault in faults:
                robot.set_fault(joint, fault.kind, fault.value)
        except (can.CanError, TransportError, OSError, KeyError, ValueError) as error:
            _emit(sys.stderr, f'device_simulator: cannot start: {error}')
            return 1
        serves = robot.serves()
        for name in buses:
            served = ', '.join(serves.get(name, [])) or 'nothing'
            interface = model.hardware.can_buses[name].interface
            _emit(out, f'{name}: {interface} {channels[name]} serves {served}')
        if pty is not None:
            for name in serial_buses:
                served = ', '.join(serves.get(name, [])) or 'nothing'
                _emit(out, f'{name}: {pty.slave_path} (link {pty.link_path}) serves {served}')
        if args.impacts_jsonl:
            jsonl = stack.enter_context(args.impacts_jsonl.open('a', encoding='utf-8'))

            def write_impact(impact: Impact) -> None:
                jsonl.write(json.dumps(_impact_record(impact)) + '\n')
                jsonl.flush()

            robot.add_impact_listener(write_impact)
        if args.ros:
            from phil_hardware.sim.ros_bridge import RosBridge  # rclpy only when asked for

            bridge = RosBridge(model.joint_names, config.impacts)
            bridge.start()
            stack.callback(bridge.stop)
            robot.add_impact_listener(
                lambda impact: bridge.publish_impact(impact, _impact_record(impact)['wall_time_s'])
            )
            bridge.sample_joint_states(robot, args.joint_state_hz, stop)
        if args.nice:
            try:  # before robot.start(): its loop thread inherits the niceness
                os.setpriority(os.PRIO_PROCESS, 0, args.nice)
            except OSError as error:
                _emit(
                    sys.stderr,
                    f'device_simulator: niceness {args.nice} refused ({error}); '
                    'running at normal priority',
                )
        robot.start()
        stack.callback(robot.stop)
        if args.control_stdin:
            threading.Thread(
                target=_control_loop,
                args=(robot, sys.stdin, out),
                name='phil-sim-control',
                daemon=True,
            ).start()
        _emit(out, READY_LINE)
        stop.wait()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format='%(asctime)s %(levelname)s %(name)s: %(message)s'
    )
    stop = threading.Event()
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    stop_on_signals(stop, stop_signals)
    code = run(args, stop)
    for signum in stop_signals:  # stopped already: a late Ctrl-C must not kill the exit
        signal.signal(signum, signal.SIG_IGN)
    return code


def stop_on_signals(stop: threading.Event, signals: Sequence[signal.Signals]) -> None:
    """Set ``stop`` when one of ``signals`` arrives, however often and whenever they come.

    Call it from the main thread. Python's own C-level handler writes each signal's number to a
    wake-up socket, whatever thread the kernel picked and whatever the main thread was doing; a
    thread of its own reads the socket and sets the Event. Setting the Event in a Python handler
    instead deadlocks on the Event's lock when a signal lands while the main thread holds it (in
    ``stop.wait`` or in an earlier handler's ``set``).
    """
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    wanted = {int(signum) for signum in signals}
    for signum in signals:
        signal.signal(signum, lambda number, frame: None)  # the wake-up byte does the work

    def wait_for_signals() -> None:
        with reader, writer:
            while True:
                received = reader.recv(64)
                if not received:
                    return
                if wanted.intersection(received):
                    stop.set()

    threading.Thread(target=wait_for_signals, name='phil-sim-signals', daemon=True).start()


if __name__ == '__main__':
    sys.exit(main())
