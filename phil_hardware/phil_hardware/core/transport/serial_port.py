"""The Dynamixel serial port of the controller (pyserial; a real adapter or a PTY).

A baud rate the port refuses is a warning on a PTY (a simulator ignores it) and an error on a
real adapter; the USB latency timer is read and advice given (never an error).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .can_bus import TransportError
from .tty_reader import TtyReader

if TYPE_CHECKING:
    from phil_description.core import SerialBusParams

PTY_MAJORS = range(136, 144)  # Unix98 PTY slaves (/dev/pts/N)


def is_pty(path: str) -> bool:
    """True when ``path`` (after symlinks) is a pseudo-terminal slave."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) in PTY_MAJORS


def latency_timer_path(port: str) -> Path:
    """sysfs file of an FTDI-style USB serial adapter's latency timer (may not exist)."""
    device = Path(os.path.realpath(port)).name
    return Path('/sys/bus/usb-serial/devices') / device / 'latency_timer'


def read_latency_timer_ms(port: str) -> int | None:
    """Return the adapter's latency timer [ms], or None when the port has none (PTY, CH340)."""
    try:
        return int(latency_timer_path(port).read_text().strip())
    except (OSError, ValueError):
        return None


def latency_advice(port: str, wanted_ms: int) -> str | None:
    """A warning text when a USB adapter's latency timer is above ``wanted_ms``, else None."""
    current = read_latency_timer_ms(port)
    if current is None or current <= wanted_ms:
        return None
    return (
        f'serial port {port}: USB latency_timer is {current} ms (wanted {wanted_ms} ms); every '
        f'Dynamixel read waits that long. Fix: echo {wanted_ms} > {latency_timer_path(port)} '
        '(or a udev rule)'
    )


def open_serial_port(params: SerialBusParams, warn: Callable[[str], None]) -> Any:
    """Open the Dynamixel port with pyserial, raw 8N1, non-blocking reads.

    A baud rate the port refuses is a warning on a PTY (a simulator ignores it) and an error on
    a real adapter. The USB latency timer is read and advice is passed to ``warn``.

    Args:
        params: Port path, baud rate, wanted latency timer.
        warn: Receives human-readable warnings (called at open time only).

    Returns:
        An open ``serial.Serial``.

    Raises:
        TransportError: The port does not exist or cannot be opened, or a real adapter refuses
            the baud rate.
    """
    import serial

    pty = is_pty(params.port)
    try:
        port = serial.Serial(params.port, baudrate=params.baudrate, timeout=0, write_timeout=0)
    except (serial.SerialException, ValueError, OSError) as error:
        if not pty:
            raise TransportError(
                f'serial bus {params.name!r}: cannot open {params.port} at {params.baudrate} '
                f'baud: {error}. Is the adapter plugged in and the baud rate supported?'
            ) from error
        warn(
            f'serial bus {params.name!r}: PTY {params.port} refused {params.baudrate} baud '
            f'({error}); continuing at the PTY default'
        )
        try:
            port = serial.Serial(params.port, timeout=0, write_timeout=0)
        except (serial.SerialException, OSError) as again:
            raise TransportError(
                f'serial bus {params.name!r}: cannot open PTY {params.port}: {again}'
            ) from again
    if not pty:
        advice = latency_advice(params.port, params.latency_timer_ms)
        if advice:
            warn(advice)
    return port


def _nonblocking_fd(port: Any) -> int | None:
    """The port's descriptor if it is non-blocking (pyserial opens it O_NONBLOCK), else None.

    pyserial's ``write`` with ``write_timeout=0`` retries EAGAIN in a busy loop until the
    output buffer has room: in the bus loop's tick that is a SCHED_FIFO spin for as long as
    the line stays full. Writing the descriptor directly returns at once instead.
    """
    try:
        fd = port.fileno()
        return fd if isinstance(fd, int) and fd >= 0 and not os.get_blocking(fd) else None
    except (AttributeError, OSError, ValueError):
        return None


class SerialTransport:
    """The Dynamixel serial port for the controller: write bytes, read what has arrived.

    Not thread-safe: one thread (the bus loop) owns it. A port with a non-blocking descriptor
    is read by a :class:`~.tty_reader.TtyReader` thread of its own (a read can wait for the
    kernel's tty worker; the bus loop must not).

    Attributes:
        name: Bus name (e.g. ``dxl``).
        bytes_sent / bytes_received: Byte counters.
        write_errors / read_errors: Failed writes / reads (counted, not raised).
    """

    def __init__(self, name: str, port: Any) -> None:
        """Wrap an open pyserial-like port (``write``, ``read``, ``in_waiting``, ``close``).

        Args:
            name: Bus name.
            port: Open port with a zero read timeout; :meth:`close` closes it.
        """
        self.name = name
        self._port = port
        self._fd = _nonblocking_fd(port)
        # A read of the line can wait for the kernel's tty worker: a thread takes that wait.
        self._reader = TtyReader(self._fd, name) if self._fd is not None else None
        self.bytes_sent = 0
        self.bytes_received = 0
        self.packets_sent = 0
        self.write_errors = 0
        self.read_errors = 0
        self.last_error = ''

    @property
    def port(self) -> Any:
        """The wrapped port object."""
        return self._port

    @property
    def bytes_arrived(self) -> int:
        """Bytes the line has brought so far: those :meth:`read` returned and those the reader
        thread holds for the next :meth:`read`."""
        return self._reader.bytes_read if self._reader is not None else self.bytes_received

    def write(self, packet: bytes) -> bool:
        """Write one packet without waiting for a reply.

        Returns:
            True when the whole packet was written.
        """
        try:
            if self._fd is not None:
                written = os.write(self._fd, packet)
            else:
                written = self._port.write(packet)
        except BlockingIOError:
            # The line's output buffer is full (a reader that does not keep up): drop the
            # packet, never wait for room.
            self.write_errors += 1
            self.last_error = f'write: output buffer full, {len(packet)} bytes dropped'
            return False
        except (OSError, ValueError) as error:  # SerialException is an OSError
            self.write_errors += 1
            self.last_error = f'write: {error}'
            return False
        if written is not None and written != len(packet):
            self.write_errors += 1
            self.last_error = f'write: {written} of {len(packet)} bytes'
            return False
        self.bytes_sent += len(packet)
        self.packets_sent += 1
        return True

    def read(self) -> bytes:
        """Return every byte that has arrived (possibly ``b''``), without waiting: from the
        reader thread (a descriptor), or the port's buffer."""
        if self._reader is not None:
            data, errors = self._reader.take()
            if errors:
                self.read_errors += len(errors)
                self.last_error = f'read: {errors[-1]}'
        else:
            try:
                waiting = self._port.in_waiting
                if not waiting:
                    return b''
                data = self._port.read(waiting)
            except (OSError, ValueError) as error:  # SerialException is an OSError
                self.read_errors += 1
                self.last_error = f'read: {error}'
                return b''
        self.bytes_received += len(data)
        return data

    def discard_input(self) -> None:
        """Drop unread input (e.g. before a discovery ping)."""
        self.read()

    def close(self) -> None:
        """Stop reading, then close the port (idempotent)."""
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        self._fd = None  # the number may be reused once the port is closed
        with contextlib.suppress(OSError):  # SerialException is an OSError
            self._port.close()
