"""A TCP proxy in front of PostgreSQL that a test can cut or freeze: a real
outage of the database for the connections through it, without stopping the
server others use. It runs on a thread with its own event loop, so sync tests
(an ``a2ad serve`` subprocess) and async ones use it alike."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["TcpProxy"]


class TcpProxy:
    """Listens on 127.0.0.1:``port`` and forwards to ``upstream`` (host, port).

    ``cut()``: every connection through it is closed and new ones are refused,
    as when the database goes down. ``freeze()``: connections stay open but
    nothing passes, and new ones get no answer, as a network that drops
    packets. ``restore()`` ends either."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._flowing: asyncio.Event | None = None
        self._call(self._listen())

    def _call(self, work: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(10)

    def url(self, database_url: str) -> str:
        """``database_url`` (postgresql://user@host:port/...) through the proxy."""
        host = f"{self.upstream[0]}:{self.upstream[1]}"
        assert host in database_url, (host, database_url)
        return database_url.replace(host, f"127.0.0.1:{self.port}", 1)

    def cut(self) -> None:
        self._call(self._cut())

    def freeze(self) -> None:
        self._call(self._freeze())

    def restore(self) -> None:
        self._call(self._restore())

    def close(self) -> None:
        self._call(self._cut())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    # --- on the proxy's loop ---

    async def _listen(self) -> None:
        if self._flowing is None:
            self._flowing = asyncio.Event()
            self._flowing.set()
        self._server = await asyncio.start_server(
            self._link, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._links):
            writer.transport.abort()
        self._links.clear()

    async def _freeze(self) -> None:
        assert self._flowing is not None
        self._flowing.clear()

    async def _restore(self) -> None:
        assert self._flowing is not None
        self._flowing.set()
        if self._server is None:
            await self._listen()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        self._links.add(writer)
        try:
            await self._flowing.wait()
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            self._links.discard(writer)
            return
        self._links.add(up_writer)
        await asyncio.gather(
            self._pump(reader, up_writer), self._pump(up_reader, writer), return_exceptions=True
        )
        for end in (writer, up_writer):
            self._links.discard(end)
            end.transport.abort()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()  # frozen: held, as by a network that lost it
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.transport.abort()
