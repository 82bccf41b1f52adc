"""Several real ``a2ad serve`` processes on one PostgreSQL schema, as a user runs
them behind a load balancer: each on its own port, all with the same store URL
and ``--secret-key-file``. ``cluster(n, *flags)`` starts them (in order, so the
first makes the key file) and kills them at the end; ``Instance`` speaks
JSON-RPC 1.0 to one of them, SSE included."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx

from ..jsonrpc import answer, rpc_body
from ..postgres import SERVER, fresh_schema_sync
from ..served import Served
from ..server.sse_client import Frame, frames
from .wire import result_of, send_params, state_of, status_text  # noqa: F401  (the tests take them from here)

V1 = {"A2A-Version": "1.0"}
AGENT = ("--agent", "tests.multi.agents:MultiAgent")
WAIT = 10.0  # seconds a test waits for what it expects


class Instance:
    """One ``a2ad serve`` process of a cluster."""

    def __init__(self, served: Served, name: str) -> None:
        self.served = served
        self.name = name
        self.url = served.url + "/"
        self.pid = served.proc.pid
        self._ids = 0

    def __repr__(self) -> str:
        return f"Instance({self.name}, pid {self.pid})"

    def body(self, method: str, params: Any) -> dict[str, Any]:
        self._ids += 1
        return rpc_body(method, params, self._ids)

    async def raw(self, http: httpx.AsyncClient, method: str, params: Any) -> dict[str, Any]:
        return answer(await http.post(self.url, json=self.body(method, params), headers=V1))

    async def call(self, http: httpx.AsyncClient, method: str, params: Any) -> Any:
        answer = await self.raw(http, method, params)
        assert "error" not in answer, f"{self}: {answer}"
        return answer["result"]

    async def send(
        self, http: httpx.AsyncClient, text: str, *, immediately: bool = True, **message: Any
    ) -> dict[str, Any]:
        """SendMessage (returnImmediately unless told); the task."""
        params = send_params(text, **message)
        if immediately:
            params["configuration"] = {"returnImmediately": True}
        return (await self.call(http, "SendMessage", params))["task"]  # type: ignore[no-any-return]

    async def get(self, http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
        return await self.call(http, "GetTask", {"id": task_id})  # type: ignore[no-any-return]

    async def wait_state(
        self, http: httpx.AsyncClient, task_id: str, state: str, timeout: float = WAIT
    ) -> dict[str, Any]:
        """GetTask until the task is ``state`` (polling: only tests do that)."""
        async with asyncio.timeout(timeout):
            while (task := await self.get(http, task_id))["status"]["state"] != state:
                await asyncio.sleep(0.02)
        return task

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
            assert r.headers["content-type"].startswith("text/event-stream")
            yield frames(r)

    def printed(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """Wait for a line the instance (or its agent) prints."""
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

    def kill(self) -> None:
        self.served.proc.kill()
        self.served.proc.wait(10)


@contextlib.contextmanager
def cluster(count: int, *flags: str) -> Iterator[tuple[str, list[Instance]]]:
    """``count`` instances on a fresh schema with one key file; (store URL, them)."""
    with fresh_schema_sync() as url, tempfile.TemporaryDirectory(prefix="a2ad-multi-") as folder:
        key = Path(folder) / "a2ad.key"
        started: list[Served] = []
        try:
            instances = []
            for i in range(count):
                served = Served(
                    "--store",
                    url,
                    *AGENT,
                    "--secret-key-file",
                    str(key),
                    "--shutdown-grace",
                    "0",
                    *flags,
                    env={"PYTHONUNBUFFERED": "1"},
                )
                started.append(served)
                instances.append(Instance(served, "ABCDEFGH"[i]))
            yield url, instances
        finally:
            for served in started:
                served.__exit__(None, None, None)


async def terminate_listener(instance: Instance) -> int:
    """pg_terminate_backend of the instance's LISTEN connection (found by its
    application_name); how many backends that ended (1)."""
    import asyncpg  # type: ignore[import-untyped]

    admin = await asyncpg.connect(SERVER)
    try:
        return int(
            await admin.fetchval(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = $1""",
                f"a2ad signals {instance.pid}",
            )
        )
    finally:
        await admin.close()
