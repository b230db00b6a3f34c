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
is switched off per socket, the second is filtered with a per-transport sender tag carried in
the message's ``channel`` field.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any

from phil_hardware.core.codecs.frame import CanFrame

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
# A send time later than the receiver's clock by more than this is not one (s).
_SEND_TIME_SLACK_S = 1.0


class TransportError(RuntimeError):
    """A bus or port could not be opened or configured; the message names it and what to check."""


def frame_bits(dlc: int, is_extended_id: bool) -> int:
    """Worst-case bits of one classic data frame on the wire, stuffing included.

    Unstuffed: 47 bits (standard) / 67 bits (extended) of overhead plus 8 per data byte; the
    stuffable part (SOF..CRC, 34 / 54 bits + data) can gain one bit per four, and the 3-bit
    interframe space is counted as bus time too.

    Args:
        dlc: Payload bytes (0..8).
        is_extended_id: 29-bit identifier.
    """
    stuffable = (54 if is_extended_id else 34) + 8 * dlc
    return stuffable + (stuffable - 1) // 4 + 13


_FRAME_BITS = tuple(tuple(frame_bits(dlc, ext) for dlc in range(9)) for ext in (False, True))


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
        _only_own_group(bus, params)
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


def _only_own_group(bus: can.BusABC, params: CanBusParams) -> None:
    # python-can binds every group to the same port; without this, can0's socket also gets the
    # frames of can1..can3 (and of any parallel test on another ff11:: group).
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


class CanTransport:
    """One CAN bus for the controller: CanFrame in, CanFrame out, counters, never blocking.

    Not thread-safe: one thread (the bus loop) owns it.

    Attributes:
        name: Bus name (e.g. ``can0``).
        frames_sent / frames_received: Counts of frames put on / taken off the bus.
        bits_sent / bits_received: Worst-case wire bits of those frames (see :func:`frame_bits`).
        send_errors: Sends the bus refused (buffer full, bus off, ...).
        receive_errors: Receives that raised (e.g. an undecodable datagram); skipped.
        echoes: Own frames handed back by the bus and dropped (udp_multicast loopback).
        ignored: Remote, error or FD frames dropped.
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
        self.last_error = ''
        self._fast = _UdpFastPath.wrap(bus, self._tag)

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
            error = self._fast.send(frame)
            if error is not None:
                self.send_errors += 1
                self.last_error = f'send {frame.describe_id()}: {error}'
                return False
            self.frames_sent += 1
            self.bits_sent += _FRAME_BITS[frame.is_extended_id][min(len(frame.data), 8)]
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
        self.bits_sent += _FRAME_BITS[frame.is_extended_id][min(len(frame.data), 8)]
        return True

    def drain(self, out: list[CanFrame], limit: int = _MAX_DRAIN_PER_CALL,
              sent_at: list[float] | None = None) -> int:
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
            self.bits_received += _FRAME_BITS[message.is_extended_id][min(len(data), 8)]
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
        with contextlib.suppress(self._can_error, OSError):
            self._bus.shutdown()


class _UdpFastPath:
    """Direct socket I/O for python-can's udp_multicast bus, same msgpack wire format.

    python-can's receive path costs a ``select`` plus a ``recvmsg`` with timestamps plus a
    validated ``Message`` per frame, and every own frame comes back (multicast loopback). Here a
    non-blocking ``recv`` drains the socket and own frames are dropped by a byte search for the
    sender tag before unpacking, which keeps the 1 ms tick short.
    """

    def __init__(self, sock: socket.socket, destination: tuple, tag: str) -> None:
        import msgpack

        self._sock = sock
        self._destination = destination
        self._packb = msgpack.packb
        self._unpackb = msgpack.unpackb
        self._tag = tag
        self._tag_bytes = tag.encode()

    @classmethod
    def wrap(cls, bus: object, tag: str) -> _UdpFastPath | None:
        multicast = getattr(bus, '_multicast', None)
        sock = getattr(multicast, '_socket', None)
        destination = getattr(multicast, '_send_destination', None)
        if sock is None or destination is None:
            return None
        try:
            import msgpack  # noqa: F401  (python-can's udp_multicast needs it too)
        except ImportError:
            return None
        return cls(sock, destination, tag)

    def send(self, frame: CanFrame) -> str | None:
        data = frame.data
        packed = self._packb({
            # python-can's receiver replaces it with its receive time; this path's receiver
            # reads it as the send time (one host, one CLOCK_MONOTONIC).
            'timestamp': time.monotonic(), 'arbitration_id': frame.arbitration_id,
            'is_extended_id': frame.is_extended_id, 'is_remote_frame': False,
            'is_error_frame': False, 'channel': self._tag, 'dlc': len(data), 'data': data,
            'is_fd': False, 'bitrate_switch': False, 'error_state_indicator': False,
        }, use_bin_type=True)
        try:
            self._sock.sendto(packed, socket.MSG_DONTWAIT, self._destination)
        except OSError as error:
            return str(error)
        return None

    def drain(self, owner: CanTransport, out: list[CanFrame], limit: int,
              sent_at: list[float] | None = None) -> int:
        received = 0
        latest = time.monotonic() + _SEND_TIME_SLACK_S
        sock = self._sock
        tag = self._tag_bytes
        for _ in range(2 * limit):
            try:
                datagram = sock.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError as error:
                owner.receive_errors += 1
                owner.last_error = f'receive: {error}'
                break
            if tag in datagram:
                owner.echoes += 1
                continue
            try:
                fields = self._unpackb(datagram, raw=False)
                arbitration_id = fields['arbitration_id']
                extended = bool(fields['is_extended_id'])
                data = bytes(fields['data'])
                if fields.get('is_remote_frame') or fields.get('is_error_frame') or \
                        fields.get('is_fd') or len(data) > 8:
                    owner.ignored += 1
                    continue
            except Exception as error:  # any garbage datagram: count it, keep draining
                owner.receive_errors += 1
                owner.last_error = f'receive: undecodable datagram ({error})'
                continue
            out.append(CanFrame(arbitration_id, data, extended))
            if sent_at is not None:
                stamp = fields.get('timestamp')
                # Other senders stamp wall-clock time (or nothing): not a send time here.
                valid = isinstance(stamp, float) and 0.0 < stamp <= latest
                sent_at.append(stamp if valid else math.nan)
            owner.frames_received += 1
            owner.bits_received += _FRAME_BITS[extended][len(data)]
            received += 1
            if received >= limit:
                break
        return received
