"""Opening CAN buses for the simulator, with the one fix udp_multicast needs here.

python-can's ``udp_multicast`` socket binds the port on every address, and Linux then delivers
to it the datagrams of *every* multicast group joined on the machine for that port
(``IPV6_MULTICAST_ALL`` defaults to on). Without a fix, can0..can3 on four groups all see each
other's frames, and two simulators run side by side (parallel tests) see each other too. Turning
``IPV6_MULTICAST_ALL`` off restricts each socket to the group it joined. The controller side must
do the same for its own sockets.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

import can

_LOG = logging.getLogger(__name__)
IPV6_MULTICAST_ALL = getattr(socket, 'IPV6_MULTICAST_ALL', 29)  # Linux >= 4.20


def check_channel(bus: str, interface: str, channel: str) -> None:
    """Refuse a udp_multicast channel that could leave the machine.

    Raises:
        ValueError: Unless ``channel`` is an IPv6 interface-local multicast group (ff?1::/16).
    """
    if interface != 'udp_multicast':
        return
    try:
        address = ipaddress.IPv6Address(channel)
    except ValueError:
        raise ValueError(f'CAN bus {bus}: udp_multicast channel {channel!r} is not an IPv6 '
                         'address; use an interface-local group like ff11::7068:6900') from None
    if not address.is_multicast or address.packed[1] & 0x0F != 1:
        raise ValueError(f'CAN bus {bus}: {channel} is not an interface-local multicast group '
                         '(ff?1::); other scopes can leave this machine')


def restrict_to_own_group(bus: can.BusABC) -> bool:
    """Make a udp_multicast bus receive only its own group (see the module docstring).

    Returns:
        True if the option was set; False for other interfaces or a kernel without it.
    """
    sock = getattr(getattr(bus, '_multicast', None), '_socket', None)
    if not isinstance(sock, socket.socket) or sock.family != socket.AF_INET6:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0)
    except OSError as error:
        _LOG.warning('cannot restrict %s to its own multicast group (%s): frames of other '
                     'groups on the same port will be seen', bus.channel_info, error)
        return False
    return True


def open_can_bus(name: str, interface: str, channel: str, **kwargs: Any) -> can.BusABC:
    """Open one simulated CAN bus; udp_multicast is checked and restricted to its group.

    Args:
        name: Bus name for error messages (e.g. 'can0').
        interface: python-can interface.
        channel: python-can channel (the multicast group for udp_multicast).
        **kwargs: Further python-can arguments (e.g. ``port``).

    Raises:
        ValueError: For a udp_multicast group that is not interface-local.
        can.CanError: If python-can cannot open the bus.
    """
    check_channel(name, interface, channel)
    if interface == 'udp_multicast':
        kwargs.setdefault('receive_own_messages', False)
    bus = can.Bus(interface=interface, channel=channel, **kwargs)
    if interface == 'udp_multicast':
        restrict_to_own_group(bus)
    return bus
