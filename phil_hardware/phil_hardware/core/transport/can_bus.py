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
is switched off per socket; for the second, frames leave through a socket of their own whose
datagrams a kernel filter drops (:mod:`.udp_fast_path`), and a per-transport sender tag in the
message's ``channel`` field catches any that still come back.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import socket
import uuid
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from phil_hardware.core.codecs.frame import FRAME_BITS, CanFrame

from .udp_fast_path import UdpFastPath

if TYPE_CHECKING:
    import can

    from phil_description.core import CanBusParams

SUPPORTED_CAN_INTERFACES = ('socketcan', 'virtual', 'udp_multicast')
INTERFACE_LOCAL_PREFIX = b'\xff\x11'
# Linux <linux/in6.h>; Python's socket module does not export it.
IPV6_MULTICAST_ALL = 29
# Receive buffer of a udp_multicast socket. A 1 kHz bus carries ~3000 datagrams/s, and the
# default buffer (~200 kB, ~270 datagrams) overflows when a process on a busy machine is not
# scheduled for ~0.1 s: frames (an SDO mode switch, say) would be lost silently. 4 MiB holds
# seconds of traffic; the kernel caps it at net.core.rmem_max unless we may force it.
UDP_RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024
_MAX_DRAIN_PER_CALL = 256


# A Python class where mypyc compiles the module (it cannot subclass RuntimeError natively).
@mypyc_attr(native_class=False)
class TransportError(RuntimeError):
    """A bus or port could not be opened or configured; the message names it and what to check."""


def check_multicast_group(bus_name: str, channel: str) -> None:
    """Refuse any udp_multicast channel that is not an IPv6 interface-local group (ff11::/16).

    Raises:
        TransportError: Naming the bus and the channel.
    """
    try:
        address = ipaddress.ip_address(channel)
    except ValueError:
        raise TransportError(
            f'CAN bus {bus_name!r}: udp_multicast channel {channel!r} is not an IP address; '
            'use an IPv6 interface-local group such as ff11::7068:6900'
        ) from None
    if address.version != 6 or address.packed[:2] != INTERFACE_LOCAL_PREFIX:
        raise TransportError(
            f'CAN bus {bus_name!r}: udp_multicast channel {channel} is not an IPv6 '
            'interface-local group (ff11::/16); other groups leave the machine and are refused'
        )


def open_can_bus(params: CanBusParams, **kwargs: Any) -> can.BusABC:
    """Open the python-can bus described by ``params`` (composition root only).

    Args:
        params: Interface (socketcan, virtual, udp_multicast), channel and bitrate.
        **kwargs: Passed to :class:`can.Bus` (e.g. ``receive_own_messages`` for virtual).

    Returns:
        The open bus. For udp_multicast the socket only receives its own group.

    Raises:
        TransportError: Unknown interface, a refused multicast group, or the bus did not open.
    """
    import can

    if params.interface not in SUPPORTED_CAN_INTERFACES:
        raise TransportError(
            f'CAN bus {params.name!r}: interface {params.interface!r} is not supported '
            f'(use one of {", ".join(SUPPORTED_CAN_INTERFACES)})'
        )
    options = dict(kwargs)
    if params.interface == 'udp_multicast':
        check_multicast_group(params.name, params.channel)
        options.setdefault('hop_limit', 1)
    elif params.interface == 'socketcan':
        # The kernel owns the bitrate (ip link ... bitrate); python-can would ignore it anyway.
        pass
    try:
        bus = can.Bus(interface=params.interface, channel=params.channel, **options)
    except (can.CanError, OSError, ValueError, ImportError) as error:
        hint = {
            'socketcan': f'is {params.channel} up? (ip link set {params.channel} up type can '
            f'bitrate {params.bitrate})',
            'udp_multicast': 'is IPv6 enabled and msgpack installed?',
        }.get(params.interface, '')
        raise TransportError(
            f'CAN bus {params.name!r} ({params.interface} {params.channel}) did not open: '
            f'{error}. {hint}'.rstrip()
        ) from error
    if params.interface == 'udp_multicast':
        restrict_to_own_group(bus, params)
    return bus


def _enlarge_receive_buffer(sock: socket.socket) -> int:
    """Ask for :data:`UDP_RECEIVE_BUFFER_BYTES` (forced when privileged); return the size
    the kernel granted."""
    force = getattr(socket, 'SO_RCVBUFFORCE', None)
    try:
        if force is None:
            raise PermissionError
        sock.setsockopt(socket.SOL_SOCKET, force, UDP_RECEIVE_BUFFER_BYTES)
    except OSError:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RECEIVE_BUFFER_BYTES)
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


def restrict_to_own_group(bus: can.BusABC, params: CanBusParams) -> None:
    """Make a python-can ``udp_multicast`` bus receive only its own group's frames.

    python-can binds every group to the same port; without this, can0's socket also gets the
    frames of can1..can3 (and of any parallel test on another ff11:: group).

    Raises:
        TransportError: The kernel does not offer ``IPV6_MULTICAST_ALL`` (the bus is shut).
    """
    sock = getattr(getattr(bus, '_multicast', None), '_socket', None)
    if sock is None:
        return
    _enlarge_receive_buffer(sock)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0)
    except OSError as error:
        bus.shutdown()
        raise TransportError(
            f'CAN bus {params.name!r}: cannot restrict the socket to group {params.channel} '
            f'(IPV6_MULTICAST_ALL: {error}); Linux >= 4.20 is needed'
        ) from error
    # What arrived between the bind and the option may be another group's: discard it (the bus
    # was just opened, nothing waits for a frame on it yet).
    while True:
        try:
            sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return


class CanTransport:
    """One CAN bus for the controller: CanFrame in, CanFrame out, counters, never blocking.

    Not thread-safe: one thread (the bus loop) owns it.

    Attributes:
        name: Bus name (e.g. ``can0``).
        frames_sent / frames_received: Counts of frames put on / taken off the bus.
        bits_sent / bits_received: Worst-case wire bits of those frames (see :func:`frame_bits`).
        send_errors: Sends the bus refused (buffer full, bus off, ...).
        receive_errors: Receives that raised (e.g. an undecodable datagram); skipped.
        echoes: Own frames handed back by the bus and dropped here (udp_multicast loopback
            without the kernel filter).
        ignored: Remote, error or FD frames dropped.
        held_received: Datagrams of several held frames received (see :meth:`hold`): the
            peer that sent them reads them too.
    """

    def __init__(self, name: str, bus: can.BusABC) -> None:
        """Wrap an open python-can bus (ownership passes to the transport).

        Args:
            name: Bus name for counters and messages.
            bus: The open bus; :meth:`close` shuts it down.
        """
        import can

        self.name = name
        self._bus = bus
        self._message_type = can.Message
        self._can_error = can.CanError
        # Marks our own frames so a multicast echo can be recognised and dropped.
        self._tag = f'phil-ctl-{uuid.uuid4().hex[:12]}'
        self.frames_sent = 0
        self.frames_received = 0
        self.bits_sent = 0
        self.bits_received = 0
        self.send_errors = 0
        self.receive_errors = 0
        self.echoes = 0
        self.ignored = 0
        self.held_received = 0
        self.last_error = ''
        self._fast = UdpFastPath.wrap(bus, self._tag)

    @property
    def bus(self) -> can.BusABC:
        """The wrapped python-can bus."""
        return self._bus

    def send(self, frame: CanFrame) -> bool:
        """Put one frame on the bus without waiting.

        Returns:
            True when the bus accepted it; False (counted in :attr:`send_errors`) otherwise.
        """
        if self._fast is not None:
            refused = self._fast.send(frame)
            if refused is not None:
                self.send_errors += 1
                self.last_error = f'send {frame.describe_id()}: {refused}'
                return False
            self.frames_sent += 1
            self.bits_sent += FRAME_BITS[frame.is_extended_id][min(len(frame.data), 8)]
            return True
        message = self._message_type(
            arbitration_id=frame.arbitration_id,
            data=frame.data,
            is_extended_id=frame.is_extended_id,
            channel=self._tag,
            check=False,
        )
        try:
            self._bus.send(message, timeout=0.0)
        except (self._can_error, OSError) as error:
            self.send_errors += 1
            self.last_error = f'send {frame.describe_id()}: {error}'
            return False
        self.frames_sent += 1
        self.bits_sent += FRAME_BITS[frame.is_extended_id][min(len(frame.data), 8)]
        return True

    def hold(self) -> None:
        """Gather the frames sent from now on until :meth:`release` into one datagram (the
        simulated bus); a real bus sends each frame at once."""
        if self._fast is not None:
            self._fast.hold()

    def release(self) -> bool:
        """Send what :meth:`hold` gathered. Returns False (counted in :attr:`send_errors`)
        when the bus refused it."""
        refused = self._fast.release() if self._fast is not None else None
        if refused is None:
            return True
        self.send_errors += 1
        self.last_error = f'send: {refused}'
        return False

    def drain(
        self,
        out: list[CanFrame],
        limit: int = _MAX_DRAIN_PER_CALL,
        sent_at: list[float] | None = None,
    ) -> int:
        """Append every frame that has arrived (at most ``limit``) to ``out`` without waiting.

        Args:
            out: Receives the frames.
            limit: Most frames taken in one call.
            sent_at: If given, receives one CLOCK_MONOTONIC send time per frame [s] where the
                sender recorded it (this module's udp_multicast path), else NaN. Simulated
                devices act on a frame at its send time, as a real device would on a real bus,
                whenever their own loop gets to run.

        Returns:
            Number of frames appended.
        """
        if self._fast is not None:
            return self._fast.drain(self, out, limit, sent_at)
        received = 0
        attempts = 0
        bus = self._bus
        while received < limit and attempts < 2 * limit:
            attempts += 1  # bounds the call even when every receive fails (closed socket)
            try:
                message = bus.recv(0.0)
            except (self._can_error, OSError, ValueError, TypeError) as error:
                self.receive_errors += 1
                self.last_error = f'receive: {error}'
                continue
            if message is None:
                break
            if message.channel == self._tag:
                self.echoes += 1
                continue
            if message.is_remote_frame or message.is_error_frame or message.is_fd:
                self.ignored += 1
                continue
            data = bytes(message.data)
            out.append(CanFrame(message.arbitration_id, data, message.is_extended_id))
            if sent_at is not None:
                sent_at.append(math.nan)
            self.frames_received += 1
            self.bits_received += FRAME_BITS[message.is_extended_id][min(len(data), 8)]
            received += 1
        return received

    def fileno(self) -> int:
        """The bus's descriptor, to wait for frames with ``select``.

        Raises:
            NotImplementedError: The bus has none (e.g. python-can's virtual bus).
        """
        return self._bus.fileno()

    def close(self) -> None:
        """Shut the bus down (idempotent)."""
        if self._fast is not None:
            self._fast.close()
        with contextlib.suppress(self._can_error, OSError):
            self._bus.shutdown()
