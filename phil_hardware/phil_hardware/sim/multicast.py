"""Opening CAN buses for the simulator: the controller's transport rules apply unchanged
(udp_multicast only on IPv6 interface-local groups ff11::/16, each socket restricted to its own
group, a receive buffer that survives a busy machine), so both ends of a simulated bus behave
alike. This module only adapts the simulator's (name, interface, channel) arguments.
"""

from __future__ import annotations

from typing import Any

import can

from phil_description.core import CanBusParams
from phil_hardware.core.transport.can_bus import (
    TransportError,
    check_multicast_group,
)
from phil_hardware.core.transport.can_bus import open_can_bus as _open_transport_bus

_BITRATE = 1_000_000  # python-can ignores it for the simulated interfaces


def check_channel(bus: str, interface: str, channel: str) -> None:
    """Refuse a udp_multicast channel that could leave the machine.

    Raises:
        ValueError: Unless ``channel`` is an IPv6 interface-local multicast group (ff11::/16).
    """
    if interface != 'udp_multicast':
        return
    try:
        check_multicast_group(bus, channel)
    except TransportError as error:
        raise ValueError(str(error)) from None


def open_can_bus(name: str, interface: str, channel: str, **kwargs: Any) -> can.BusABC:
    """Open one simulated CAN bus through the controller's transport rules.

    Args:
        name: Bus name for error messages (e.g. 'can0').
        interface: python-can interface.
        channel: python-can channel (the multicast group for udp_multicast).
        **kwargs: Further python-can arguments (e.g. ``port``).

    Raises:
        ValueError: For a udp_multicast group that is not interface-local.
        can.CanError: If the bus cannot be opened.
    """
    check_channel(name, interface, channel)
    if interface == 'udp_multicast':
        kwargs.setdefault('receive_own_messages', False)
    try:
        return _open_transport_bus(CanBusParams(name, interface, channel, _BITRATE), **kwargs)
    except TransportError as error:
        raise can.CanError(str(error)) from error
