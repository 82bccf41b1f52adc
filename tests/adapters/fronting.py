"""What the tests of fronted agents share (adapters/remote.py): a front served
in-process to an httpx client, JSON-RPC calls and reads of its tasks, and the
official SDK's server on a real port as an upstream, with a card and an
executor of the test's choosing."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from a2ad import Agent, create_app

from ..conftest import wait_for
from ..jsonrpc import answer, rpc_body
from ..threaded_server import ThreadedServer, free_port

V1 = {"A2A-Version": "1.0"}


async def front(agent: Agent, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    """``agent`` served in-process (``create_app(agent, **options)``, started),
    and a client of it; the app is closed after."""
    app = create_app(agent, **options)
    await app.lifetime.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front.test") as http:
            yield http
    finally:
        await app.aclose()


async def call(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    """A JSON-RPC call's result (an error fails the test)."""
    got = answer(await http.post("/", json=rpc_body(method, params), headers=V1))
    assert "error" not in got, got
    return got["result"]


def send(text: str, **configuration: Any) -> dict[str, Any]:
    """SendMessage's params: a user message of ``text``, with ``configuration``."""
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message, **({"configuration": configuration} if configuration else {})}


async def until(
    http: httpx.AsyncClient, task_id: str, check: Callable[[Any], Any], timeout: float = 20
) -> Any:
    """The task, read until ``check(task)`` holds."""

    async def met() -> bool:
        return bool(check(await call(http, "GetTask", {"id": task_id})))

    await wait_for(met, timeout=timeout)
    return await call(http, "GetTask", {"id": task_id})


def ours(task: dict[str, Any]) -> dict[str, Any]:
    """What a2ad keeps in a task's metadata (``a2ad``: the upstream task, usage)."""
    return dict((task.get("metadata") or {}).get("a2ad", {}))


@contextmanager
def sdk_server(
    executor: Any,
    *,
    name: str,
    version: str = "1.0",
    skills: bool = False,
    wrap: Callable[[Any], Any] | None = None,
    port: int | None = None,
    streaming: bool = True,
) -> Iterator[str]:
    """The official SDK's JSON-RPC server on a real port running ``executor``,
    with a card offering A2A ``version`` (0.3: with the SDK's 0.3 compatibility
    on); ``wrap`` may wrap its ASGI app. Yields its base URL."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name=name,
        description=f"{name}, the official SDK's.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url + "/", protocol_binding="JSONRPC", protocol_version=version)
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes", tags=["echo"])]
        if skills
        else [],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, rpc_url="/", enable_v0_3_compat=version == "0.3"
    )
    app = Starlette(routes=routes)
    served = ThreadedServer(
        wrap(app) if wrap else app, what=f"the SDK's {name} server", interface="asgi3"
    )
    served.port = port
    served.server.config.port = port
    served.start()
    try:
        yield url
    finally:
        served.server.force_exit = True
        served.stop()


def card_of(url: str, name: str, *, streaming: bool = True) -> dict[str, Any]:
    """A minimal A2A 1.0 card of a JSON-RPC agent at ``url`` (for hand-made upstreams)."""
    return {
        "name": name,
        "description": f"{name}, made by hand for a test.",
        "supportedInterfaces": [
            {"url": url + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


async def read_body(receive: Any) -> bytes:
    """An ASGI request's whole body."""
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body
