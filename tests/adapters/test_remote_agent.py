"""An A2A agent that runs elsewhere, fronted by a2ad (adapters/remote.py): a
real upstream server on a real port (another a2ad, and the official SDK's),
a2ad in front of it. Its card learned, each turn a call upstream with its
events stored in a2ad's task, a follow-up to the same upstream task, a cancel
reaching upstream, an upstream that can't be reached failing the turn naming
it, and ``a2ad serve --agent NAME=a2a+http://...``."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import (
    A2AApp,
    Agent,
    ApiKeys,
    CredentialAuthenticator,
    DataPart,
    Message,
    TaskContext,
    TextPart,
    create_app,
)
from a2ad.adapters import remote_turn
from a2ad.adapters.remote import RemoteAgent
from a2ad.engine.config import EngineConfig
from a2ad.protocol.model import Role
from a2ad.server import auth

from ..conftest import LiveServer, wait_for
from ..jsonrpc import answer, rpc_body
from ..scripted import ScriptedAgent
from ..served import Served
from ..tcp_proxy import TcpProxy
from ..threaded_server import free_port

V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def upstream_agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def upstream(upstream_agent: ScriptedAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(upstream_agent)) as live:
        yield live


async def _front(
    url: str, config: EngineConfig | None = None
) -> AsyncIterator[tuple[A2AApp, httpx.AsyncClient]]:
    app = create_app(RemoteAgent(url), **({"engine": config} if config else {}))
    app.engine.shutdown_grace = 0
    await app.lifetime.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front.test") as http:
            yield app, http
    finally:
        await app.aclose()


@pytest.fixture
async def front(upstream: LiveServer) -> AsyncIterator[tuple[A2AApp, httpx.AsyncClient]]:
    async for pair in _front(f"a2a+{upstream.url}/"):
        yield pair


async def _call(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    got = answer(await http.post("/", json=rpc_body(method, params), headers=V1))
    assert "error" not in got, got
    return got["result"]


def _send(text: str, **message: Any) -> dict[str, Any]:
    sent = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": {**sent, **message}}


async def _upstream_call(upstream: LiveServer, method: str, params: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(base_url=upstream.url) as http:
        return await _call(http, method, params)


async def test_the_front_serves_the_upstream_card_and_its_answer_as_its_own_task(
    front: tuple[A2AApp, httpx.AsyncClient], upstream: LiveServer
) -> None:
    _, http = front
    card = (await http.get("/.well-known/agent-card.json")).json()
    assert card["name"] == "scripted"
    assert card["supportedInterfaces"][0]["url"] == "http://front.test/"  # a2ad's own
    task = (await _call(http, "SendMessage", _send("echo hello")))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["hello"]
    # The upstream task it made, named in a2ad's task's metadata.
    upstream_id = task["metadata"]["a2ad"]["upstream"]["taskId"]
    theirs = await _upstream_call(upstream, "GetTask", {"id": upstream_id})
    assert theirs["status"]["state"] == "TASK_STATE_COMPLETED"
    assert theirs["id"] != task["id"]
    assert upstream.url not in str(task)  # the upstream's address is not shown to callers


async def test_a_stream_through_the_front_carries_the_upstreams_chunks(
    front: tuple[A2AApp, httpx.AsyncClient],
) -> None:
    _, http = front
    body = rpc_body("SendStreamingMessage", _send("chunks 3"))
    results = []
    async with http.stream("POST", "/", json=body, headers=V1) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                import json

                results.append(json.loads(line[5:])["result"])
    chunks = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
    assert len(chunks) == 3
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_follow_up_goes_to_the_same_upstream_task(
    front: tuple[A2AApp, httpx.AsyncClient], upstream: LiveServer
) -> None:
    _, http = front
    task = (await _call(http, "SendMessage", _send("input which one?")))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"][0]["text"] == "which one?"
    follow = _send("the blue one", taskId=task["id"], contextId=task["contextId"])
    done = (await _call(http, "SendMessage", follow))["task"]
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][-1]["parts"][0]["text"] == "got: the blue one"
    # Upstream: one task in that context, which took both messages.
    listed = await _upstream_call(upstream, "ListTasks", {"contextId": task["contextId"]})
    assert len(listed["tasks"]) == 1
    assert listed["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_cancel_on_the_front_cancels_the_upstream_task(
    front: tuple[A2AApp, httpx.AsyncClient], upstream: LiveServer, upstream_agent: ScriptedAgent
) -> None:
    _, http = front
    params = {**_send("hang"), "configuration": {"returnImmediately": True}}
    task = (await _call(http, "SendMessage", params))["task"]

    async def upstream_started() -> bool:
        listed = await _upstream_call(upstream, "ListTasks", {"contextId": task["contextId"]})
        return bool(listed["tasks"]) and listed["tasks"][0]["id"] in upstream_agent.started

    await wait_for(upstream_started, timeout=10)
    canceled = await _call(http, "CancelTask", {"id": task["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    listed = await _upstream_call(upstream, "ListTasks", {"contextId": task["contextId"]})
    theirs = listed["tasks"][0]
    await wait_for(lambda: theirs["id"] in upstream_agent.cancelled, timeout=10)
    read = await _upstream_call(upstream, "GetTask", {"id": theirs["id"]})
    assert read["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_task_timeout_on_the_front_cancels_the_upstream_task(
    upstream: LiveServer, upstream_agent: ScriptedAgent
) -> None:
    async for _, http in _front(f"a2a+{upstream.url}/", EngineConfig(task_timeout=1.0)):
        task = (await _call(http, "SendMessage", _send("hang")))["task"]  # waits for its end
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert "deadline" in task["status"]["message"]["parts"][0]["text"]
        theirs = str(task["metadata"]["a2ad"]["upstream"]["taskId"])
        await wait_for(lambda: theirs in upstream_agent.cancelled, timeout=10)  # noqa: B023
        read = await _upstream_call(upstream, "GetTask", {"id": theirs})
        assert read["status"]["state"] == "TASK_STATE_CANCELED"


async def test_an_upstream_that_cannot_be_reached_fails_the_turn_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async for _, http in _front(f"a2a+{url}/"):
        card = (await http.get("/.well-known/agent-card.json")).text
        assert url.removeprefix("http://") not in card  # its address stays private
        task = (await _call(http, "SendMessage", _send("echo hi")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        said = task["status"]["message"]["parts"][0]["text"]
        assert f"the upstream agent at {url}/" in said and "connection refused" in said


async def test_the_official_sdks_server_as_the_upstream(sdk_url: str) -> None:
    async for _, http in _front(f"a2a+{sdk_url}"):
        task = (await _call(http, "SendMessage", _send("hello sdk")))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert "hello sdk" in str(task["artifacts"])


def test_a2ad_serve_fronts_an_agent_given_its_url(upstream: LiveServer) -> None:
    spec = f"up=a2a+{upstream.url}/"
    with Served("--agent", spec, "--store", "memory") as served:
        with httpx.Client(base_url=served.url) as http:
            card = http.get("/agents/up/.well-known/agent-card.json").json()
            assert card["name"] == "scripted"
            body = rpc_body("SendMessage", _send("echo through"))
            task = answer(http.post("/agents/up/", json=body, headers=V1))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "through"


class AdkLike(Agent):
    """Answers as ADK's A2A server does: a tool call marked ``adk_type`` in its
    status message, and each model event's usage in ``adk_usage_metadata`` with
    its ``adk_event_id`` (ADK repeats one event's metadata on each A2A event)."""

    name = "adk-like"

    async def run(self, ctx: TaskContext) -> None:
        def said(parts: list[Any], event: str, prompt: int, completion: int) -> Message:
            usage = {
                "promptTokenCount": prompt,
                "candidatesTokenCount": completion,
                "totalTokenCount": prompt + completion,
            }
            return Message(
                message_id=os.urandom(8).hex(),
                role=Role.AGENT,
                parts=parts,
                metadata={"adk_usage_metadata": usage, "adk_event_id": event},
            )

        call = DataPart(
            {"name": "lookup", "args": {"q": "SECRET"}}, metadata={"adk_type": "function_call"}
        )
        await ctx.working(said([call], "e1", 100, 20))
        await ctx.working(said([TextPart("looking")], "e1", 100, 20))  # the same event again
        await ctx.working(said([TextPart("found it")], "e2", 50, 5))
        await ctx.complete("12 in stock")


async def test_what_an_adk_upstream_leaks_is_hidden_and_what_it_reports_is_counted() -> None:
    # ADK's server sends its tool calls to every caller: an a2ad exposing them is one.
    leaking = create_app(AdkLike(), engine=EngineConfig(expose_internal_parts=True))
    with LiveServer(leaking) as upstream:
        async for app, http in _front(f"a2a+{upstream.url}/"):
            task = (await _call(http, "SendMessage", _send("how many?")))["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert "SECRET" not in str(task)  # the tool call: an internal part
            assert task["metadata"]["a2ad"]["usage"]["promptTokens"] == 150
            assert task["metadata"]["a2ad"]["usage"]["completionTokens"] == 25
            assert task["metadata"]["a2ad"]["usage"]["totalTokens"] == 175
            stored = await app.engine.store.get(task["id"])
            assert stored is not None and "SECRET" in str(stored.task.history)
            report = answer(await http.post("/", json=rpc_body("a2ad/GetUsage", {}), headers=V1))[
                "result"
            ]
            assert report["total"]["totalTokens"] == 175


class Paced(Agent):
    """A first chunk, then waits (in its thread-safe ``go``) for the test to let
    it send the second and complete."""

    name = "paced"

    def __init__(self) -> None:
        self.go = threading.Event()

    async def run(self, ctx: TaskContext) -> None:
        artifact = await ctx.artifact("first", name="answer")
        assert artifact
        while not self.go.is_set():
            await asyncio.sleep(0.02)
        await ctx.artifact("second", artifact_id=artifact, append=True, last_chunk=True)
        await ctx.complete()


async def _until(http: httpx.AsyncClient, task_id: str, check: Any) -> Any:
    """The task, read until ``check(task)`` holds."""

    async def met() -> bool:
        return bool(check(await _call(http, "GetTask", {"id": task_id})))

    await wait_for(met, timeout=20)
    return await _call(http, "GetTask", {"id": task_id})


def _in_state(state: str) -> Any:
    return lambda task: task["status"]["state"] == state


async def test_an_upstream_stream_that_drops_is_followed_again_and_nothing_is_lost() -> None:
    paced = Paced()
    with LiveServer(create_app(paced)) as upstream:
        proxy = TcpProxy(("127.0.0.1", upstream.port))
        try:
            async for _app, http in _front(f"a2a+http://127.0.0.1:{proxy.port}/"):
                params = {**_send("go"), "configuration": {"returnImmediately": True}}
                task = (await _call(http, "SendMessage", params))["task"]
                await _until(http, task["id"], lambda t: t.get("artifacts"))
                proxy.cut()  # the stream from the upstream breaks; reconnecting is refused
                await asyncio.sleep(0.3)
                proxy.restore()
                paced.go.set()
                read = await _until(http, task["id"], _in_state("TASK_STATE_COMPLETED"))
                (artifact,) = read["artifacts"]
                assert [p["text"] for p in artifact["parts"]] == ["first", "second"]
        finally:
            proxy.close()


async def test_an_upstream_that_stays_away_fails_the_turn_saying_what_was_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(remote_turn, "FOLLOW_BACKOFF", 0.05)
    paced = Paced()
    with LiveServer(create_app(paced)) as upstream:
        proxy = TcpProxy(("127.0.0.1", upstream.port))
        try:
            async for _app, http in _front(f"a2a+http://127.0.0.1:{proxy.port}/"):
                params = {**_send("go"), "configuration": {"returnImmediately": True}}
                task = (await _call(http, "SendMessage", params))["task"]
                await _until(http, task["id"], lambda t: t.get("artifacts"))
                proxy.cut()
                read = await _until(http, task["id"], _in_state("TASK_STATE_FAILED"))
                said = read["status"]["message"]["parts"][0]["text"]
                assert f"127.0.0.1:{proxy.port}" in said
                assert "broke" in said and "failed 5 times" in said
                paced.go.set()
        finally:
            proxy.close()


def test_the_upstreams_credential_comes_from_the_environment_and_is_never_shown(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "keys.toml"
    key = auth.add_key(str(keys), "front")
    guarded = create_app(
        ScriptedAgent(), authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
    )
    with LiveServer(guarded) as upstream:
        spec = f"up=a2a+{upstream.url}/"
        for env, state in (({"A2AD_AGENT_UP_TOKEN": key}, "COMPLETED"), ({}, "FAILED")):
            with Served("--agent", spec, "--store", "memory", env=env) as served:
                with httpx.Client(base_url=served.url) as http:
                    body = rpc_body("SendMessage", _send("echo guarded"))
                    got = answer(http.post("/agents/up/", json=body, headers=V1))
                task = got["result"]["task"]
                assert task["status"]["state"] == f"TASK_STATE_{state}", task
                if state == "FAILED":
                    said = task["status"]["message"]["parts"][0]["text"]
                    assert upstream.url in said and "credential" in said
                served.stop()
                assert key not in "\n".join(served.seen)
                assert key not in str(task)


async def test_the_upstream_may_be_named_by_its_cards_url(upstream: LiveServer) -> None:
    async for _, http in _front(f"a2a+{upstream.url}/.well-known/agent-card.json"):
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "scripted"  # the upstream's, read at that URL
        task = (await _call(http, "SendMessage", _send("echo by card")))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["by card"]


async def test_a_card_url_that_is_not_one_is_named_when_the_turn_fails(
    upstream: LiveServer,
) -> None:
    wrong = f"{upstream.url}/cards/nothing.json"
    async for _, http in _front(f"a2a+{wrong}"):
        task = (await _call(http, "SendMessage", _send("echo hi")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        said = task["status"]["message"]["parts"][0]["text"]
        assert f"no agent card at {wrong} (HTTP 404)" in said, said


async def test_an_upstream_that_does_not_stream_is_sent_to_and_polled_to_its_end() -> None:
    paced = Paced()
    with LiveServer(create_app(paced)) as upstream:
        agent = RemoteAgent(f"a2a+{upstream.url}/", timeout=1.0)
        app = create_app(agent)
        await app.lifetime.start()
        agent.streams = False  # as for an upstream whose card says it does not stream
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://f.test") as http:
                params = {**_send("go"), "configuration": {"returnImmediately": True}}
                task = (await _call(http, "SendMessage", params))["task"]
                await _until(
                    http, task["id"], lambda t: "upstream" in t.get("metadata", {}).get("a2ad", {})
                )
                # Longer than the client's timeout: a blocking send upstream would have failed.
                await asyncio.sleep(1.5)
                read = await _call(http, "GetTask", {"id": task["id"]})
                assert read["status"]["state"] == "TASK_STATE_WORKING", read
                paced.go.set()
                done = await _until(http, task["id"], _in_state("TASK_STATE_COMPLETED"))
                assert [p["text"] for p in done["artifacts"][0]["parts"]] == ["first", "second"]
        finally:
            paced.go.set()
            await app.aclose()


async def test_a_cancel_of_a_task_waiting_for_input_cancels_the_upstream_task(
    front: tuple[A2AApp, httpx.AsyncClient], upstream: LiveServer
) -> None:
    _, http = front
    task = (await _call(http, "SendMessage", _send("input which one?")))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    theirs = task["metadata"]["a2ad"]["upstream"]["taskId"]
    read = await _upstream_call(upstream, "GetTask", {"id": theirs})
    assert read["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    canceled = await _call(http, "CancelTask", {"id": task["id"]})  # no turn runs now
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    read = await _upstream_call(upstream, "GetTask", {"id": theirs})
    assert read["status"]["state"] == "TASK_STATE_CANCELED"


async def test_an_upstreams_password_is_in_no_message(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    async for _, http in _front(f"a2a+http://front:s3cret-pw@127.0.0.1:{port}/?api_key=k3y"):
        task = (await _call(http, "SendMessage", _send("echo hi")))["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        said = task["status"]["message"]["parts"][0]["text"]
        assert f"http://front:***@127.0.0.1:{port}/?api_key=***" in said, said
    for secret in ("s3cret-pw", "k3y"):
        assert secret not in str(task) and secret not in caplog.text
