"""Bus transports of the controller side: CAN through python-can, the Dynamixel serial port.

The controller never builds a bus inside its logic: :func:`open_can_bus` and
:func:`open_serial_port` are called at the composition root (the bus-loop process), tests build
python-can ``virtual`` buses or open a PTY and hand them to :class:`CanTransport` /
:class:`SerialTransport` directly.

Both transports are non-blocking: :meth:`CanTransport.drain` and :meth:`SerialTransport.read`
return what has arrived and never wait, so the 1 ms tick drains everything every cycle. Errors
on the hot path (a failed send, an undecodable datagram) are counted, never raised.

``udp_multicast`` (multi-process simulation) is only allowed on IPv6 interface-local groups
``ff11::/16``: those datagrams never leave the machine. Two python-can quirks are handled here:
Linux delivers every group joined by any socket on the port to every socket
(``IPV6_MULTICAST_ALL``), and multicast loopback hands a process its own frames back. The first
is switched off per socket; the second is dropped by a kernel socket filter on the sender's own
port, and by a per-transport sender tag in the message's ``channel`` field where that filter is
not available.
"""

from phil_hardware.core.codecs.frame import frame_bits

from .can_bus import (
    SUPPORTED_CAN_INTERFACES,
    CanTransport,
    TransportError,
    check_multicast_group,
    open_can_bus,
)
from .serial_port import (
    SerialTransport,
    is_pty,
    latency_advice,
    latency_timer_path,
    open_serial_port,
    read_latency_timer_ms,
)

__all__ = [
    'SUPPORTED_CAN_INTERFACES',
    'CanTransport',
    'SerialTransport',
    'TransportError',
    'check_multicast_group',
    'frame_bits',
    'is_pty',
    'latency_advice',
    'latency_timer_path',
    'open_can_bus',
    'open_serial_port',
    'read_latency_timer_ms',
]
