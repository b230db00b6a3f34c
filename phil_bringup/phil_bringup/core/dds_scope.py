"""Where the graph's DDS traffic may go: this machine only (the default) or the network.

On this machine only, every participant of the graph reads the Fast DDS profile
``config/fastdds_loopback.xml`` (UDP on 127.0.0.1 only, unicast discovery to 127.0.0.1): no DDS
socket is bound to the wildcard or an external address. On the network, Fast DDS keeps its
built-in transports (every interface, multicast discovery) and anyone who reaches the machine
can join the graph; SROS2 is then the way to secure it.

ROS-free: :func:`dds_scope` computes the environment changes, the launcher, tools/env.sh (the
same rules in shell) and robot.launch.py apply them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

LOOPBACK_PROFILE = 'fastdds_loopback.xml'  # in phil_bringup's config folder
# Fast DDS 3 (Kilted on) reads the first, 2.x (Jazzy) the second; rmw_fastrtps warns that the
# second is deprecated when it is set on Kilted, so only the one the distro reads is set.
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
RANGE_VARIABLE = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
LOCALHOST_ONLY_VARIABLE = 'ROS_LOCALHOST_ONLY'  # Humble
SECURITY_SECTION = 'README, "Network access and security"'
ENCLAVE_ROOT = '/phil'


def enclave_of(node_name: str) -> str:
    """The SROS2 enclave a node of the graph runs in (its keys and permissions in the
    keystore when ROS security is enabled; only a name otherwise)."""
    return f'{ENCLAVE_ROOT}/{node_name}'


def network_warning(domain_id: str) -> str:
    return (
        f'WARNING: DDS on every network interface: anyone who reaches this machine can '
        f'join the ROS graph (ROS_DOMAIN_ID={domain_id}) and command the robot. Secure it '
        f'with SROS2 ({SECURITY_SECTION}).'
    )


@dataclass
class DdsScope:
    """Environment changes for the graph's processes (a value of None removes the variable)
    and what to tell the user."""

    changes: dict[str, str | None] = field(default_factory=dict)
    profile: str = ''  # the loopback profile file the processes are pointed at, if any
    summary: str = ''
    warning: str = ''

    def apply(self, environ: dict[str, str]) -> None:
        for name, value in self.changes.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value


def profile_variable(distro: str) -> str | None:
    """The variable the distro's Fast DDS reads its default profile file from. None on Humble:
    its Fast DDS (2.6) predates the profile's interface allowlist, and ROS_LOCALHOST_ONLY=1
    makes Humble's rmw_fastrtps set up the same transports (shared memory, UDP on 127.0.0.1)."""
    if distro == 'humble':
        return None
    return (
        'FASTRTPS_DEFAULT_PROFILES_FILE' if distro == 'jazzy' else 'FASTDDS_DEFAULT_PROFILES_FILE'
    )


def ros_distro(environ: Mapping[str, str]) -> str:
    """The ROS 2 distro of the environment: a sourced install names it in ROS_DISTRO, the
    workspace's PyPI wheels in PHIL_ROS (set by tools/env.sh; '' and 'kilted' alike mean
    Kilted)."""
    return environ.get('ROS_DISTRO') or environ.get('PHIL_ROS', '')


def is_loopback_profile(path: str) -> bool:
    """A profile setting that names this package's loopback profile (source or install)."""
    return bool(path) and PurePath(path).name == LOOPBACK_PROFILE


def dds_scope(environ: Mapping[str, str], profile_path: str, network: bool) -> DdsScope:
    """The environment that keeps the graph's DDS on loopback, or with ``network`` opens it.

    Args:
        environ: The environment the graph would start with.
        profile_path: Where the loopback profile file is.
        network: Leave Fast DDS's built-in transports (every interface) in place.
    """
    scope = DdsScope()
    distro = ros_distro(environ)
    ours = [name for name in PROFILE_VARIABLES if is_loopback_profile(environ.get(name, ''))]
    users = [name for name in PROFILE_VARIABLES if environ.get(name) and name not in ours]
    discovery_range = environ.get(RANGE_VARIABLE, '')
    if network:
        scope.changes = dict.fromkeys(ours)
        if discovery_range == 'LOCALHOST':
            scope.changes[RANGE_VARIABLE] = 'SUBNET'
        if environ.get(LOCALHOST_ONLY_VARIABLE) == '1':
            scope.changes[LOCALHOST_ONLY_VARIABLE] = '0'
        scope.summary = 'DDS on every network interface'
        scope.warning = network_warning(environ.get('ROS_DOMAIN_ID', '0'))
        return scope
    if users:
        # The user's own profile decides the transports; the discovery range stays as before.
        scope.changes[RANGE_VARIABLE] = discovery_range or 'LOCALHOST'
        scope.summary = (
            f'DDS as the profile in {users[0]}={environ[users[0]]} configures it '
            f'(not the loopback-only default)'
        )
        return scope
    variable = profile_variable(distro)
    scope.changes = dict.fromkeys(ours)  # read by the distro's Fast DDS or not at all
    if variable is None:
        scope.changes.update({LOCALHOST_ONLY_VARIABLE: '1', RANGE_VARIABLE: 'LOCALHOST'})
    else:
        scope.changes[variable] = scope.profile = profile_path
        # LOCALHOST (also what ROS_LOCALHOST_ONLY=1 turns on) would make rmw_fastrtps add a
        # UDP transport on every interface beside the profile's; SYSTEM_DEFAULT leaves
        # discovery to the profile.
        if discovery_range in ('', 'LOCALHOST'):
            scope.changes[RANGE_VARIABLE] = 'SYSTEM_DEFAULT'
        if LOCALHOST_ONLY_VARIABLE in environ:
            scope.changes[LOCALHOST_ONLY_VARIABLE] = None
    scope.summary = 'DDS on loopback only'
    return scope
