"""A pseudo-terminal standing in for the Dynamixel USB adapter.

The simulator owns the master end; clients (dynamixel_sdk, pyserial) open the slave path like a
real serial port. Both ends are raw (no echo, no line editing). The simulator also keeps the
slave open itself so the master never reports a hang-up while no client is connected. Setting a
baud rate on a PTY fails harmlessly for clients; the line has no speed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tty
from pathlib import Path

_LOG = logging.getLogger(__name__)


class PtyPort:
    """A raw PTY pair, optionally reachable through a symlink.

    Args:
        link_path: Create this symlink to the slave device (parent directories are created).
            An existing symlink is replaced; any other existing file is left alone.

    Attributes:
        slave_path: Device path clients open, e.g. ``/dev/pts/5``.
        link_path: The symlink, or None.
        bytes_dropped: Outgoing bytes dropped because nobody read the line.

    Raises:
        FileExistsError: If ``link_path`` exists and is not a symlink.
        OSError: If the PTY or the symlink cannot be created.
    """

    def __init__(self, link_path: str | Path | None = None) -> None:
        self._master, self._slave = os.openpty()
        self.link_path: Path | None = None
        self.bytes_dropped = 0
        try:
            tty.setraw(self._master)
            tty.setraw(self._slave)
            os.set_blocking(self._master, False)
            self.slave_path = os.ttyname(self._slave)
            if link_path is not None:
                self._link(Path(link_path))
        except BaseException:
            self._close_fds()
            raise

    def _link(self, path: Path) -> None:
        if path.is_symlink():
            path.unlink()  # a previous run's link: it points to a PTY that is gone
        elif path.exists():
            raise FileExistsError(
                f'{path} exists and is not a symlink; refusing to replace it with a link to '
                f'the simulated Dynamixel port (remove it or choose another path)'
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(self.slave_path)
        self.link_path = path

    def fileno(self) -> int:
        """File descriptor of the master end (for ``select``)."""
        return self._master

    def read(self, max_bytes: int = 4096) -> bytes:
        """Return what clients wrote, b'' if nothing is waiting (never blocks)."""
        try:
            return os.read(self._master, max_bytes)
        except BlockingIOError:
            return b''
        except OSError as error:
            if error.errno == errno.EIO:  # no client side open right now
                return b''
            raise

    def write(self, data: bytes) -> int:
        """Send bytes to the client; drops them if the line's buffer is full.

        Returns:
            Number of bytes written.
        """
        written = 0
        while written < len(data):
            try:
                written += os.write(self._master, data[written:])
            except BlockingIOError:
                self.bytes_dropped += len(data) - written
                _LOG.debug('PTY %s full, %d bytes dropped', self.slave_path, len(data) - written)
                break
        return written

    def close(self) -> None:
        """Remove the symlink (if it still points to this PTY) and close both ends."""
        if self.link_path is not None:
            try:
                if os.readlink(self.link_path) == self.slave_path:
                    self.link_path.unlink()
            except OSError:
                pass  # already gone or replaced by someone else: not ours to remove
            self.link_path = None
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._master = self._slave = -1

    def __enter__(self) -> PtyPort:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
