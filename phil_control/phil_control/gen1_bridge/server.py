"""The Gen-1 TCP server (ROS-free): messages in, the state line out to every client.

One asyncio loop in a thread of its own. Each client's commands are handled one after the other
in a worker thread (``handle`` may wait for the planner's answer); its next bytes are read only
when they are handled, so a flood is held back by TCP flow control. ``broadcast`` (any thread)
sends a line to every client; a client that does not read is dropped once its unsent lines
pass ``MAX_OUTPUT_BYTES``. A newcomer gets the last line at once. Nothing is ever written to a
client but state lines: the Gen-1 protocol has no replies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import threading
from collections.abc import Callable

from phil_control.core.gen1.messages import Gen1Message, Gen1Splitter

_logger = logging.getLogger(__name__)
MAX_OUTPUT_BYTES = 1 << 20
READ_BYTES = 4096


class Gen1Server:
    """Serve ``handle(command_text, client_id)`` and ``on_error(message, client_id)`` on
    ``host:port`` (0: any free port); ``max_clients`` at once (a newcomer beyond is closed)."""

    def __init__(
        self,
        handle: Callable[[str, int], None],
        on_error: Callable[[Gen1Message, int], None],
        host: str,
        port: int,
        max_clients: int = 8,
    ) -> None:
        self._handle, self._on_error = handle, on_error
        self._host, self._port, self._max_clients = host, port, max_clients
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._last_line = b''
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._workers = concurrent.futures.ThreadPoolExecutor(max_clients, 'gen1-command')
        self._next_id = 0
        self.address: tuple[str, int] | None = None

    def start(self, timeout_s: float = 5.0) -> tuple[str, int]:
        """Listen (OSError when the port is taken); the address bound."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self._host, self._port))
            sock.listen(8)
        except OSError:
            sock.close()
            raise
        self.address = sock.getsockname()[:2]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._main(sock, ready),), name='gen1-server', daemon=True
        )
        self._thread.start()
        ready.wait(timeout_s)
        return self.address

    def stop(self, timeout_s: float = 2.0) -> None:
        self._call_soon(lambda: self._stopping.set())
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._workers.shutdown(wait=False, cancel_futures=True)

    def broadcast(self, line: str) -> None:
        """Send ``line`` (without its newline) to every client, from any thread."""
        data = line.encode() + b'\n'
        self._last_line = data  # also what a client that connects later gets first
        self._call_soon(lambda: self._send_all(data))

    def _call_soon(self, call: Callable[[], None]) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(call)

    async def _main(self, sock: socket.socket, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._serve, sock=sock)
        ready.set()
        async with server:
            await self._stopping.wait()
            for writer in list(self._writers.values()):
                writer.close()

    def _send_all(self, data: bytes) -> None:
        for client_id, writer in list(self._writers.items()):
            self._send(client_id, writer, data)

    def _send(self, client_id: int, writer: asyncio.StreamWriter, data: bytes) -> None:
        if writer.transport.get_write_buffer_size() > MAX_OUTPUT_BYTES:
            _logger.warning('gen1 client %d does not read its state lines; dropped', client_id)
            self._writers.pop(client_id, None)
            writer.transport.abort()
            return
        writer.write(data)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_id += 1
        client_id = self._next_id
        if len(self._writers) >= self._max_clients:
            _logger.warning(
                'gen1 client %d refused: %d clients connected', client_id, len(self._writers)
            )
            writer.close()
            return
        self._writers[client_id] = writer
        if self._last_line:
            self._send(client_id, writer, self._last_line)
        splitter = Gen1Splitter()
        loop = asyncio.get_running_loop()
        try:
            while data := await reader.read(READ_BYTES):
                for message in splitter.feed(data):
                    if message.error:
                        self._on_error(message, client_id)
                    for text in message.commands:
                        await loop.run_in_executor(self._workers, self._handle, text, client_id)
        except (ConnectionError, RuntimeError, asyncio.CancelledError):
            pass  # reset by the peer, or the server is stopping
        finally:
            self._writers.pop(client_id, None)
            writer.close()
