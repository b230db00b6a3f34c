"""The simulator's check of its CAN channels. Its buses open through the controller's
:func:`~phil_hardware.core.transport.open_can_bus`, so both ends of a simulated bus follow the
same transport rules (udp_multicast only on IPv6 interface-local groups ff11::/16, each socket
restricted to its own group, a receive buffer that survives a busy machine).
"""

from __future__ import annotations

from phil_hardware.core.transport.can_bus import TransportError, check_multicast_group


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
