"""Internal parts at the wire, over a real uvicorn with real API keys: a plain
caller gets none of the agent's internal parts from any operation (JSON-RPC and
HTTP+JSON, 1.0 and 0.3, send, get, list, cancel, stream, subscribe), nor does
a webhook; an operator gets them all, and so does everyone on a server that
exposes them. The agent itself keeps them in its history."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import Agent, DataPart, Message, PushPolicy, TaskContext, TextPart, create_app
from a2ad.engine.config import EngineConfig
from a2ad.server import auth
from a2ad.server.auth import ApiKeys, CredentialAuthenticator

from ..conftest import LiveServer, wait_for
from ..jsonrpc import rpc_body
from ..webhook_receiver import Receiver
from .sse_client import Frame, frames

SECRET = "SECRET"  # in every internal part's content, and in no public one
TIMEOUT = 10


class ToolAgent(Agent):
    """Calls a tool, thinks, and answers: its tool call, the result, its thought
    and its scratch artifact are internal; its progress text and answer are not.
    ``ask`` pauses for input instead of completing; ``reply`` answers with a
    single Message of internal parts only."""

    name = "tools"

    def __init__(self) -> None:
        self.histories: list[list[Message]] = []

    async def run(self, ctx: TaskContext) -> None:
        self.histories.append(list(ctx.history))
        if ctx.text == "reply":
            await ctx.reply(ctx.internal(f"{SECRET} reply"))
            return
        if len(ctx.history) > 1:  # a follow-up
            await ctx.complete("thanks")
            return
        call = {"name": "search", "args": {"q": f"{SECRET} query"}}
        await ctx.working([TextPart("Looking it up"), *ctx.internal(DataPart(call))])
        result = {"name": "search", "response": {"hits": f"{SECRET} hits"}}
        await ctx.working(DataPart(result, metadata={"adk_type": "function_response"}))
        await ctx.working(TextPart(f"{SECRET} thought", metadata={"adk_thought": True}))
        await ctx.artifact(ctx.internal(f"{SECRET} scratch"), name="scratch")
        await ctx.artifact([TextPart("the answer"), *ctx.internal(f"{SECRET} why")], name="answer")
        if ctx.text == "ask":
            await ctx.require_input([TextPart("Which city?"), *ctx.internal(f"{SECRET} plan")])
            return
        await ctx.complete("done")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    made = {
        "ann": auth.add_key(str(path), "ann", tenants=["acme"]),
        "olga": auth.add_key(str(path), "olga", tenants=["acme"], roles=["operator"]),
    }
    return path, made


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


class Server:
    def __init__(self, live: LiveServer, agent: ToolAgent, made: dict[str, str]) -> None:
        self.live = live
        self.agent = agent
        self.keys = made

    def client(self, who: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.live.url,
            timeout=TIMEOUT,
            headers={"Authorization": f"Bearer {self.keys[who]}"},
        )


def serve(keys: tuple[Path, dict[str, str]], *, exposed: bool) -> Iterator[Server]:
    path, made = keys
    agent = ToolAgent()
    app = create_app(
        agent,
        authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(path))),
        engine=EngineConfig(
            allow_private_webhooks=True,
            push_policy=PushPolicy(first_retry=0.01, max_retry=0.05, timeout=5),
            expose_internal_parts=exposed,
        ),
    )
    with LiveServer(app) as live:
        yield Server(live, agent, made)


@pytest.fixture(scope="module")
def server(keys: tuple[Path, dict[str, str]]) -> Iterator[Server]:
    yield from serve(keys, exposed=False)


@pytest.fixture(scope="module")
def exposing(keys: tuple[Path, dict[str, str]]) -> Iterator[Server]:
    yield from serve(keys, exposed=True)


@pytest.fixture
async def ann(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with server.client("ann") as client:
        yield client


@pytest.fixture
async def olga(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with server.client("olga") as client:
        yield client


# --- the four bindings, as far as these tests need them ---


class Binding:
    """JSON-RPC or HTTP+JSON, in 1.0 or 0.3: each operation's answer as JSON."""

    def __init__(self, rest: bool, v1: bool) -> None:
        self.rest, self.v1 = rest, v1

    def __repr__(self) -> str:
        return f"{'rest' if self.rest else 'jsonrpc'}-{'1.0' if self.v1 else '0.3'}"

    @property
    def headers(self) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if self.v1 else {}

    def message(self, text: str) -> dict[str, Any]:
        if self.rest and not self.v1:  # 0.3 HTTP+JSON: proto field names
            return {
                "request": {
                    "message_id": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "content": [{"text": text}],
                }
            }
        role = "ROLE_USER" if self.v1 else "user"
        part = {"text": text} if self.v1 else {"kind": "text", "text": text}
        return {"message": {"messageId": str(uuid.uuid4()), "role": role, "parts": [part]}}

    def path(self, tail: str) -> str:
        return tail if self.v1 else f"/v1{tail}"

    async def rpc(self, http: httpx.AsyncClient, method: str, params: Any) -> Any:
        r = await http.post("/", json=rpc_body(method, params), headers=self.headers)
        assert r.status_code == 200 and "result" in r.json(), r.text
        return r.json()["result"]

    async def rest_call(self, http: httpx.AsyncClient, method: str, path: str, **kw: Any) -> Any:
        r = await http.request(method, self.path(path), headers=self.headers, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    async def send(self, http: httpx.AsyncClient, text: str) -> Any:
        if self.rest:
            return await self.rest_call(http, "POST", "/message:send", json=self.message(text))
        return await self.rpc(
            http, "SendMessage" if self.v1 else "message/send", self.message(text)
        )

    async def get(self, http: httpx.AsyncClient, task_id: str) -> Any:
        if self.rest:
            return await self.rest_call(http, "GET", f"/tasks/{task_id}")
        return await self.rpc(http, "GetTask" if self.v1 else "tasks/get", {"id": task_id})

    async def list(self, http: httpx.AsyncClient) -> Any:
        if self.rest:
            return await self.rest_call(http, "GET", "/tasks?includeArtifacts=true")
        method = "ListTasks" if self.v1 else "tasks/list"
        return await self.rpc(http, method, {"includeArtifacts": True})

    async def cancel(self, http: httpx.AsyncClient, task_id: str) -> Any:
        if self.rest:
            return await self.rest_call(http, "POST", f"/tasks/{task_id}:cancel")
        return await self.rpc(http, "CancelTask" if self.v1 else "tasks/cancel", {"id": task_id})

    def open(self, http: httpx.AsyncClient, op: str, params: Any, headers: dict[str, str]) -> Any:
        headers = {**self.headers, **headers}
        if self.rest:
            if op == "stream":
                return http.stream(
                    "POST", self.path("/message:stream"), json=params, headers=headers
                )
            return http.stream(
                "POST", self.path(f"/tasks/{params['id']}:subscribe"), headers=headers
            )
        names = {
            "stream": ("SendStreamingMessage", "message/stream"),
            "subscribe": ("SubscribeToTask", "tasks/resubscribe"),
        }[op]
        body = rpc_body(names[0] if self.v1 else names[1], params)
        return http.stream("POST", "/", json=body, headers=headers)

    async def events(
        self, http: httpx.AsyncClient, op: str, params: Any, **headers: str
    ) -> list[Any]:
        """Every event of a stream (``stream``, or ``subscribe`` replaying a finished
        task's log from ``Last-Event-ID``), read to its end."""
        async with self.open(http, op, params, headers) as r:
            assert r.status_code == 200, (await r.aread()).decode()
            got: list[Frame] = [f async for f in frames(r)]
        return [f.data if self.rest else f.result for f in got]


BINDINGS = [Binding(rest, v1) for rest in (False, True) for v1 in (True, False)]


def task_id_of(result: dict[str, Any]) -> str:
    return result["task"]["id"] if "task" in result else result["id"]  # type: ignore[no-any-return]


def hidden(answer: Any) -> Any:
    """Check a caller's answer: no internal part, and no message or artifact left
    with no parts (which would be invalid); the public parts are all there."""
    text = json.dumps(answer)
    assert SECRET not in text, text
    empty = [o for o in _objects(answer) if o.get("parts") == [] or o.get("content") == []]
    assert not empty, empty
    return answer


def shown(answer: Any) -> Any:
    assert SECRET in json.dumps(answer), answer
    return answer


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


# --- a plain caller ---


@pytest.mark.parametrize("b", BINDINGS, ids=repr)
async def test_a_plain_caller_sees_no_internal_part_in_any_operation(
    ann: httpx.AsyncClient, olga: httpx.AsyncClient, b: Binding
) -> None:
    sent = hidden(await b.send(ann, "go"))
    task_id = task_id_of(sent)
    text = json.dumps(sent)
    assert "Looking it up" in text and "the answer" in text and "done" in text
    assert "scratch" not in text  # an artifact of internal parts only is left out
    hidden(await b.get(ann, task_id))
    listed = hidden(await b.list(ann))
    assert task_id in json.dumps(listed)
    streamed = hidden(await b.events(ann, "stream", b.message("go")))
    assert "the answer" in json.dumps(streamed)
    replayed = hidden(await b.events(ann, "subscribe", {"id": task_id}, **{"Last-Event-ID": "0"}))
    # The scratch artifact's update is not sent at all: the operator gets one more event.
    everything = shown(await b.events(olga, "subscribe", {"id": task_id}, **{"Last-Event-ID": "0"}))
    assert len(everything) == len(replayed) + 1
    asked = hidden(await b.send(ann, "ask"))
    assert "Which city?" in json.dumps(asked)
    hidden(await b.cancel(ann, task_id_of(asked)))


@pytest.mark.parametrize("b", [b for b in BINDINGS if not b.rest], ids=repr)
async def test_a_live_subscription_of_a_plain_caller_carries_no_internal_part(
    ann: httpx.AsyncClient, b: Binding
) -> None:
    task_id = task_id_of(await b.send(ann, "ask"))
    async with b.open(ann, "subscribe", {"id": task_id}, {}) as r:
        it = frames(r)
        first = await anext(it)
        follow_up = b.message("Paris")
        follow_up["message"]["taskId"] = task_id
        answered = await b.rpc(ann, "SendMessage" if b.v1 else "message/send", follow_up)
        rest = [f async for f in it]
    hidden([first.result, *[f.result for f in rest], answered])
    assert "thanks" in json.dumps([f.result for f in rest])


async def test_a_reply_of_internal_parts_only_is_one_empty_text_part(
    ann: httpx.AsyncClient, olga: httpx.AsyncClient
) -> None:
    b = Binding(rest=False, v1=True)
    assert hidden(await b.send(ann, "reply"))["message"]["parts"] == [{"text": ""}]
    assert SECRET in shown(await b.send(olga, "reply"))["message"]["parts"][0]["text"]


async def test_the_agent_keeps_its_internal_parts_in_its_history(
    server: Server, ann: httpx.AsyncClient
) -> None:
    b = Binding(rest=False, v1=True)
    task_id = task_id_of(await b.send(ann, "ask"))
    follow_up = b.message("Paris")
    follow_up["message"]["taskId"] = task_id
    hidden(await b.rpc(ann, "SendMessage", follow_up))
    history = server.agent.histories[-1]
    assert any(SECRET in str(m.parts) for m in history[1:-1])  # its own turn's messages


# --- operators, and a server that exposes internal parts ---


@pytest.mark.parametrize("b", BINDINGS, ids=repr)
async def test_an_operator_sees_the_internal_parts_of_its_tenants_tasks(
    ann: httpx.AsyncClient, olga: httpx.AsyncClient, b: Binding
) -> None:
    task_id = task_id_of(hidden(await b.send(ann, "go")))
    got = shown(await b.get(olga, task_id))
    assert "scratch" in json.dumps(got)
    shown(await b.list(olga))
    shown(await b.events(olga, "stream", b.message("go")))
    shown(await b.cancel(olga, task_id_of(await b.send(ann, "ask"))))


@pytest.mark.parametrize("b", BINDINGS, ids=repr)
async def test_a_server_that_exposes_internal_parts_shows_them_to_every_caller(
    exposing: Server, b: Binding
) -> None:
    async with exposing.client("ann") as ann:
        task_id = task_id_of(shown(await b.send(ann, "go")))
        shown(await b.get(ann, task_id))
        shown(await b.events(ann, "subscribe", {"id": task_id}, **{"Last-Event-ID": "0"}))


# --- webhooks ---


def webhook(receiver: Receiver, hook: str, v1: bool) -> dict[str, Any]:
    if v1:
        return {"taskPushNotificationConfig": {"url": receiver.url(hook)}}
    return {"pushNotificationConfig": {"url": receiver.url(hook)}}


@pytest.mark.parametrize("v1", [True, False], ids=["v1.0", "v0.3"])
async def test_a_webhook_gets_no_internal_part_and_no_event_of_internal_parts_only(
    ann: httpx.AsyncClient, olga: httpx.AsyncClient, receiver: Receiver, v1: bool
) -> None:
    b = Binding(rest=False, v1=v1)
    hook = uuid.uuid4().hex[:8]
    params = {**b.message("go"), "configuration": webhook(receiver, hook, v1)}
    task_id = task_id_of(await b.rpc(ann, "SendMessage" if v1 else "message/send", params))
    events = await b.events(olga, "subscribe", {"id": task_id}, **{"Last-Event-ID": "0"})
    # The task itself, then every event but the scratch artifact's update.
    await wait_for(lambda: len(receiver.accepted(hook)) == len(events))
    await asyncio.sleep(0.1)  # nothing more comes
    got = [r.body for r in receiver.received(hook)]
    assert len(got) == len(events)
    hidden(got)
    assert "the answer" in json.dumps(got)


async def test_a_webhook_of_a_server_that_exposes_internal_parts_gets_them(
    exposing: Server, receiver: Receiver
) -> None:
    b = Binding(rest=False, v1=True)
    hook = uuid.uuid4().hex[:8]
    async with exposing.client("ann") as ann:
        params = {**b.message("go"), "configuration": webhook(receiver, hook, True)}
        task_id = task_id_of(await b.rpc(ann, "SendMessage", params))
        events = await b.events(ann, "subscribe", {"id": task_id}, **{"Last-Event-ID": "0"})
    await wait_for(lambda: len(receiver.accepted(hook)) == len(events) + 1)
    shown([r.body for r in receiver.received(hook)])
