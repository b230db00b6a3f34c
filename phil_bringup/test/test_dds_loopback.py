"""DDS stays on this machine: every socket of the running graph is bound to loopback, except
the simulated CAN buses' IPv6 sockets, which carry only interface-local multicast.

Also: the rules that choose the DDS transports (launcher, robot.launch.py and tools/env.sh
agree), and the /proc socket reader the graph test relies on.
"""

import inspect
import ipaddress
import os
import socket
import subprocess
import sys
import time

import pytest
from workspace import ROOT

from phil_bringup.core.dds_scope import (
    LOCALHOST_ONLY_VARIABLE,
    PROFILE_VARIABLES,
    RANGE_VARIABLE,
    dds_scope,
    is_loopback_profile,
)
from phil_bringup.testing.sockets import (
    BoundSocket,
    decode_address,
    parse_table,
    process_tree,
    sockets_of,
)

PROFILE = '/opt/phil/share/phil_bringup/config/fastdds_loopback.xml'
KILTED = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'ROS_DOMAIN_ID': '7'}
linux_only = pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs Linux /proc')


# --- the rules --------------------------------------------------------------------------------


def test_by_default_every_process_reads_the_loopback_profile_and_leaves_discovery_to_it():
    scope = dds_scope({**KILTED, LOCALHOST_ONLY_VARIABLE: '1'}, PROFILE, network=False)
    assert scope.changes == {
        'FASTDDS_DEFAULT_PROFILES_FILE': PROFILE,
        # LOCALHOST (and ROS_LOCALHOST_ONLY=1) add an rmw transport on every interface.
        RANGE_VARIABLE: 'SYSTEM_DEFAULT',
        LOCALHOST_ONLY_VARIABLE: None,
    }
    assert scope.profile == PROFILE and scope.warning == ''
    assert 'loopback only' in scope.summary


def test_each_distro_gets_the_variable_its_fast_dds_reads():
    for jazzy_environ in ({'ROS_DISTRO': 'jazzy'}, {'PHIL_ROS': 'jazzy'}):  # sourced, wheels
        jazzy = dds_scope(jazzy_environ, PROFILE, network=False).changes
        assert jazzy['FASTRTPS_DEFAULT_PROFILES_FILE'] == PROFILE, jazzy_environ
        assert 'FASTDDS_DEFAULT_PROFILES_FILE' not in jazzy
    kilted = dds_scope({'PHIL_ROS': 'kilted'}, PROFILE, network=False).changes
    assert kilted['FASTDDS_DEFAULT_PROFILES_FILE'] == PROFILE
    # Humble's Fast DDS has no interface allowlist: its rmw's localhost-only mode instead.
    humble = dds_scope(
        {'ROS_DISTRO': 'humble', 'FASTRTPS_DEFAULT_PROFILES_FILE': PROFILE}, PROFILE, network=False
    )
    assert humble.changes == {
        'FASTRTPS_DEFAULT_PROFILES_FILE': None,
        LOCALHOST_ONLY_VARIABLE: '1',
        RANGE_VARIABLE: 'LOCALHOST',
    }
    assert humble.profile == ''


def test_a_profile_of_the_users_is_kept_and_said():
    environ = {**KILTED, 'FASTDDS_DEFAULT_PROFILES_FILE': '/home/me/tuned.xml'}
    for network in (False, True):
        scope = dds_scope(environ, PROFILE, network)
        assert 'FASTDDS_DEFAULT_PROFILES_FILE' not in scope.changes
        assert scope.profile == ''
    assert '/home/me/tuned.xml' in dds_scope(environ, PROFILE, network=False).summary


def test_the_loopback_profile_set_by_the_workspace_is_not_a_users_profile():
    environ = {
        'FASTDDS_DEFAULT_PROFILES_FILE': str(
            ROOT / 'phil_bringup' / 'config' / 'fastdds_loopback.xml'
        ),
        RANGE_VARIABLE: 'SYSTEM_DEFAULT',
    }
    assert dds_scope(environ, PROFILE, network=False).changes == {
        'FASTDDS_DEFAULT_PROFILES_FILE': PROFILE
    }
    assert not is_loopback_profile('') and not is_loopback_profile('/x/other.xml')


def test_network_leaves_the_built_in_transports_and_warns():
    environ = {**KILTED, 'FASTDDS_DEFAULT_PROFILES_FILE': PROFILE, LOCALHOST_ONLY_VARIABLE: '1'}
    scope = dds_scope(environ, PROFILE, network=True)
    assert scope.changes == {
        'FASTDDS_DEFAULT_PROFILES_FILE': None,
        RANGE_VARIABLE: 'SUBNET',
        LOCALHOST_ONLY_VARIABLE: '0',
    }
    assert scope.profile == ''
    assert 'ROS_DOMAIN_ID=7' in scope.warning and 'SROS2' in scope.warning
    assert 'Network access and security' in scope.warning
    scope.apply(environ)
    assert 'FASTDDS_DEFAULT_PROFILES_FILE' not in environ
    assert environ[RANGE_VARIABLE] == 'SUBNET'


def test_the_launcher_refuses_a_profile_file_that_is_not_there(monkeypatch, capsys):
    """Fast DDS would ignore it and bind every interface: nothing is started."""
    pytest.importorskip('ament_index_python')
    from phil_bringup import launcher

    assert launcher.parse_arguments(['--network']).network
    assert not launcher.parse_arguments([]).network
    environ = {**os.environ, 'FASTDDS_DEFAULT_PROFILES_FILE': '/nonexistent/tuned.xml'}
    monkeypatch.setattr(os, 'environ', environ)
    assert launcher.main(['--log-dir', str(ROOT / 'nonexistent-run')]) == 1
    output = capsys.readouterr()
    assert (
        'DDS profile file not found: FASTDDS_DEFAULT_PROFILES_FILE=/nonexistent/tuned.xml'
        in output.err
    )
    assert '[phil] started' not in output.out
    assert not (ROOT / 'nonexistent-run').exists()


def test_every_ros_node_runs_in_an_enclave_of_its_own():
    """SROS2 keys and permissions per node (only a name while security is off)."""
    pytest.importorskip('ament_index_python')
    from phil_bringup.core.node_set import nodes_for
    from phil_bringup.launcher import node_command

    enclaves = set()
    for spec in nodes_for(sim=True):
        if spec.ros_node:
            command = node_command(spec, sim=True)
            at = command.index('--enclave')
            assert at > command.index('--ros-args'), command
            enclaves.add(command[at + 1])
    assert enclaves == {f'/phil/{spec.name}' for spec in nodes_for(sim=True) if spec.ros_node}


def test_the_readme_section_the_warning_points_at_exists():
    assert '## Network access and security' in (ROOT / 'README.md').read_text()


def _after_env_sh(environ: dict[str, str]) -> dict[str, str]:
    """The DDS variables a shell has after `source tools/env.sh` from ``environ``."""
    names = (*PROFILE_VARIABLES, RANGE_VARIABLE, LOCALHOST_ONLY_VARIABLE)
    script = f'source {ROOT}/tools/env.sh >/dev/null; ' + '; '.join(
        f'echo "{name}=${{{name}-<unset>}}"' for name in names
    )
    chosen = ('ROS_DISTRO', 'PHIL_ROS', 'COLCON_DEFAULTS_FILE', 'COLCON_LOG_PATH')
    base = {key: value for key, value in os.environ.items() if key not in (*names, *chosen)}
    done = subprocess.run(
        ['bash', '-c', script],
        env={**base, **environ},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    values = dict(line.split('=', 1) for line in done.stdout.splitlines())
    return {name: value for name, value in values.items() if value != '<unset>'}


@pytest.mark.parametrize(
    'environ',
    [
        KILTED,
        {LOCALHOST_ONLY_VARIABLE: '1'},
        {**KILTED, 'FASTDDS_DEFAULT_PROFILES_FILE': '/home/me/tuned.xml'},
        {'ROS_DISTRO': 'jazzy'},
        {'PHIL_ROS': 'jazzy'},
        {'ROS_DISTRO': 'humble', LOCALHOST_ONLY_VARIABLE: '0'},
    ],
    ids=['kilted', 'localhost-only', 'users-profile', 'jazzy', 'jazzy-wheels', 'humble'],
)
def test_env_sh_follows_the_same_rules(environ):
    """A sourced shell (make run / test / bench) gets what the launcher would set."""
    expected = dict(environ)
    expected.pop('ROS_DOMAIN_ID', None)
    expected.pop('ROS_DISTRO', None)
    expected.pop('PHIL_ROS', None)
    dds_scope(environ, PROFILE, network=False).apply(expected)
    got = _after_env_sh(environ)
    for name in PROFILE_VARIABLES:  # the source tree's copy there, the installed one here
        if is_loopback_profile(got.get(name, '')) and expected.get(name) == PROFILE:
            got[name] = PROFILE
    assert got == expected


# --- the socket reader ------------------------------------------------------------------------


def test_proc_net_addresses_decode():
    assert decode_address('0100007F:1F90') == (ipaddress.ip_address('127.0.0.1'), 8080)
    assert decode_address('00000000000000000000000001000000:0016') == (
        ipaddress.ip_address('::1'),
        22,
    )
    assert decode_address('0000000000000000FFFF00000100007F:0035')[0] == ipaddress.ip_address(
        '::ffff:127.0.0.1'
    )
    with pytest.raises(ValueError, match='not a /proc/net address'):
        decode_address('7F000001')


@pytest.mark.parametrize(
    ('address', 'loopback'),
    [
        ('127.0.0.1', True),
        ('127.3.2.1', True),
        ('::1', True),
        ('::ffff:127.0.0.1', True),
        ('0.0.0.0', False),
        ('::', False),
        ('192.0.2.2', False),
        ('fd00::2', False),
        ('::ffff:192.0.2.2', False),
    ],
)
def test_only_loopback_addresses_count_as_loopback(address, loopback):
    bound = BoundSocket(1, 'x', 'udp', ipaddress.ip_address(address), 7400, 'UNCONNECTED')
    assert bound.loopback is loopback


def test_proc_net_tables_parse():
    header = (
        '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt'
        '   uid  timeout inode\n'
    )
    udp = header + (
        '  5: 00000000:1CE8 00000000:0000 07 00000000:00000000 00:00000000 00000000'
        '     0        0 4242 2 0000000000000000 0\n'
    )
    tcp = header + (
        '  0: 0100007F:079F 00000000:0000 0A 00000000:00000000 00:00000000 00000000'
        '     0        0 99 1 0000000000000000 100 0 0 10 0\n'
    )
    assert parse_table('udp', udp) == {
        4242: (ipaddress.ip_address('0.0.0.0'), 7400, 'UNCONNECTED')
    }
    assert parse_table('tcp', tcp) == {99: (ipaddress.ip_address('127.0.0.1'), 1951, 'LISTEN')}


@linux_only
def test_a_process_tree_and_its_sockets_are_found():
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as tcp,
    ):
        udp.bind(('127.0.0.1', 0))
        tcp.bind(('::1', 0))
        tcp.listen()
        found = {
            (bound.protocol, bound.port, bound.state, bound.loopback)
            for bound in sockets_of([os.getpid()])
        }
        assert ('udp', udp.getsockname()[1], 'UNCONNECTED', True) in found
        assert ('tcp6', tcp.getsockname()[1], 'LISTEN', True) in found
    grandchild = (
        'import subprocess, sys; subprocess.run([sys.executable, "-c", '
        '"import time; time.sleep(30)"])'
    )
    child = subprocess.Popen([sys.executable, '-c', grandchild])
    try:
        deadline = time.monotonic() + 30.0
        while len(process_tree(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(process_tree(child.pid)) == 2
        assert process_tree(child.pid)[0] == child.pid
    finally:
        for pid in reversed(process_tree(child.pid)):
            os.kill(pid, 9)
        child.wait()


# --- the running graph ------------------------------------------------------------------------


def _simulated_bus_port() -> int:
    """The port of python-can's udp_multicast bus (the graph's simulated buses keep it)."""
    from can.interfaces.udp_multicast import UdpMulticastBus

    return inspect.signature(UdpMulticastBus.__init__).parameters['port'].default


@linux_only
@pytest.mark.timeout(300)
def test_every_socket_of_the_graph_is_on_loopback(tmp_path):
    pytest.importorskip('rclpy')
    from phil_bringup.core.node_set import nodes_for
    from phil_bringup.testing.graph import RunningGraph

    graph = RunningGraph(tmp_path)
    # The environment before loopback-only DDS (no profile, LOCALHOST discovery: every node
    # then had UDP sockets on 0.0.0.0 and the external address): the launcher's own default.
    for name in PROFILE_VARIABLES:
        graph.env.pop(name, None)
    graph.env[RANGE_VARIABLE] = 'LOCALHOST'
    bus_port = _simulated_bus_port()
    ros_pids: set[int] = set()

    def simulated_bus_socket(bound: BoundSocket) -> bool:
        return (
            bound.protocol == 'udp6'
            and bound.address == ipaddress.ip_address('::')
            and bound.pid not in ros_pids
            and bound.state == 'UNCONNECTED'
        )

    def bus_receivers(sockets: list[BoundSocket]) -> list[BoundSocket]:
        return [
            bound for bound in sockets if simulated_bus_socket(bound) and bound.port == bus_port
        ]

    try:
        graph.start()
        # Discovery on loopback works: START crosses bridge, planner, trajectory generator
        # and hardware node.
        assert graph.line('START') == 'OK|START', graph.text()
        graph.wait_state('INIT', 30.0)
        ros_pids.update(graph.pid_of(spec.name) for spec in nodes_for(sim=True) if spec.ros_node)
        # Nodes off the command path may still be starting: wait until every ROS node holds
        # its DDS participant's sockets and the simulator and the bus loop their simulated
        # buses (so an empty list cannot pass).
        deadline = time.monotonic() + 60.0
        while True:
            held = {
                spec.name: sockets_of(process_tree(graph.pid_of(spec.name)))
                for spec in nodes_for(sim=True)
            }
            held['launcher'] = sockets_of([graph.process.pid])
            without_dds = [
                spec.name
                for spec in nodes_for(sim=True)
                if spec.ros_node
                and not any(
                    bound.protocol == 'udp' and bound.pid in ros_pids for bound in held[spec.name]
                )
            ]
            without_buses = [
                name
                for name in ('device_simulator', 'hardware')
                if len(bus_receivers(held[name])) < 4
            ]
            if not (without_dds or without_buses) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        graph.stop()
    assert 'DDS on loopback only' in graph.text()
    listing = '\n'.join(f'{name}: {bound}' for name, sockets in held.items() for bound in sockets)
    assert without_dds == [], f'no DDS sockets: {without_dds}\n{listing}\n{graph.text()}'
    assert without_buses == [], f'no simulated buses: {without_buses}\n{listing}'

    # The simulated CAN buses (python-can udp_multicast) are the exception, and only in the
    # processes that drive them without being DDS participants: the device simulator and the
    # hardware node's bus-loop process (a child of the node). Each bus has a receiving socket
    # on the bus port and a sending one on an ephemeral port, both IPv6 and bound to :: by
    # python-can (bound to a unicast address, a socket would not get the group's datagrams).
    # They join only the run's ff11:: groups (checked below; the transport refuses any other),
    # and interface-local multicast is never routed off this machine. They would still take a
    # unicast datagram to their port: the simulation is for trusted machines (README).
    assert all(
        ipaddress.ip_address(group) in ipaddress.ip_network('ff11::/16')
        for group in graph.channels
    )
    exposed = [
        f'{name}: {bound}'
        for name, sockets in held.items()
        for bound in sockets
        if not bound.loopback
        and not (name in ('device_simulator', 'hardware') and simulated_bus_socket(bound))
    ]
    assert exposed == [], 'reachable from the network:\n' + '\n'.join(exposed)
    for name in ('device_simulator', 'hardware'):
        buses = [bound for bound in held[name] if simulated_bus_socket(bound)]
        receivers = bus_receivers(held[name])
        # The classification matched the four buses, and nothing else in these processes.
        assert len(receivers) == 4, f'{name}:\n{listing}'
        assert len(buses) - len(receivers) <= len(receivers), f'{name}:\n{listing}'
