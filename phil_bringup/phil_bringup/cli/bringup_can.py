"""`phil bringup-can`: power-cycle the USB-CAN adapters and bring the URDF's CAN interfaces up.

What it runs is decided by ``core/can_bringup.py``; this module reads the machine (host name,
capabilities, ``ip -details -json link show``), runs the steps and prints each one. Every
command it runs goes through ``run_command`` so tests can watch them (they put a fake ``ip``
and ``uhubctl`` on PATH).
"""

from __future__ import annotations

import argparse
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from phil_bringup.core.can_bringup import (
    IP_LINKS,
    BringupError,
    CanInterfaceSettings,
    Step,
    has_net_admin,
    load_adapter_table,
    misconfigured,
    parse_ip_links,
    plan_configure,
    plan_reset,
)

ADAPTER_TABLE = 'can_adapters.yaml'  # in phil_bringup's config folder
COMMAND_TIMEOUT_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        '--dry-run', action='store_true', help='print what would be run, change nothing'
    )
    parser.add_argument(
        '--no-reset', action='store_true', help='do not power-cycle the USB-CAN adapters'
    )
    parser.add_argument(
        '--host', default=None, help="this machine's name in the adapter table (default: its own)"
    )
    parser.add_argument(
        '--adapters',
        type=Path,
        default=None,
        metavar='YAML',
        help=f'adapter table (default: phil_bringup/config/{ADAPTER_TABLE})',
    )


def default_arguments() -> argparse.Namespace:
    """The arguments of a plain ``phil bringup-can`` (the launcher's ``--bringup-can``)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([])


def wanted_interfaces() -> list[CanInterfaceSettings]:
    """The robot's SocketCAN buses and their settings, from the URDF (real robot)."""
    from phil_description.core import default_robot_model

    hardware = default_robot_model(sim=False).hardware
    return [
        CanInterfaceSettings(bus.channel, bus.bitrate, bus.restart_ms, bus.txqueuelen)
        for bus in hardware.can_buses.values()
        if bus.interface == 'socketcan'
    ]


def run_command(command: tuple[str, ...]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise BringupError(f'{command[0]}: not installed ({_install_hint(command[0])})') from None
    except subprocess.TimeoutExpired:
        waited = f'{COMMAND_TIMEOUT_S:.0f} s'
        raise BringupError(f'{shlex.join(command)}: no answer in {waited}') from None


def bringup_can(
    args: argparse.Namespace,
    run: Callable[[tuple[str, ...]], subprocess.CompletedProcess] = run_command,
    sleep: Callable[[float], None] = time.sleep,
    proc_status: Path = Path('/proc/self/status'),
) -> int:
    """Carry out ``phil bringup-can``; 0 when every interface ended up right."""
    try:
        if not args.dry_run and not has_net_admin(proc_status.read_text()):
            print(
                'phil bringup-can: configuring CAN interfaces needs root (CAP_NET_ADMIN); run '
                '`sudo phil bringup-can`, or `phil bringup-can --dry-run` to see the commands',
                file=sys.stderr,
            )
            return 2
        from phil_bringup.process_commands import config_path

        table = load_adapter_table(args.adapters or config_path(ADAPTER_TABLE))
        host = args.host or socket.gethostname()
        wanted = wanted_interfaces()
        steps = [] if args.no_reset else plan_reset(host, table)
        if not steps:
            why = 'asked not to' if args.no_reset else f'{host} is not in {table.source}'
            if not args.no_reset and host in table.hosts:
                why = f'{host} has no adapters to reset in {table.source}'
            print(f'adapter reset: none ({why})')
        _carry_out(steps, run, sleep, args.dry_run)
        plan = plan_configure(wanted, read_links(run), table.settle_s, host, table.source)
        for line in plan.unchanged:
            print(line)
        _carry_out(plan.steps, run, sleep, args.dry_run)
        if args.dry_run:
            return 0
        problems = misconfigured(wanted, read_links(run))
    except BringupError as error:
        print(f'phil bringup-can: {error}', file=sys.stderr)
        return 1
    for problem in problems:
        print(f'phil bringup-can: still wrong: {problem}', file=sys.stderr)
    if not problems:
        print(f'CAN ready: {", ".join(bus.name for bus in wanted)}')
    return 1 if problems else 0


def read_links(run=run_command) -> dict:
    """The machine's interfaces (``ip -details -statistics -json link show``)."""
    done = run(IP_LINKS)
    if done.returncode != 0:
        raise BringupError(f'{shlex.join(IP_LINKS)} failed: {done.stderr.strip()}')
    return parse_ip_links(done.stdout)


def _carry_out(steps: list[Step], run, sleep, dry_run: bool) -> None:
    for step in steps:
        if not step.command:
            print(f'wait {step.wait_s:g} s: {step.reason}')
            if not dry_run:
                sleep(step.wait_s)
            continue
        print(f'{"would run" if dry_run else "run"}: {shlex.join(step.command)}  # {step.reason}')
        if dry_run:
            continue
        done = run(step.command)
        if done.returncode != 0:
            raise BringupError(
                f'{shlex.join(step.command)} failed (exit {done.returncode}): '
                f'{(done.stderr or done.stdout).strip() or "no message"}'
            )


def _install_hint(program: str) -> str:
    return {
        'uhubctl': 'sudo apt install uhubctl',
        'ip': 'sudo apt install iproute2',
    }.get(program, 'install it')
