"""A page's connection to the control tower (``/ws``) from a test or benchmark: one command
line at a time, its reply (what a button press sends and what the page is told)."""

from __future__ import annotations

import asyncio
import json
import threading

import aiohttp


class TowerConnection:
    """Connected to ``url`` (``ws://host:port/ws``) until :meth:`close`; the state frames it is
    sent are read and dropped, as a page that only presses buttons would."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._timeout_s = timeout_s
        self._replies: asyncio.Queue | None = None
        self._run(self._connect(url))

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout_s)

    async def _connect(self, url: str) -> None:
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(url)
        self._replies = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            data = json.loads(message.data)
            if data.get('type') == 'reply':
                await self._replies.put(data['reply'])

    async def _line(self, text: str) -> str:
        await self._ws.send_str(json.dumps({'line': text}))
        return await self._replies.get()

    def line(self, text: str) -> str:
        """Send one command line; its reply (``OK|...`` or ``ERR|...``)."""
        return self._run(self._line(text))

    def close(self) -> None:
        async def close():
            self._reader.cancel()
            await self._ws.close()
            await self._http.close()

        try:
            self._run(close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)
