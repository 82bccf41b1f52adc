"""Extensions over JSON-RPC, 1.0 and 0.3: the ``A2A-Extensions`` header (and the
0.3 ``X-A2A-Extensions``) activates the extensions the agent declares, the agent
sees them (with the request's version and binding) in ``ctx.request``, the
answer echoes them, and a required one left out is refused with -32008."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, AgentExtension, DataPart, TaskContext, create_app

from ..conformance.oracles import assert_error, assert_status
from ..conftest import V1, msg03, msg10
from ..jsonrpc import rpc_body

GEO = "https://example.com/ext/geo/v1"
TRACE = "https://example.com/ext/trace/v1"
SIGNED = "https://example.com/ext/signed/v1"


class Reporter(Agent):
    """Answers with what it was told about the request."""

    name = "reporter"
    extensions = (
        AgentExtension(uri=GEO, description="Places in answers", params={"units": "km"}),
        AgentExtension(uri=TRACE, description="Trace ids in metadata"),
    )

    async def run(self, ctx: TaskContext) -> None:
        seen = {
            "version": ctx.request.version,
            "binding": ctx.request.binding,
            "extensions": sorted(ctx.extensions),
        }
        await ctx.artifact(DataPart(seen), name="request")


class Strict(Reporter):
    extensions = (*Reporter.extensions, AgentExtension(uri=SIGNED, required=True))


@pytest.fixture
async def reporter() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(create_app(Reporter())) as client:
        yield client


@pytest.fixture
async def strict() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(create_app(Strict())) as client:
        yield client


class serve:
    def __init__(self, app: A2AApp) -> None:
        self.app = app
        transport = httpx.ASGITransport(app=app)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://a2ad.test")

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()
        await self.app.aclose()


async def call(
    client: httpx.AsyncClient,
    method: str,
    params: Any,
    *,
    v1: bool = True,
    headers: list[tuple[str, str]] | None = None,
) -> httpx.Response:
    body = rpc_body(method, params)
    all_headers = [*(V1.items() if v1 else []), *(headers or [])]
    return await client.post("/", json=body, headers=all_headers)


def seen(response: httpx.Response) -> dict[str, Any]:
    result = response.json()["result"]
    task = result.get("task", result)
    return task["artifacts"][0]["parts"][0]["data"]  # type: ignore[no-any-return]


# --- what the agent sees ----------------------------------------------------


async def test_the_agent_sees_the_version_binding_and_activated_extensions_1_0(
    reporter: httpx.AsyncClient,
) -> None:
    r = await call(reporter, "SendMessage", msg10("hi"), headers=[("A2A-Extensions", GEO)])
    assert seen(r) == {
        "version": "1.0",
        "binding": "JSONRPC",
        "extensions": [GEO],
    }


async def test_the_agent_sees_the_version_and_the_0_3_header(reporter: httpx.AsyncClient) -> None:
    r = await call(
        reporter, "message/send", msg03("hi"), v1=False, headers=[("X-A2A-Extensions", TRACE)]
    )
    data = r.json()["result"]["artifacts"][0]["parts"][0]["data"]
    assert data["version"] == "0.3"
    assert data["extensions"] == [TRACE]


async def test_comma_separated_and_repeated_headers_are_all_read(
    reporter: httpx.AsyncClient,
) -> None:
    headers = [("A2A-Extensions", f" {GEO} ,, "), ("X-A2A-Extensions", f"{TRACE}")]
    r = await call(reporter, "SendMessage", msg10("hi"), headers=headers)
    assert seen(r)["extensions"] == sorted([GEO, TRACE])


async def test_an_extension_the_agent_does_not_declare_is_not_activated(
    reporter: httpx.AsyncClient,
) -> None:
    r = await call(
        reporter,
        "SendMessage",
        msg10("hi"),
        headers=[("A2A-Extensions", f"https://other.example/ext, {GEO}")],
    )
    assert seen(r)["extensions"] == [GEO]
    assert r.headers["a2a-extensions"] == GEO


async def test_without_the_header_nothing_is_activated_nor_echoed(
    reporter: httpx.AsyncClient,
) -> None:
    r = await call(reporter, "SendMessage", msg10("hi"))
    assert seen(r)["extensions"] == []
    assert "a2a-extensions" not in r.headers
    assert "x-a2a-extensions" not in r.headers


# --- the echo -----------------------------------------------------------------


async def test_the_answer_echoes_the_activated_extensions_in_the_versions_header(
    reporter: httpx.AsyncClient,
) -> None:
    both = ", ".join([GEO, TRACE])
    r10 = await call(reporter, "SendMessage", msg10("hi"), headers=[("A2A-Extensions", both)])
    assert r10.headers["a2a-extensions"] == both
    assert "x-a2a-extensions" not in r10.headers
    r03 = await call(
        reporter, "message/send", msg03("hi"), v1=False, headers=[("X-A2A-Extensions", both)]
    )
    assert r03.headers["x-a2a-extensions"] == both
    assert "a2a-extensions" not in r03.headers


async def test_a_stream_echoes_the_activated_extensions(reporter: httpx.AsyncClient) -> None:
    r = await call(
        reporter, "SendStreamingMessage", msg10("hi"), headers=[("A2A-Extensions", TRACE)]
    )
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["a2a-extensions"] == TRACE
    frames = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
    assert frames[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_other_operations_echo_too(reporter: httpx.AsyncClient) -> None:
    r = await call(reporter, "ListTasks", {}, headers=[("A2A-Extensions", GEO)])
    assert "result" in r.json()
    assert r.headers["a2a-extensions"] == GEO


# --- a required extension -----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [("SendMessage", msg10("hi")), ("GetTask", {"id": "t-1"}), ("ListTasks", {})],
)
async def test_a_required_extension_left_out_is_refused_in_1_0(
    strict: httpx.AsyncClient, method: str, params: dict[str, Any]
) -> None:
    r = await call(strict, method, params, headers=[("A2A-Extensions", GEO)])
    error = assert_error(r.json(), -32008, reason="EXTENSION_SUPPORT_REQUIRED")
    assert SIGNED in error["message"] and "A2A-Extensions" in error["message"]
    assert error["data"][0]["metadata"] == {"extensions": SIGNED}
    assert "a2a-extensions" not in r.headers


async def test_a_required_extension_left_out_is_refused_in_0_3(strict: httpx.AsyncClient) -> None:
    r = await call(strict, "message/send", msg03("hi"), v1=False)
    error = assert_error(r.json(), -32008, reason="EXTENSION_SUPPORT_REQUIRED", dialect="0.3")
    assert "X-A2A-Extensions" in error["message"]


async def test_a_refused_send_stores_no_task(strict: httpx.AsyncClient) -> None:
    await call(strict, "SendMessage", msg10("hi"))
    r = await call(strict, "ListTasks", {}, headers=[("A2A-Extensions", SIGNED)])
    assert r.json()["result"]["totalSize"] == 0


async def test_activating_the_required_extension_is_served(strict: httpx.AsyncClient) -> None:
    r = await call(strict, "SendMessage", msg10("hi"), headers=[("A2A-Extensions", SIGNED)])
    assert seen(r)["extensions"] == [SIGNED]
    assert r.headers["a2a-extensions"] == SIGNED


# --- the same over HTTP+JSON --------------------------------------------------


async def test_over_rest_the_agent_sees_the_binding_and_the_answer_echoes(
    reporter: httpx.AsyncClient,
) -> None:
    r = await reporter.post(
        "/message:send", json=msg10("hi"), headers={"A2A-Extensions": f"{GEO}, {TRACE}"}
    )
    assert r.status_code == 200, r.text
    data = r.json()["task"]["artifacts"][0]["parts"][0]["data"]
    assert data == {"version": "1.0", "binding": "HTTP+JSON", "extensions": sorted([GEO, TRACE])}
    assert r.headers["a2a-extensions"] == ", ".join(sorted([GEO, TRACE]))


async def test_over_rest_0_3_echoes_in_the_0_3_header(reporter: httpx.AsyncClient) -> None:
    r = await reporter.get("/v1/tasks", headers={"X-A2A-Extensions": GEO})
    assert r.status_code == 200, r.text
    assert r.headers["x-a2a-extensions"] == GEO


async def test_over_rest_a_required_extension_left_out_is_400(strict: httpx.AsyncClient) -> None:
    r = await strict.get("/tasks")
    info = assert_status(400, r.json(), reason="EXTENSION_SUPPORT_REQUIRED")
    assert info["metadata"] == {"extensions": SIGNED}
    ok = await strict.get("/tasks", headers={"A2A-Extensions": SIGNED})
    assert ok.status_code == 200 and ok.headers["a2a-extensions"] == SIGNED
