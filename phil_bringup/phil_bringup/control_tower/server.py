"""The control tower's web server (ROS-free, aiohttp in a thread of its own).

``/`` the page (the bundle built at set-up from ``phil_bringup/web``; no CDN), ``/ws`` a
WebSocket: a ``hello`` (URDF, joints and limits, play ids, pads) then a ``state`` frame
``rate_hz`` times a second; the page sends ``{"line": "PLAY|rock"}`` and gets ``{"type":
"reply", "line", "reply": "OK|PLAY" | "ERR|PLAY|reason"}``, the command decided by the graph
as a TCP line is (``handle_line``, called in a worker thread; ``estop_now`` first, on the
server's own thread, for an ESTOP line). ``/plots/`` lists the run's
figures (``phil plot``). Each client gets the newest frame when it is ready for one, with the
hits and impacts since its last one: a slow page skips frames (never events) and never holds up
the others or the graph.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aiohttp import WSMsgType, web

from phil_bringup.control_tower.tower_state import TowerState

_logger = logging.getLogger(__name__)
MAX_LINE_CHARS = 4096
PLOT_SUFFIXES = ('.png', '.svg', '.html', '.txt', '.json')
#: The built page's files (``phil_bringup/web``, ``npm run build``) besides index.html.
PAGE_FILES = ('tower.js', 'style.css')


class TowerServer:
    """Serve the page on ``host:port`` (0: any free port)."""

    def __init__(
        self,
        state: TowerState,
        hello: dict,
        handle_line: Callable[[str], str],
        static_dir: Path,
        plots_dir: Path | None,
        host: str,
        port: int,
        rate_hz: float,
        estop_now: Callable[[], object] = lambda: None,
    ) -> None:
        self._state, self._hello, self._handle_line = state, hello, handle_line
        self._estop_now = estop_now
        self._static_dir, self._plots_dir = static_dir, plots_dir
        self._host, self._port, self._period_s = host, port, 1.0 / rate_hz
        self._clients: dict[web.WebSocketResponse, asyncio.Event] = {}
        self._frame: dict = {}
        self._workers = concurrent.futures.ThreadPoolExecutor(8, 'tower-command')
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.address: tuple[str, int] | None = None

    def start(self, timeout_s: float = 10.0) -> tuple[str, int]:
        """Serve from a thread; the address bound (OSError when the port is taken)."""
        self._thread = threading.Thread(target=self._run, name='control-tower', daemon=True)
        self._thread.start()
        self._started.wait(timeout_s)
        if self._error is not None:
            raise self._error
        if self.address is None:
            raise OSError(f'the control tower did not start within {timeout_s} s')
        return self.address

    def stop(self, timeout_s: float = 5.0) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._workers.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # reported to start()
            self._error = error
            self._started.set()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get('/', self._page)
        app.router.add_get('/ws', self._websocket)
        app.router.add_get('/plots/', self._plots)
        app.router.add_get('/plots/{name}', self._plot)
        for name in PAGE_FILES:  # by name only: nothing else of the folder is served
            app.router.add_get(f'/{name}', self._page_file(name))
        return app

    def _page_file(self, name: str):
        async def serve(_request: web.Request) -> web.StreamResponse:
            return web.FileResponse(self._static_dir / name)

        return serve

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        runner = web.AppRunner(self._app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port, reuse_address=True)
        await site.start()
        self.address = site._server.sockets[0].getsockname()[:2]
        self._started.set()
        frames = asyncio.create_task(self._frames())
        try:
            await self._stopping.wait()
        finally:
            frames.cancel()
            for client in list(self._clients):
                await client.close()
            await runner.cleanup()

    async def _frames(self) -> None:
        """Take a frame every period; wake each client's sender."""
        while True:
            now = self._loop.time()
            self._frame = self._state.frame(time.time())
            for ready in self._clients.values():
                ready.set()
            await asyncio.sleep(max(0.0, self._period_s - (self._loop.time() - now)))

    async def _page(self, _request: web.Request) -> web.StreamResponse:
        return web.FileResponse(self._static_dir / 'index.html')

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        client = web.WebSocketResponse(heartbeat=10.0, max_msg_size=MAX_LINE_CHARS * 2)
        await client.prepare(request)
        await client.send_str(json.dumps(self._hello))
        ready = self._clients[client] = asyncio.Event()
        sender = asyncio.create_task(self._send_frames(client, ready))
        try:
            async for message in client:
                if message.type != WSMsgType.TEXT:
                    continue
                await client.send_str(json.dumps(await self._command(message.data)))
        finally:
            self._clients.pop(client, None)
            sender.cancel()
        return client

    async def _send_frames(self, client: web.WebSocketResponse, ready: asyncio.Event) -> None:
        """The newest frame whenever the last one has left, with the events it has not had."""
        sequence = self._state.events_since(0)[1]  # a new page starts from now
        try:
            while not client.closed:
                await ready.wait()
                ready.clear()
                events, sequence = self._state.events_since(sequence)
                await client.send_str(json.dumps({**self._frame, **events}, allow_nan=False))
        except (ConnectionError, asyncio.CancelledError):
            pass  # the page went away
        except Exception:  # a frame that cannot be sent: say so, close that page
            _logger.exception('control tower: a state frame could not be sent; page closed')
            await client.close()

    async def _command(self, text: str) -> dict:
        try:
            line = json.loads(text)['line']
            if not isinstance(line, str) or len(line) > MAX_LINE_CHARS:
                raise ValueError('line must be a string of at most 4096 characters')
        except (ValueError, KeyError, TypeError) as error:
            return {'type': 'reply', 'line': '', 'reply': f'ERR|-|not a command message: {error}'}
        if line.strip().upper() == 'ESTOP':
            self._estop_now()  # at once, before any worker is free; the line follows in turn
        reply = await self._loop.run_in_executor(self._workers, self._handle_line, line)
        return {'type': 'reply', 'line': line, 'reply': reply}

    async def _plots(self, _request: web.Request) -> web.Response:
        files = self._plot_files()
        items = ''.join(
            f'<li><a href="{html.escape(name)}">{html.escape(name)}</a></li>' for name in files
        )
        where = html.escape(str(self._plots_dir)) if self._plots_dir else 'no run folder'
        body = (
            f'<!doctype html><title>Phil plots</title><h1>Plots of this run</h1><p>{where}: '
            f'<code>phil plot RUN</code> writes them.</p><ul>{items or "<li>none yet</li>"}</ul>'
        )
        return web.Response(text=body, content_type='text/html')

    async def _plot(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info['name']
        if name not in self._plot_files():  # only the folder's own files, by name
            raise web.HTTPNotFound(text=f'no plot {name!r} in this run')
        return web.FileResponse(self._plots_dir / name)

    def _plot_files(self) -> list[str]:
        folder = self._plots_dir
        if folder is None or not folder.is_dir():
            return []
        return sorted(
            p.name for p in folder.iterdir() if p.is_file() and p.suffix in PLOT_SUFFIXES
        )
