"""A real ``a2ad serve --workers 2`` (a parent and two processes sharing its
port) on a SQLite file or a fresh PostgreSQL schema, and JSON-RPC 1.0 to it.

Which process a request reaches is the kernel's choice, made per connection. A
test that needs a particular process keeps one keep-alive connection to each
(``Workers.reach_each``): a client of one connection whose ``pid`` message was
answered by that process's agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..jsonrpc import answer, rpc_body
from ..multi.wire import result_of, send_params, state_of, status_text  # noqa: F401  (the tests take them from here)
from ..served import Served
from ..server.sse_client import Frame, frames

V1 = {"A2A-Version": "1.0"}
AGENT = ("--agent", "tests.multi.agents:MultiAgent")
WAIT = 10.0  # seconds a test waits for what it expects
START_WAIT = 60.0  # for the processes to start: slow on a shared, loaded machine


class Workers:
    """One ``a2ad serve --workers 2`` and its output (every process writes to it)."""

    def __init__(self, served: Served, backend: str, store: str) -> None:
        self.served = served
        self.backend = backend
        self.store = store
        served.expect(r"Press Ctrl-C to stop", START_WAIT)  # the banner, once all serve
        self.url = served.url + "/"
        self._ids = 0

    def body(self, method: str, params: Any) -> dict[str, Any]:
        self._ids += 1
        return rpc_body(method, params, self._ids)

    async def raw(self, http: httpx.AsyncClient, method: str, params: Any) -> dict[str, Any]:
        return answer(await http.post(self.url, json=self.body(method, params), headers=V1))

    async def call(self, http: httpx.AsyncClient, method: str, params: Any) -> Any:
        answer = await self.raw(http, method, params)
        assert "error" not in answer, answer
        return answer["result"]

    async def send(
        self, http: httpx.AsyncClient, text: str, *, immediately: bool = False, **message: Any
    ) -> dict[str, Any]:
        """SendMessage; the task."""
        params = send_params(text, **message)
        if immediately:
            params["configuration"] = {"returnImmediately": True}
        return (await self.call(http, "SendMessage", params))["task"]  # type: ignore[no-any-return]

    async def get(self, http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
        return await self.call(http, "GetTask", {"id": task_id})  # type: ignore[no-any-return]

    async def pid(self, http: httpx.AsyncClient) -> int:
        """The pid of the process ``http``'s connection reaches."""
        task = await self.send(http, "pid")
        return int(status_text(task).split()[1])

    @contextlib.asynccontextmanager
    async def reach_each(self) -> AsyncIterator[dict[int, httpx.AsyncClient]]:
        """A client of one keep-alive connection to each process, by its pid."""
        reached: dict[int, httpx.AsyncClient] = {}
        async with contextlib.AsyncExitStack() as clients:
            async with asyncio.timeout(WAIT):
                while len(reached) < 2:
                    http = await clients.enter_async_context(one_connection())
                    reached.setdefault(await self.pid(http), http)
            yield reached

    @contextlib.asynccontextmanager
    async def reach(self, pid: int) -> AsyncIterator[httpx.AsyncClient]:
        """A client of one keep-alive connection to the process ``pid``."""
        async with contextlib.AsyncExitStack() as clients:
            async with asyncio.timeout(WAIT):
                while True:
                    http = await clients.enter_async_context(one_connection())
                    if await self.pid(http) == pid:
                        break
            yield http

    @contextlib.asynccontextmanager
    async def stream(
        self,
        http: httpx.AsyncClient,
        method: str,
        params: Any,
        *,
        last_event_id: int | None = None,
    ) -> AsyncIterator[AsyncIterator[Frame]]:
        """The SSE frames of a streaming call, as they come."""
        headers = dict(V1)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        async with http.stream(
            "POST", self.url, json=self.body(method, params), headers=headers
        ) as r:
            assert r.status_code == 200, await r.aread()
            yield frames(r)

    def printed(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """Wait for a line the server (any of its processes) prints."""
        return self.served.expect(pattern, timeout)

    def logs(self, message: str) -> list[dict[str, Any]]:
        """The structured log records so far whose message contains ``message``."""
        found = []
        for line in self.served.output.splitlines():
            if line.startswith("{") and message in line:
                record = json.loads(line)
                if message in record.get("msg", ""):
                    found.append(record)
        return found


def one_connection() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=WAIT, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
    )
