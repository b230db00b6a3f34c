"""Commands to the bus-loop process, written without waiting.

A command leaves from the caller's thread when nothing is queued before it and the socket takes
it whole at once (``MSG_DONTWAIT``); otherwise it, or the part the socket did not take, goes to
a sender thread that writes in order and may wait for the loop to read. Handing every command to
a thread cost up to 3 ms of its latency: the thread first waits for the GIL.

Frames are those of :mod:`multiprocessing.connection` (4-byte big-endian length, then the
pickle), so the loop reads them with ``Connection.recv()``.
"""

from __future__ import annotations

import os
import pickle
import queue
import socket
import struct
import threading
from collections.abc import Callable

MAX_FRAME_BYTES = 0x7FFFFFFF  # the 4-byte length field (larger frames use another header)


def encode_frame(message: object) -> bytes:
    """``message`` as ``Connection.send`` frames it."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f'command of {len(payload)} bytes is too large to send')
    return struct.pack('!i', len(payload)) + payload


class CommandWire:
    """Writes framed commands to the socket of a ``multiprocessing`` pipe end. Thread-safe.

    Args:
        fileno: The pipe end's descriptor (duplicated; the caller keeps and closes its own).
        on_failure: Called from the sender thread as ``on_failure(tag, text)`` when a queued
            command could not be written.
        queue_size: Commands that may wait for the sender thread.
    """

    def __init__(self, fileno: int, on_failure: Callable[[object, str], None],
                 queue_size: int) -> None:
        self._socket = socket.socket(fileno=os.dup(fileno))
        self._on_failure = on_failure
        self._outbox: queue.Queue = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._waiting = 0  # commands in the outbox or being written by the sender thread
        self._thread = threading.Thread(target=self._send_loop, name='phil-bus-loop-sender',
                                        daemon=True)
        self._thread.start()

    def send(self, tag: object, message: object) -> None:
        """Write ``message`` now, or queue it behind the commands already waiting.

        Raises:
            queue.Full: Too many commands wait already (nothing was written).
            OSError: The socket failed (nothing more will be written of this command).
            ValueError, pickle.PicklingError: ``message`` cannot be sent.
        """
        frame = encode_frame(message)
        with self._lock:
            written = 0
            if self._waiting == 0:
                try:
                    written = self._socket.send(frame, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
                except BlockingIOError:
                    written = 0
                if written == len(frame):
                    return
            # Behind every waiting command; the rest of a partly written frame comes first,
            # as the outbox was empty.
            self._outbox.put_nowait((tag, frame[written:]))
            self._waiting += 1

    def close(self, timeout_s: float = 2.0) -> None:
        """Write what is queued (the reader must still read), stop the thread, close."""
        self._outbox.put(None)
        self._thread.join(timeout_s)
        self._socket.close()

    def _send_loop(self) -> None:
        while (item := self._outbox.get()) is not None:
            tag, data = item
            try:
                self._socket.sendall(data, socket.MSG_NOSIGNAL)
            except OSError as error:
                self._on_failure(tag, f'send to the bus loop failed: {error}')
            finally:
                with self._lock:
                    self._waiting -= 1
