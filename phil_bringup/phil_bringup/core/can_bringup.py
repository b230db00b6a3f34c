"""Bringing the robot's CAN interfaces up: what to run, decided from what the machine has.

ROS-free and pure: :func:`plan_reset` and :func:`plan_configure` turn the adapter table of this
host, the URDF's CAN buses and the interfaces ``ip -details -json link show`` reports into the
commands to run, in order; ``phil bringup-can`` (``cli/bringup_can.py``) runs them. The
sequence is upstream's start-up (power-cycle the USB-CAN adapters with ``uhubctl`` where the
host table says so, wait, then configure every CAN interface), with two changes: only the
interfaces the URDF names are touched, and one already up with the right settings is left
alone (taking it down would drop frames of a running graph).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CAP_NET_ADMIN = 12  # <linux/capability.h>


class BringupError(ValueError):
    """A bad adapter table or a machine the interfaces cannot be brought up on."""


@dataclass(frozen=True)
class CanInterfaceSettings:
    """What one CAN interface must be set to (from the URDF's ``<ros2_control>`` bus)."""

    name: str
    bitrate: int
    restart_ms: int
    txqueuelen: int


@dataclass(frozen=True)
class UsbHub:
    """The hub (``uhubctl -l``) and ports the host's USB-CAN adapters hang on."""

    location: str
    ports: tuple[int, ...]


@dataclass(frozen=True)
class AdapterTable:
    """Per host name, the adapters to power-cycle before bring-up (none: an empty hub)."""

    hosts: Mapping[str, UsbHub]
    settle_s: float  # after power off, after power on, and after the interfaces came up
    source: str = ''


@dataclass(frozen=True)
class InterfaceState:
    """One interface as ``ip -details -statistics -json link show`` reports it."""

    name: str
    up: bool
    kind: str  # 'can' for a CAN interface
    bitrate: int | None = None
    restart_ms: int | None = None
    txqueuelen: int | None = None
    can_state: str = ''  # ERROR-ACTIVE, ERROR-PASSIVE, BUS-OFF, STOPPED, ...
    # With -statistics: frames received / sent in error, the controller's error counters, and
    # how often it went bus-off (None: not reported).
    rx_errors: int | None = None
    tx_errors: int | None = None
    berr_rx: int | None = None
    berr_tx: int | None = None
    bus_off: int | None = None


@dataclass(frozen=True)
class Step:
    """One thing to do: run ``command`` (why: ``reason``), or wait ``wait_s``."""

    reason: str
    command: tuple[str, ...] = ()
    wait_s: float = 0.0


@dataclass
class Plan:
    """The steps, and what is already right (said, not done)."""

    steps: list[Step] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def load_adapter_table(path: Path) -> AdapterTable:
    """Read and check the adapter table; every error names the file and the key.

    Raises:
        BringupError: unreadable YAML, a missing key or a bad value.
    """
    where = str(path)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise BringupError(f'{where}: cannot read the adapter table: {error}') from None
    if not isinstance(document, dict) or not isinstance(document.get('hosts'), dict):
        raise BringupError(f"{where}: needs a 'hosts' mapping (host name -> hub and ports)")
    settle_s = document.get('settle_s', 2.0)
    if isinstance(settle_s, bool) or not isinstance(settle_s, (int, float)) or settle_s < 0:
        raise BringupError(f'{where}: settle_s must be a number of seconds >= 0, not {settle_s!r}')
    hosts = {}
    for host, entry in document['hosts'].items():
        key = f'{where}: hosts.{host}'
        if not isinstance(entry, dict) or set(entry) != {'hub', 'ports'}:
            raise BringupError(f"{key}: needs exactly 'hub' (e.g. '1-4') and 'ports' (a list)")
        hub, ports = entry['hub'], entry['ports']
        if not isinstance(hub, str):
            raise BringupError(f"{key}.hub: a uhubctl location such as '1-4', not {hub!r}")
        if not isinstance(ports, list) or not all(
            isinstance(port, int) and not isinstance(port, bool) and port > 0 for port in ports
        ):
            raise BringupError(f'{key}.ports: a list of port numbers >= 1, not {ports!r}')
        if bool(hub) != bool(ports):
            raise BringupError(f'{key}: a hub needs ports and ports need a hub')
        hosts[str(host)] = UsbHub(hub, tuple(ports))
    return AdapterTable(hosts=hosts, settle_s=float(settle_s), source=where)


IP_LINKS = ('ip', '-details', '-statistics', '-json', 'link', 'show')


def parse_ip_links(text: str) -> dict[str, InterfaceState]:
    """The interfaces of ``ip -details -statistics -json link show`` output, by name.

    Raises:
        BringupError: the text is not that command's JSON.
    """
    try:
        links = json.loads(text)
    except json.JSONDecodeError as error:
        raise BringupError(f'{" ".join(IP_LINKS)}: not JSON ({error})') from None
    if not isinstance(links, list):
        raise BringupError(f'{" ".join(IP_LINKS)}: expected a list of interfaces')
    states = {}
    for link in links:
        if not isinstance(link, dict) or 'ifname' not in link:
            continue
        info = link.get('linkinfo') or {}
        data = info.get('info_data') or {}
        timing = data.get('bittiming') or {}
        stats = link.get('stats64') or link.get('stats') or {}
        counters = data.get('berr_counter') or {}
        states[link['ifname']] = InterfaceState(
            name=link['ifname'],
            up='UP' in (link.get('flags') or []),
            kind=info.get('info_kind', ''),
            bitrate=timing.get('bitrate'),
            restart_ms=data.get('restart_ms'),
            txqueuelen=link.get('txqlen'),
            can_state=data.get('state', ''),
            rx_errors=(stats.get('rx') or {}).get('errors'),
            tx_errors=(stats.get('tx') or {}).get('errors'),
            berr_rx=counters.get('rx'),
            berr_tx=counters.get('tx'),
            bus_off=(info.get('info_xstats') or {}).get('bus_off'),
        )
    return states


def has_net_admin(proc_status: str) -> bool:
    """Whether the effective capabilities in ``/proc/<pid>/status`` text include
    CAP_NET_ADMIN (root has it unless it was dropped)."""
    for line in proc_status.splitlines():
        if line.startswith('CapEff:'):
            return bool(int(line.split()[1], 16) >> CAP_NET_ADMIN & 1)
    return False


def plan_reset(host: str, table: AdapterTable) -> list[Step]:
    """Power-cycle this host's USB-CAN adapters, as the table says (none: no step). The
    adapters come back as new interfaces, down; read them again before :func:`plan_configure`."""
    hub = table.hosts.get(host)
    if hub is None or not hub.ports:
        return []
    steps = []
    for action in ('off', 'on'):
        for port in hub.ports:
            steps.append(
                Step(
                    f'power {action} the USB-CAN adapter on hub {hub.location} port {port}',
                    ('uhubctl', '-l', hub.location, '-p', str(port), '-a', action),
                )
            )
        steps.append(Step(f'let the adapters power {action}', wait_s=table.settle_s))
    return steps


def plan_configure(
    wanted: Sequence[CanInterfaceSettings],
    present: Mapping[str, InterfaceState],
    settle_s: float,
    host: str = '',
    table_source: str = '',
) -> Plan:
    """The commands that give each of ``wanted`` its settings and bring it up; an interface
    already up with them is left alone.

    Raises:
        BringupError: a wanted interface is missing or is not a CAN interface.
    """
    missing = [bus.name for bus in wanted if bus.name not in present]
    if missing:
        table = f' in {table_source}' if table_source else ''
        raise BringupError(
            f'no interface {", ".join(missing)} on this machine ({_listing(present)}). '
            f'Check that the USB-CAN adapters are plugged in (`ip link show`); if they need a '
            f'power cycle, list this host ({host or "its host name"}) with their hub and '
            f'ports{table}'
        )
    plan = Plan()
    for bus in wanted:
        state = present[bus.name]
        if state.kind != 'can':
            raise BringupError(
                f'{bus.name} is a {state.kind or "non-CAN"} interface, but the URDF names it '
                f'as a CAN bus'
            )
        if not wrong_settings(state, bus):
            plan.unchanged.append(
                f'{bus.name}: already up, {bus.bitrate} bit/s, restart-ms {bus.restart_ms}, '
                f'txqueuelen {bus.txqueuelen}, {state.can_state or "state unknown"}'
            )
        else:
            plan.steps.extend(_configure(bus))
    if plan.steps:
        plan.steps.append(Step('let the interfaces come up', wait_s=settle_s))
    return plan


def misconfigured(
    wanted: Sequence[CanInterfaceSettings], present: Mapping[str, InterfaceState]
) -> list[str]:
    """What is still wrong after bring-up, one line per interface (empty: all right)."""
    problems = []
    for bus in wanted:
        state = present.get(bus.name)
        wrong = ['gone'] if state is None else wrong_settings(state, bus)
        if wrong:
            problems.append(f'{bus.name}: {"; ".join(wrong)}')
    return problems


def wrong_settings(state: InterfaceState, bus: CanInterfaceSettings) -> list[str]:
    """What differs from ``bus``'s settings, e.g. ``['down', 'bitrate should be 1000000']``."""
    wrong = [] if state.up else ['down']
    for name, have, want in (
        ('bitrate', state.bitrate, bus.bitrate),
        ('restart-ms', state.restart_ms, bus.restart_ms),
        ('txqueuelen', state.txqueuelen, bus.txqueuelen),
    ):
        if have != want:
            wrong.append(f'{name} should be {want}')
    return wrong


def _configure(bus: CanInterfaceSettings) -> list[Step]:
    name = bus.name
    return [
        Step(f'{name}: down, to change its settings', ('ip', 'link', 'set', name, 'down')),
        Step(
            f'{name}: {bus.bitrate} bit/s, restart {bus.restart_ms} ms after bus-off',
            (
                'ip',
                'link',
                'set',
                name,
                'type',
                'can',
                'bitrate',
                str(bus.bitrate),
                'restart-ms',
                str(bus.restart_ms),
            ),
        ),  # fmt: skip
        Step(
            f'{name}: transmit queue of {bus.txqueuelen} frames',
            ('ip', 'link', 'set', name, 'txqueuelen', str(bus.txqueuelen)),
        ),
        Step(f'{name}: up', ('ip', 'link', 'set', name, 'up')),
    ]


def _listing(present: Mapping[str, InterfaceState]) -> str:
    can = sorted(name for name, state in present.items() if state.kind == 'can')
    return f'CAN interfaces here: {", ".join(can)}' if can else 'no CAN interface at all here'
