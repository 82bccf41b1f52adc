from __future__ import annotations

import asyncio
import importlib.util
import inspect
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, settings

from a2ad import A2AApp, create_app
from a2ad.cli import logs

from .jsonrpc import answer, rpc_body
from .scripted import ScriptedAgent
from .threaded_server import ThreadedServer, free_port

V1 = {"A2A-Version": "1.0"}

# Hypothesis profiles; HYPOTHESIS_PROFILE picks one, "ci" by default (docs/testing.md).
# "ci" runs the same examples on every run and every machine (derandomized, no example
# database), so a red run can be rerun as it was. "deep" (scripts/hypothesis-deep) runs
# many more, freshly random each time, and keeps what fails in .hypothesis/ to replay it
# first on the next run.
_PROFILE_BASE = settings(
    deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", _PROFILE_BASE, max_examples=100, derandomize=True, database=None)
settings.register_profile("deep", _PROFILE_BASE, max_examples=3000, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture
def app(agent: ScriptedAgent) -> A2AApp:
    return create_app(agent)


@pytest.fixture
async def client(app: A2AApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


class Rpc:
    """Posts JSON-RPC requests and returns the decoded response body."""

    def __init__(self, client: httpx.AsyncClient | httpx.Client, path: str = "/") -> None:
        self.client = client
        self.path = path
        self.ids = 0

    def body(self, method: str, params: Any) -> dict[str, Any]:
        self.ids += 1
        return rpc_body(method, params, self.ids)

    async def __call__(
        self,
        method: str,
        params: Any = None,
        *,
        v1: bool = False,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        r = await self.client.post(
            self.path,
            json=self.body(method, params),
            headers={**(V1 if v1 else {}), **(headers or {})},
        )  # type: ignore[misc]
        return answer(r)


@pytest.fixture
def rpc(client: httpx.AsyncClient) -> Rpc:
    return Rpc(client)


def msg03(text: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "user", "parts": [{"text": text}], **extra}}


def msg10(text: str, **extra: Any) -> dict[str, Any]:
    import uuid

    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    }


class LiveServer:
    """a2ad under a real uvicorn on a free port, in a thread with its own loop."""

    def __init__(self, app: A2AApp) -> None:
        self.app = app
        # Tests leave "hang" tasks running; don't wait the default grace for them.
        app.engine.shutdown_grace = 0
        self._served = ThreadedServer(
            app, what="uvicorn", lifespan="on", timeout_graceful_shutdown=1
        )
        self.server = self._served.server
        self.port = self._served.port
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()


@pytest.fixture
def live(app: A2AApp) -> Iterator[LiveServer]:
    with LiveServer(app) as server:
        yield server


async def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    """Poll ``predicate`` (a plain or an async function, such as one that reads a
    task back) until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        met = predicate()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


SDK_PEER = Path(__file__).parents[1] / "bench" / "peers" / "sdk_echo.py"


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    """A server that is not a2ad: the official a2a-sdk's echo peer from the benchmark
    (bench/peers/sdk_echo.py; DefaultRequestHandler, InMemoryTaskStore, JSON-RPC)."""
    spec = importlib.util.spec_from_file_location("sdk_echo_peer", SDK_PEER)
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    port = free_port()
    config = uvicorn.Config(
        peer.build_app(port),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


LOGGERS = ("a2ad", "a2ad.access", "uvicorn", "httpx", "httpcore")


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """configure_logging changes every logger of the process (keep_logging), and a
    command run in this process (CliRunner: ``a2ad serve`` configures logging first)
    calls it: put them back, and forget its handler. Left as the command set them,
    a2ad's loggers stop propagating, and a later test's caplog sees none of their
    lines."""
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in LOGGERS)]
    loggers += [
        x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger)
    ]
    saved = [
        (log, log.handlers[:], log.filters[:], log.level, log.propagate, log.disabled)
        for log in loggers
    ]
    installed = logs._installed[:]
    yield
    for log, handlers, filters, level, propagate, disabled in saved:
        log.handlers[:], log.filters[:], log.propagate = handlers, filters, propagate
        log.setLevel(level)
        log.disabled = disabled
    logs._installed[:] = installed
