"""Reading a serial line without waiting for the kernel's tty worker.

Bytes that arrive on a tty (a USB adapter's or a PTY's) reach the reader through the tty
layer's flush worker, a time-sharing kernel thread. A ``read`` or ``poll`` of the line while
bytes are on their way waits for that worker to run, non-blocking or not: a real-time thread
that reads the port waits for as long as the busy machine keeps the worker from running. In
the whole graph the bus loop's non-blocking read of the Dynamixel line took p99 1.2 ms, p99.9
5.2 ms, max 25 ms: the late ticks and most of the loop's overruns.

:class:`TtyReader` takes that wait in a thread of its own, which sleeps in ``select`` and
appends what it reads to a queue; the real-time loop takes the queued bytes without a system
call. Python's lock is released while the thread waits, so the loop never waits for it.
"""

from __future__ import annotations

import collections
import os
import select
import threading

#: One read takes what has arrived: 4.5 Mbit/s bring at most ~560 bytes per 1 ms tick.
READ_CHUNK_BYTES = 4096
#: Longest wait in ``select`` before the thread looks whether it should stop [s].
_WAKE_S = 0.05
#: Pause after a failed read, so a line that fails for good is not read in a busy loop [s].
_AFTER_ERROR_S = 0.01


class TtyReader:
    """Reads descriptor ``fd`` in a daemon thread; :meth:`take` returns what it read.

    Attributes:
        bytes_read: Bytes read from the line so far, taken or not (written by the thread).
    """

    def __init__(self, fd: int, name: str) -> None:
        """Start reading ``fd`` (a non-blocking tty descriptor the caller keeps open until
        :meth:`stop` returned).

        Args:
            fd: The descriptor.
            name: For the thread's name (the bus).
        """
        self._fd = fd
        self._chunks: collections.deque[bytes] = collections.deque()
        self._errors: collections.deque[str] = collections.deque(maxlen=100)
        self._stop = threading.Event()
        self.bytes_read = 0
        self._thread = threading.Thread(target=self._run, name=f'tty-reader-{name}', daemon=True)
        self._thread.start()

    def take(self) -> tuple[bytes, list[str]]:
        """The bytes read since the last call (``b''`` if none) and the read errors since then
        (never waits: deque operations are atomic)."""
        chunks = self._chunks
        data = b''.join(chunks.popleft() for _ in range(len(chunks))) if chunks else b''
        errors = self._errors
        return data, [errors.popleft() for _ in range(len(errors))] if errors else []

    def stop(self, timeout_s: float = 1.0) -> None:
        """Ask the thread to stop and wait for it (at most ``timeout_s``)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        fd = self._fd
        stop = self._stop
        while not stop.is_set():
            try:
                if not select.select([fd], [], [], _WAKE_S)[0]:
                    continue
                data = os.read(fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                continue  # another reader took it first
            except (OSError, ValueError) as error:  # ValueError: the descriptor was closed
                if stop.is_set():
                    return
                self._errors.append(str(error))
                stop.wait(_AFTER_ERROR_S)
                continue
            if data:
                self._chunks.append(data)
                self.bytes_read += len(data)
            else:  # end of file: the other end is gone (unplugged, simulator stopped)
                self._errors.append('the line hung up (end of file)')
                stop.wait(_AFTER_ERROR_S)


__all__ = ['READ_CHUNK_BYTES', 'TtyReader']
