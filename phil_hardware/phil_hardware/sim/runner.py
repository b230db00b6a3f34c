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
import faulthandler
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
from phil_hardware.core.wire_check import CaptureWriter
from phil_hardware.sim.config import SimConfig
from phil_hardware.sim.faults import InjectedFault, parse_fault_spec, parse_kind
from phil_hardware.sim.impacts import Impact
from phil_hardware.sim.multicast import check_channel
from phil_hardware.sim.pty_port import PtyPort
from phil_hardware.sim.robot import SimulatedRobot
from phil_hardware.sim.runner_options import build_parser

_LOG = logging.getLogger('phil_hardware.sim')
READY_LINE = 'device simulator ready'
#: Longest stop after the stop signal [s]; below the launcher's SIGKILL (15 s).
TEARDOWN_LIMIT_S = 12.0


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
        model, channels, faults, config = _settings(args)
    except (DescriptionError, ValueError) as error:
        _emit(sys.stderr, f'device_simulator: {error}')
        return 2
    with ExitStack() as stack:
        try:
            buses = _open_can_buses(stack, model, channels, args.can_port)
            pty = _open_dxl_pty(stack, model, args)
            robot = SimulatedRobot(model, buses, pty, config=config)
            for joint, fault in faults:
                robot.set_fault(joint, fault.kind, fault.value)
        except (can.CanError, TransportError, OSError, KeyError, ValueError) as error:
            _emit(sys.stderr, f'device_simulator: cannot start: {error}')
            return 1
        _print_served(out, robot, model, channels, pty)
        if args.impacts_jsonl:
            _append_impacts_to(stack, robot, args.impacts_jsonl)
        if args.capture:
            # Closed after the loop stopped (callbacks run in reverse order).
            robot.wire_capture = CaptureWriter(args.capture.open('w', encoding='ascii'))
            stack.callback(robot.wire_capture.close)
        if args.ros:
            _start_ros_bridge(stack, robot, model, config, args.joint_state_hz, stop)
        if args.nice:
            _set_niceness(args.nice)  # before robot.start(): its loop thread inherits it
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
        # Left armed through the interpreter's exit: a hang in the teardown or in an exit
        # handler leaves every thread's stack in the log, before the launcher's SIGKILL.
        faulthandler.dump_traceback_later(TEARDOWN_LIMIT_S, exit=True)
    return 0


def _settings(
    args: argparse.Namespace,
) -> tuple[RobotModel, dict[str, str], list[tuple[str, InjectedFault]], SimConfig]:
    """The model, the CAN channels, the start faults and the configuration from the options.

    Raises:
        DescriptionError: If the robot description cannot be loaded.
        ValueError: Naming the first invalid option.
    """
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
        epos4=replace(base.epos4, pdo_layout=args.epos4_pdo_layout),
    )
    return model, channels, faults, config


def _open_can_buses(
    stack: ExitStack, model: RobotModel, channels: dict[str, str], port: int | None
) -> dict[str, can.BusABC]:
    """One bus per CAN bus of the model on its channel, shut down when ``stack`` closes."""
    buses = {}
    kwargs = {} if port is None else {'port': port}
    for name, params in model.hardware.can_buses.items():
        bus = open_can_bus(replace(params, channel=channels[name]), **kwargs)
        stack.callback(bus.shutdown)
        buses[name] = bus
    return buses


def _open_dxl_pty(stack: ExitStack, model: RobotModel, args: argparse.Namespace) -> PtyPort | None:
    """The Dynamixel line's PTY (closed with ``stack``), or None without Dynamixels."""
    serial_buses = model.hardware.serial_buses
    if args.no_dxl or not serial_buses:
        return None
    link = args.dxl_port or Path(next(iter(serial_buses.values())).port)
    return stack.enter_context(PtyPort(link))


def _print_served(
    out: TextIO,
    robot: SimulatedRobot,
    model: RobotModel,
    channels: dict[str, str],
    pty: PtyPort | None,
) -> None:
    """One line per bus: where it is and which devices it serves."""
    serves = robot.serves()
    for name, params in model.hardware.can_buses.items():
        served = ', '.join(serves.get(name, [])) or 'nothing'
        _emit(out, f'{name}: {params.interface} {channels[name]} serves {served}')
    if pty is not None:
        for name in model.hardware.serial_buses:
            served = ', '.join(serves.get(name, [])) or 'nothing'
            _emit(out, f'{name}: {pty.slave_path} (link {pty.link_path}) serves {served}')


def _append_impacts_to(stack: ExitStack, robot: SimulatedRobot, path: Path) -> None:
    """Append one JSON line per impact to ``path`` (closed with ``stack``)."""
    jsonl = stack.enter_context(path.open('a', encoding='utf-8'))

    def write_impact(impact: Impact) -> None:
        jsonl.write(json.dumps(_impact_record(impact)) + '\n')
        jsonl.flush()

    robot.add_impact_listener(write_impact)


def _start_ros_bridge(
    stack: ExitStack,
    robot: SimulatedRobot,
    model: RobotModel,
    config: SimConfig,
    joint_state_hz: float,
    stop: threading.Event,
) -> None:
    """Publish impacts and sampled joint states from the ROS process (stopped with ``stack``)."""
    from phil_hardware.sim.ros_bridge import RosBridge  # rclpy only when asked for

    bridge = RosBridge(model.joint_names, config.impacts)
    bridge.start()
    stack.callback(bridge.stop)
    robot.add_impact_listener(
        lambda impact: bridge.publish_impact(impact, _impact_record(impact)['wall_time_s'])
    )
    bridge.sample_joint_states(robot, joint_state_hz, stop)


def _set_niceness(nice: int) -> None:
    """Set the process's niceness; when refused, say so and run at normal priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError as error:
        _emit(
            sys.stderr,
            f'device_simulator: niceness {nice} refused ({error}); running at normal priority',
        )


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
