"""`phil bringup-can`: the plan (pure) and the command, run against a fake `ip` and `uhubctl`
on PATH that keep the interfaces' state in a file and log every call, so the exact commands
and their order are checked; also a machine without CAN and a process without CAP_NET_ADMIN."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from workspace import ROOT

from phil_bringup.core.can_bringup import (
    AdapterTable,
    BringupError,
    CanInterfaceSettings,
    InterfaceState,
    UsbHub,
    has_net_admin,
    load_adapter_table,
    parse_ip_links,
    plan_configure,
    plan_reset,
)

SHIPPED_TABLE = ROOT / 'phil_bringup' / 'config' / 'can_adapters.yaml'
UPSTREAM_TABLE = (
    ROOT.parent
    / 'shared/reference/upstream/Phil-drum-robot@176f39a/drumrobot_server/config/can_ports.json'
)
WANTED = [CanInterfaceSettings(f'can{i}', 1_000_000, 100, 1000) for i in range(4)]
RIGHT = {
    'bitrate': 1_000_000,
    'restart_ms': 100,
    'txqueuelen': 1000,
    'up': True,
    'kind': 'can',
    'can_state': 'ERROR-ACTIVE',
}


def _configure_commands(name: str) -> list[list[str]]:
    return [
        ['ip', 'link', 'set', name, 'down'],
        ['ip', 'link', 'set', name, 'type', 'can', 'bitrate', '1000000', 'restart-ms', '100'],
        ['ip', 'link', 'set', name, 'txqueuelen', '1000'],
        ['ip', 'link', 'set', name, 'up'],
    ]


# --- the plan -----------------------------------------------------------------------------


def test_the_shipped_adapter_table_is_upstreams_host_table():
    table = load_adapter_table(SHIPPED_TABLE)
    assert table.hosts['shy-desktop'] == UsbHub('1-4', (1, 2, 3, 4))
    assert table.hosts['shy-MINIPC-VC66-C2'] == UsbHub('1-6.1', (1,))
    assert table.hosts['shy'] == UsbHub('', ())
    assert table.settle_s == 2.0
    if UPSTREAM_TABLE.is_file():
        machines = json.loads(UPSTREAM_TABLE.read_text())['machines']
        assert {
            host: UsbHub(entry['hub'], tuple(entry['ports'])) for host, entry in machines.items()
        } == dict(table.hosts)


@pytest.mark.parametrize(
    ('text', 'said'),
    [
        ('hosts: [a, b]', "needs a 'hosts' mapping"),
        ('hosts: {pc: {hub: "1-4"}}', "hosts.pc: needs exactly 'hub'"),
        ('hosts: {pc: {hub: 14, ports: [1]}}', 'hosts.pc.hub: a uhubctl location'),
        ('hosts: {pc: {hub: "1-4", ports: [0]}}', 'hosts.pc.ports: a list of port numbers'),
        ('hosts: {pc: {hub: "1-4", ports: []}}', 'hosts.pc: a hub needs ports'),
        ('hosts: {}\nsettle_s: -1', 'settle_s must be a number of seconds >= 0'),
        ('hosts: {pc: [', 'cannot read the adapter table'),
    ],
)
def test_a_bad_adapter_table_is_refused_naming_the_file_and_key(tmp_path, text, said):
    path = tmp_path / 'adapters.yaml'
    path.write_text(text)
    with pytest.raises(BringupError) as refused:
        load_adapter_table(path)
    assert str(refused.value).startswith(f'{path}: ')
    assert said in str(refused.value)


def test_a_listed_host_power_cycles_its_adapters_off_then_on():
    table = AdapterTable({'pc': UsbHub('1-4', (1, 2)), 'bare': UsbHub('', ())}, settle_s=2.0)
    steps = plan_reset('pc', table)
    assert [(step.command, step.wait_s) for step in steps] == [
        (('uhubctl', '-l', '1-4', '-p', '1', '-a', 'off'), 0.0),
        (('uhubctl', '-l', '1-4', '-p', '2', '-a', 'off'), 0.0),
        ((), 2.0),
        (('uhubctl', '-l', '1-4', '-p', '1', '-a', 'on'), 0.0),
        (('uhubctl', '-l', '1-4', '-p', '2', '-a', 'on'), 0.0),
        ((), 2.0),
    ]
    assert plan_reset('bare', table) == [] and plan_reset('elsewhere', table) == []


def test_only_the_interfaces_not_already_right_are_configured():
    present = {
        'can0': InterfaceState('can0', **RIGHT),
        'can1': InterfaceState('can1', **{**RIGHT, 'restart_ms': 0}),
        'can2': InterfaceState('can2', **{**RIGHT, 'up': False}),
        'can3': InterfaceState('can3', **{**RIGHT, 'txqueuelen': 10}),
    }
    plan = plan_configure(WANTED, present, settle_s=1.5)
    assert [list(step.command) for step in plan.steps if step.command] == [
        *_configure_commands('can1'),
        *_configure_commands('can2'),
        *_configure_commands('can3'),
    ]
    assert plan.steps[-1].wait_s == 1.5
    assert plan.unchanged == [
        'can0: already up, 1000000 bit/s, restart-ms 100, txqueuelen 1000, ERROR-ACTIVE'
    ]
    assert plan_configure(WANTED[:1], present, settle_s=1.5).steps == []


def test_a_missing_or_non_can_interface_is_refused_by_name():
    with pytest.raises(BringupError) as refused:
        plan_configure(WANTED, {'lo': InterfaceState('lo', True, '')}, 2.0, 'pc', 'table.yaml')
    assert str(refused.value).startswith(
        'no interface can0, can1, can2, can3 on this machine (no CAN interface at all here)'
    )
    assert 'list this host (pc) with their hub and ports in table.yaml' in str(refused.value)
    present = {f'can{i}': InterfaceState(f'can{i}', **RIGHT) for i in range(4)}
    present['can2'] = InterfaceState('can2', True, 'vcan')
    with pytest.raises(BringupError, match='can2 is a vcan interface, but the URDF names it'):
        plan_configure(WANTED, present, 2.0)


def test_ip_json_is_read_into_interface_states():
    text = json.dumps([
        {'ifname': 'lo', 'flags': ['LOOPBACK', 'UP'], 'txqlen': 1000},
        {
            'ifname': 'can0',
            'flags': ['NOARP', 'UP', 'LOWER_UP', 'ECHO'],
            'txqlen': 1000,
            'linkinfo': {
                'info_kind': 'can',
                'info_data': {
                    'state': 'ERROR-ACTIVE',
                    'restart_ms': 100,
                    'bittiming': {'bitrate': 1000000, 'sample_point': '0.875'},
                },
            },
        },
        {'ifname': 'can1', 'flags': ['ECHO'], 'txqlen': 10, 'linkinfo': {'info_kind': 'can'}},
    ])  # fmt: skip
    links = parse_ip_links(text)
    assert links['can0'] == InterfaceState('can0', **RIGHT)
    assert links['can1'] == InterfaceState('can1', False, 'can', None, None, 10, '')
    assert links['lo'].kind == '' and links['lo'].up
    with pytest.raises(BringupError, match='not JSON'):
        parse_ip_links('can0: <NOARP,UP>')


def test_net_admin_is_read_from_the_effective_capabilities():
    assert has_net_admin('Name:\tx\nCapEff:\t000001ffffffffff\n')
    assert not has_net_admin('CapEff:\t000001fffeffefff\n')  # everything but CAP_NET_ADMIN
    assert not has_net_admin('CapEff:\t0000000000000000\n')
    assert not has_net_admin('Name:\tx\n')


# --- the command against a fake ip and uhubctl ----------------------------------------------

FAKE_IP = textwrap.dedent("""
    import json, os, sys
    state_path = os.environ['FAKE_NET_STATE']
    state = json.load(open(state_path))
    with open(os.environ['FAKE_NET_LOG'], 'a') as log:
        log.write(json.dumps(['ip', *sys.argv[1:]]) + '\\n')
    args = sys.argv[1:]
    if args == ['-details', '-statistics', '-json', 'link', 'show']:
        links = []
        for name, link in state['links'].items():
            info = {'info_kind': link['kind']}
            if link.get('bitrate'):
                info['info_data'] = {'state': 'ERROR-ACTIVE', 'restart_ms': link['restart_ms'],
                                     'bittiming': {'bitrate': link['bitrate']}}
            links.append({'ifname': name, 'flags': ['UP'] if link['up'] else [],
                          'txqlen': link['txqlen'], 'linkinfo': info})
        print(json.dumps(links))
        sys.exit(0)
    name, rest = args[2], args[3:]
    link = state['links'].get(name)
    if link is None:
        sys.exit(f'Cannot find device "{name}"')
    if rest in (['up'], ['down']):
        link['up'] = rest == ['up']
    elif rest[:2] == ['type', 'can']:
        if link['up']:
            sys.exit('RTNETLINK answers: Device or resource busy')
        link['bitrate'], link['restart_ms'] = int(rest[3]), int(rest[5])
    elif rest[0] == 'txqueuelen':
        link['txqlen'] = int(rest[1])
    json.dump(state, open(state_path, 'w'))
""")

FAKE_UHUBCTL = textwrap.dedent("""
    import json, os, sys
    state_path = os.environ['FAKE_NET_STATE']
    state = json.load(open(state_path))
    with open(os.environ['FAKE_NET_LOG'], 'a') as log:
        log.write(json.dumps(['uhubctl', *sys.argv[1:]]) + '\\n')
    # Powered off, the adapters' interfaces vanish; powered on, they come back new and down.
    if sys.argv[-1] == 'off':
        state['links'] = {n: l for n, l in state['links'].items() if l['kind'] != 'can'}
    else:
        for i in range(4):
            state['links'][f'can{i}'] = {'kind': 'can', 'up': False, 'txqlen': 10}
    json.dump(state, open(state_path, 'w'))
""")


def _fake_machine(tmp_path: Path, links: dict) -> dict[str, str]:
    """A bin folder with the fakes first on PATH, and the state they share."""
    fakes = tmp_path / 'bin'
    fakes.mkdir()
    for name, source in (('ip', FAKE_IP), ('uhubctl', FAKE_UHUBCTL)):
        script = fakes / name
        script.write_text(f'#!{sys.executable}\n{source}')
        script.chmod(0o755)
    (tmp_path / 'state.json').write_text(json.dumps({'links': links}))
    (tmp_path / 'adapters.yaml').write_text(
        "hosts:\n  robot-pc: {hub: '1-4', ports: [1, 2]}\n  bare-pc: {hub: '', ports: []}\n"
        'settle_s: 0\n'
    )
    return {
        **os.environ,
        'PATH': f'{fakes}{os.pathsep}{os.environ["PATH"]}',
        'FAKE_NET_STATE': str(tmp_path / 'state.json'),
        'FAKE_NET_LOG': str(tmp_path / 'calls.log'),
    }


def _phil(tmp_path: Path, env: dict, *args: str, prefix: tuple[str, ...] = ()):
    command = [*prefix, sys.executable, '-m', 'phil_bringup.cli.main', 'bringup-can']
    command += ['--adapters', str(tmp_path / 'adapters.yaml'), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    log = tmp_path / 'calls.log'
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def _can(up: bool, bitrate: int | None = None, restart_ms: int = 0, txqlen: int = 10) -> dict:
    link = {'kind': 'can', 'up': up, 'bitrate': bitrate, 'restart_ms': restart_ms}
    return {**link, 'txqlen': txqlen}


LOOPBACK = {'lo': {'kind': '', 'up': True, 'txqlen': 1000}}
SHOW = ['ip', '-details', '-statistics', '-json', 'link', 'show']


def test_a_listed_host_gets_its_adapters_reset_then_every_interface_configured(tmp_path):
    # Up, but at 500 kbit/s: after the reset every interface is new and gets configured.
    links = {**LOOPBACK, **{f'can{i}': _can(True, 500_000, 100, 1000) for i in range(4)}}
    env = _fake_machine(tmp_path, links)
    done, calls = _phil(tmp_path, env, '--host', 'robot-pc')
    assert done.returncode == 0, done.stderr
    assert calls == [
        ['uhubctl', '-l', '1-4', '-p', '1', '-a', 'off'],
        ['uhubctl', '-l', '1-4', '-p', '2', '-a', 'off'],
        ['uhubctl', '-l', '1-4', '-p', '1', '-a', 'on'],
        ['uhubctl', '-l', '1-4', '-p', '2', '-a', 'on'],
        SHOW,
        *[command for i in range(4) for command in _configure_commands(f'can{i}')],
        SHOW,
    ]
    assert 'run: uhubctl -l 1-4 -p 1 -a off  # power off the USB-CAN adapter' in done.stdout
    assert done.stdout.rstrip().endswith('CAN ready: can0, can1, can2, can3')


def test_interfaces_already_right_are_left_alone(tmp_path):
    links = {**LOOPBACK, 'can0': _can(True, 1_000_000, 100, 1000), 'can1': _can(False)}
    links |= {'can2': _can(True, 1_000_000, 100, 1000), 'can3': _can(True, 1_000_000, 0, 1000)}
    env = _fake_machine(tmp_path, links)
    done, calls = _phil(tmp_path, env, '--host', 'bare-pc')
    assert done.returncode == 0, done.stderr
    assert calls == [SHOW, *_configure_commands('can1'), *_configure_commands('can3'), SHOW]
    assert 'adapter reset: none (bare-pc has no adapters to reset in' in done.stdout
    assert 'can0: already up, 1000000 bit/s, restart-ms 100, txqueuelen 1000' in done.stdout


def test_a_dry_run_only_reads(tmp_path):
    env = _fake_machine(tmp_path, {**LOOPBACK, **{f'can{i}': _can(False) for i in range(4)}})
    done, calls = _phil(tmp_path, env, '--host', 'robot-pc', '--dry-run')
    assert done.returncode == 0, done.stderr
    assert calls == [SHOW]
    assert 'would run: uhubctl -l 1-4 -p 2 -a on' in done.stdout
    assert 'would run: ip link set can3 type can bitrate 1000000 restart-ms 100' in done.stdout


def test_a_machine_without_can_gets_a_clear_message_and_no_traceback(tmp_path):
    env = _fake_machine(tmp_path, LOOPBACK)
    done, calls = _phil(tmp_path, env, '--host', 'laptop')
    assert done.returncode == 1
    assert calls == [SHOW]
    assert 'no interface can0, can1, can2, can3 on this machine (no CAN interface' in done.stderr
    assert 'Traceback' not in done.stderr + done.stdout


@pytest.mark.skipif(shutil.which('setpriv') is None, reason='needs setpriv (util-linux)')
def test_without_net_admin_it_says_so_and_runs_nothing(tmp_path):
    env = _fake_machine(tmp_path, {**LOOPBACK, 'can0': _can(False)})
    drop = ('setpriv', '--inh-caps', '-net_admin', '--bounding-set', '-net_admin')
    done, calls = _phil(tmp_path, env, '--host', 'robot-pc', prefix=drop)
    assert done.returncode == 2
    assert calls == []
    assert 'needs root (CAP_NET_ADMIN); run `sudo phil bringup-can`' in done.stderr


def test_the_launcher_starts_nothing_when_the_interfaces_cannot_come_up(tmp_path):
    env = _fake_machine(tmp_path, LOOPBACK)
    launcher = [sys.executable, '-m', 'phil_bringup.launcher']
    refused = subprocess.run(
        [*launcher, '--bringup-can'], env=env, capture_output=True, text=True, timeout=60
    )
    assert (
        refused.returncode == 2
        and '--bringup-can' in refused.stderr
        and 'needs --real' in (refused.stderr)
    )
    done = subprocess.run(
        [*launcher, '--real', '--bringup-can'], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert 'no interface can0' in done.stderr and 'not starting' in done.stderr
    assert '[phil] started' not in done.stdout
