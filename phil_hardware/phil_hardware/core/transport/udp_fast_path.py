"""Direct socket I/O for python-can's ``udp_multicast`` bus (multi-process simulation).

python-can's receive path costs a ``select`` plus a ``recvmsg`` with timestamps plus a validated
``Message`` per frame, and multicast loopback hands every sender its own frames back. Here, with
the same msgpack wire format:

* frames leave through a socket of their own, bound to an ephemeral port, and a socket filter
  (classic BPF) on the bus socket drops datagrams from that port in the kernel: the own frames
  never reach user space. On this VM a received datagram costs ~2.5 us of ``recv`` plus the
  Python around it, and a tick sent 6-13 frames;
* a non-blocking ``recv`` drains the bus socket; own frames that still arrive (no filter on
  this platform, or a frame sent through python-can itself) are dropped by a byte search for
  the sender tag before unpacking;
* between :meth:`UdpFastPath.hold` and :meth:`~UdpFastPath.release` the frames sent go out
  as one datagram: the bus loop holds each tick's frames. A datagram to the simulator's socket
  costs ~10 us in the kernel on this VM, the Python around it as much again, and a tick sends
  6-13 frames: one datagram per bus took the tick work p99 from about 480 to 390 us.
  A held datagram is a msgpack array ``[send time, sender tag, id, data, extended, id, ...]``
  (:data:`HELD_HEADER_FIELDS` then :data:`HELD_FRAME_FIELDS` per frame): packing 8 frames as
  python-can's 11-key maps took 7 us and unpacking them 8 us, this form 1 and 0.5 us, in a
  tenth of the bytes. A single frame still goes out as python-can packs it, and the
  simulator answers a client that sends single frames with single frames
  (:attr:`CanTransport.held_received`), so any python-can client can drive the simulated
  devices; python-can's own reader cannot read a held datagram (this module's
  drain reads both).
"""

from __future__ import annotations

import contextlib
import math
import socket
import time
from typing import TYPE_CHECKING, Any

from phil_hardware.core.codecs.frame import FRAME_BITS, CanFrame

from .socket_filter import attach_filter, drop_source_port_filter

if TYPE_CHECKING:
    from .can_bus import CanTransport

# A send time later than the receiver's clock by more than this is not one (s).
_SEND_TIME_SLACK_S = 1.0
#: Most frames held for one datagram (about 100 bytes each); more are sent in further ones.
MAX_FRAMES_PER_DATAGRAM = 64
_RECEIVE_BYTES = 65536
#: A held datagram: the send time and the sender's tag, then per frame its
#: (arbitration_id, data, is_extended_id) in :class:`CanFrame` field order.
HELD_HEADER_FIELDS = 2
HELD_FRAME_FIELDS = 3


class UdpFastPath:
    """Sends and drains one python-can ``udp_multicast`` bus directly on its sockets."""

    def __init__(
        self, sock: socket.socket, destination: tuple, tag: str, filter_own_frames: bool = True
    ) -> None:
        """Take over the bus socket ``sock`` for receiving; open the send socket.

        Args:
            sock: python-can's bound, joined socket.
            destination: (group, port) frames are sent to.
            tag: This sender's tag (the message's ``channel`` field).
            filter_own_frames: Send from a socket of its own and drop its datagrams in the
                kernel; without it (or if the kernel refuses) frames leave through ``sock`` and
                come back as echoes.

        Raises:
            OSError: The send socket could not be opened.
        """
        import msgpack

        self._sock = sock
        self._destination = destination
        self._packb = msgpack.packb
        self._unpackb = msgpack.unpackb
        self._tag = tag
        self._tag_bytes = tag.encode()
        self._send_sock = sock
        self._held: list[CanFrame] | None = None  # frames of the datagram being gathered
        self._buffer = bytearray(_RECEIVE_BYTES)
        self.kernel_filter = False
        if filter_own_frames:
            self._open_send_socket()

    def _open_send_socket(self) -> None:
        sock = self._sock
        sender = socket.socket(sock.family, socket.SOCK_DGRAM)
        try:
            if sock.family == socket.AF_INET6:
                hops = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS)
                sender.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, hops)
                sender.bind(('::', 0))
            else:
                ttl = sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL)
                sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
                sender.bind(('0.0.0.0', 0))
            attach_filter(sock, drop_source_port_filter(sender.getsockname()[1]))
        except OSError:
            sender.close()  # frames go out through the bus socket and come back as echoes
            return
        self._send_sock = sender
        self.kernel_filter = True

    @classmethod
    def wrap(cls, bus: object, tag: str) -> UdpFastPath | None:
        """The fast path for ``bus`` if it is python-can's udp_multicast bus, else None."""
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

    def close(self) -> None:
        """Close the send socket (the bus socket belongs to python-can)."""
        if self._send_sock is not self._sock:
            with contextlib.suppress(OSError):
                self._send_sock.close()

    def hold(self) -> None:
        """Gather the frames sent from now on into one datagram (see :meth:`release`)."""
        if self._held is None:
            self._held = []

    def release(self) -> str | None:
        """Send the frames gathered since :meth:`hold` as one datagram and stop gathering;
        returns why it failed, or None."""
        held, self._held = self._held, None
        if not held:
            return None
        return self._send_held(held)

    def send(self, frame: CanFrame) -> str | None:
        """Send ``frame`` without waiting (or gather it while held); returns why it failed,
        or None."""
        held = self._held
        if held is None:
            return self._send_datagram(self._fields(frame, time.monotonic()))
        held.append(frame)
        if len(held) < MAX_FRAMES_PER_DATAGRAM:
            return None
        self._held = []
        return self._send_held(held)

    def _send_held(self, held: list[CanFrame]) -> str | None:
        # Stamped when they leave: the receiver acts on each frame at this send time.
        stamp = time.monotonic()
        if len(held) == 1:
            return self._send_datagram(self._fields(held[0], stamp))
        payload: list = [stamp, self._tag]
        for frame in held:
            payload += frame  # a CanFrame is its three fields
        return self._send_datagram(payload)

    def _fields(self, frame: CanFrame, stamp: float) -> dict:
        """One frame as python-can's udp_multicast packs a message."""
        data = frame.data
        return {
            # python-can's receiver replaces it with its receive time; this path's receiver
            # reads it as the send time (one host, one CLOCK_MONOTONIC).
            'timestamp': stamp,
            'arbitration_id': frame.arbitration_id,
            'is_extended_id': frame.is_extended_id,
            'is_remote_frame': False,
            'is_error_frame': False,
            'channel': self._tag,
            'dlc': len(data),
            'data': data,
            'is_fd': False,
            'bitrate_switch': False,
            'error_state_indicator': False,
        }

    def _send_datagram(self, payload: dict | list[dict]) -> str | None:
        packed = self._packb(payload, use_bin_type=True)
        try:
            self._send_sock.sendto(packed, socket.MSG_DONTWAIT, self._destination)
        except OSError as error:
            return str(error)
        return None

    def drain(
        self,
        owner: CanTransport,
        out: list[CanFrame],
        limit: int,
        sent_at: list[float] | None = None,
    ) -> int:
        """:meth:`CanTransport.drain` for this bus; counts into ``owner``."""
        received = 0
        latest = time.monotonic() + _SEND_TIME_SLACK_S
        sock = self._sock
        tag = self._tag_bytes
        buffer = self._buffer
        view = memoryview(buffer)
        for _ in range(2 * limit):
            try:
                size = sock.recv_into(buffer, _RECEIVE_BYTES, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError as error:
                owner.receive_errors += 1
                owner.last_error = f'receive: {error}'
                break
            if buffer.find(tag, 0, size) >= 0:
                owner.echoes += 1
                continue
            try:
                payload = self._unpackb(view[:size], raw=False)
            except Exception as error:  # any garbage datagram: count it, keep draining
                owner.receive_errors += 1
                owner.last_error = f'receive: undecodable datagram ({error})'
                continue
            # A datagram is one frame, or the frames a sender held (all of them are taken).
            if isinstance(payload, list):
                received += self._take_held(owner, payload, out, sent_at, latest)
            else:
                received += self._take(owner, payload, out, sent_at, latest)
            if received >= limit:
                break
        return received

    @staticmethod
    def _take_held(
        owner: CanTransport,
        payload: list,
        out: list[CanFrame],
        sent_at: list[float] | None,
        latest: float,
    ) -> int:
        """Append the frames of one held datagram; returns how many (a malformed frame is
        counted and skipped, a malformed header drops the datagram)."""
        size = len(payload)
        if size < HELD_HEADER_FIELDS or (size - HELD_HEADER_FIELDS) % HELD_FRAME_FIELDS:
            owner.receive_errors += 1
            owner.last_error = f'receive: a held datagram of {size} fields is not whole frames'
            return 0
        stamp = payload[0]
        if not (isinstance(stamp, float) and 0.0 < stamp <= latest):
            stamp = math.nan  # not a send time on this host's clock
        taken = 0
        bits = owner.bits_received
        for index in range(HELD_HEADER_FIELDS, size, HELD_FRAME_FIELDS):
            arbitration_id, data, extended = payload[index : index + HELD_FRAME_FIELDS]
            if (
                type(arbitration_id) is not int
                or type(data) is not bytes
                or type(extended) is not bool
                or len(data) > 8
            ):
                owner.receive_errors += 1
                owner.last_error = (
                    f'receive: frame {(index - HELD_HEADER_FIELDS) // HELD_FRAME_FIELDS} of a '
                    f'held datagram is not (id, data of at most 8 bytes, extended)'
                )
                continue
            out.append(CanFrame(arbitration_id, data, extended))
            bits += FRAME_BITS[extended][len(data)]
            taken += 1
        owner.bits_received = bits
        owner.frames_received += taken
        owner.held_received += 1
        if sent_at is not None:
            sent_at.extend([stamp] * taken)
        return taken

    @staticmethod
    def _take(
        owner: CanTransport,
        fields: Any,  # whatever the datagram unpacked to: checked here
        out: list[CanFrame],
        sent_at: list[float] | None,
        latest: float,
    ) -> int:
        """Append the frame of one packed message; 1, or 0 when it is none (counted)."""
        try:
            arbitration_id = fields['arbitration_id']
            extended = bool(fields['is_extended_id'])
            data = bytes(fields['data'])
        except Exception as error:  # not a frame: count it, keep draining
            owner.receive_errors += 1
            owner.last_error = f'receive: undecodable frame ({error})'
            return 0
        if (
            fields.get('is_remote_frame')
            or fields.get('is_error_frame')
            or fields.get('is_fd')
            or len(data) > 8
        ):
            owner.ignored += 1
            return 0
        out.append(CanFrame(arbitration_id, data, extended))
        if sent_at is not None:
            stamp = fields.get('timestamp')
            # Other senders stamp wall-clock time (or nothing): not a send time here.
            valid = isinstance(stamp, float) and 0.0 < stamp <= latest
            sent_at.append(stamp if valid else math.nan)
        owner.frames_received += 1
        owner.bits_received += FRAME_BITS[extended][len(data)]
        return 1
