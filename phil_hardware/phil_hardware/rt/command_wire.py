"""Commands to the bus-loop process, written without waiting.

A command leaves from the caller's thread when nothing is queued before it and the socket takes
it whole at once (``MSG_DONTWAIT``); otherwise it, or the part the socket did not take, goes to
a sender thread that writes in order and may wait for the loop to read. Handing every command to
a thread cost up to 3 ms of its latency: the thread first waits for the GIL.

Frames are those of :mod:`multiprocessing.connection` (4-byte big-endian length, then the
pickle), so ``Connection.recv()`` reads them too. The loop reads them with
:class:`CommandReader`, which never waits: ``Connection.poll(0)`` builds a selector on every
call and cost the loop ~30 us per tick.
"""

from __future__ import annotations

import os
import pickle
import queue
import select
import socket
import struct
import threading
from collections.abc import Callable

MAX_FRAME_BYTES = 0x7FFFFFFF  # the 4-byte length field (larger frames use another header)
_LONG_FRAME = -1  # Connection's header for larger frames: -1, then an 8-byte length
NO_MESSAGE = object()  # CommandReader.next_message(): nothing complete has arrived


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
        queue_size: Commands that may wait for the sender thread, the one it is writing
            included: counted under the lock, so the limit does not depend on whether the
            thread has taken the first one yet.
    """

    def __init__(
        self, fileno: int, on_failure: Callable[[object, str], None], queue_size: int
    ) -> None:
        if queue_size < 1:
            raise ValueError(f'queue_size must be at least 1, not {queue_size}')
        self._socket = socket.socket(fileno=os.dup(fileno))
        self._on_failure = on_failure
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._queue_size = queue_size
        self._lock = threading.Lock()
        self._waiting = 0  # commands in the outbox or being written by the sender thread
        self._thread = threading.Thread(
            target=self._send_loop, name='phil-bus-loop-sender', daemon=True
        )
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
            elif self._waiting >= self._queue_size:
                raise queue.Full(f'{self._waiting} commands wait for the bus loop already')
            # Behind every waiting command; the rest of a partly written frame comes first,
            # as the outbox was empty.
            self._outbox.put((tag, frame[written:]))
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
                failure = f'send to the bus loop failed: {error}'
            else:
                failure = None
            # No longer waiting before anyone hears of the failure: a send() after it goes
            # straight to the socket and fails there.
            with self._lock:
                self._waiting -= 1
            if failure is not None:
                self._on_failure(tag, failure)


class CommandReader:
    """Reads the frames of a ``multiprocessing`` pipe end without ever waiting. Not
    thread-safe: the bus loop owns it.

    Args:
        fileno: The pipe end's descriptor (duplicated; the caller keeps and closes its own, and
            may keep writing replies through its ``Connection``).
        max_read_bytes: Bytes taken from the socket per call at most: a large frame arrives
            over several calls instead of one long copy.
    """

    def __init__(self, fileno: int, max_read_bytes: int = 256 * 1024) -> None:
        # MSG_DONTWAIT per call, not O_NONBLOCK: the flag would be shared with the duplicate,
        # and the replies written through the Connection must still block.
        self._socket = socket.socket(fileno=os.dup(fileno))
        self._max_read_bytes = max_read_bytes
        self._buffer = bytearray()
        self._closed = False

    def next_message(self) -> object:
        """The next complete message, or :data:`NO_MESSAGE`.

        Raises:
            EOFError: The writer closed its end and every complete message was read.
            OSError: The socket failed, or a frame header is corrupt (nothing after it can be
                read).
            Exception: The frame did not unpickle (the frame is consumed; the next call goes on
                with the next one).
        """
        payload = self._take_frame()
        if payload is None and not self._closed:
            self._fill()
            payload = self._take_frame()
        if payload is not None:
            return pickle.loads(payload)
        if self._closed:
            raise EOFError('the command pipe was closed')
        return NO_MESSAGE

    def wait_readable(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for input; True at once if a whole frame is buffered."""
        if self._closed:
            return True
        try:
            if self._frame_bounds() is not None:
                return True
        except OSError:
            return True  # the next read reports the corrupt frame
        return bool(select.select((self._socket,), (), (), timeout_s)[0])

    def close(self) -> None:
        """Close the duplicate descriptor."""
        self._socket.close()

    def _fill(self) -> None:
        taken = 0
        while taken < self._max_read_bytes:
            try:
                data = self._socket.recv(self._max_read_bytes - taken, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if not data:
                self._closed = True
                return
            self._buffer += data
            taken += len(data)

    def _take_frame(self) -> bytes | None:
        bounds = self._frame_bounds()
        if bounds is None:
            return None
        start, end = bounds
        payload = bytes(self._buffer[start:end])
        del self._buffer[:end]
        return payload

    def _frame_bounds(self) -> tuple[int, int] | None:
        """(payload start, end) of the first buffered frame when it is whole, else None.

        Raises:
            OSError: The header is corrupt; the stream cannot be followed any further.
        """
        buffer = self._buffer
        if len(buffer) < 4:
            return None
        (size,) = struct.unpack_from('!i', buffer)
        start = 4
        if size == _LONG_FRAME:
            if len(buffer) < 12:
                return None
            (size,) = struct.unpack_from('!Q', buffer, 4)
            start = 12
        elif size < 0:
            raise OSError(f'corrupt command frame: length {size}')
        end = start + size
        return (start, end) if len(buffer) >= end else None
