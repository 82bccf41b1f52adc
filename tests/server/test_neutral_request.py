"""The dispatcher and the authenticators over the transport-neutral request, with no
ASGI at all: no app, no scope, no HTTP. This is the seam another binding (gRPC)
plugs into: it reads its wire form into an ``A2ARequest`` and puts the ``Reply``,
the ``EventStream`` or the A2AError on its wire. Every A2A operation is driven
through it here, as a caller sees them: task states, results, error codes."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from a2ad import MemoryStore, Task, TaskState
from a2ad.agent import ANONYMOUS, AgentCardInfo, Caller, RequestContext
from a2ad.agents.demo import DemoAgent
from a2ad.engine import EventStream
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.protocol.dialect import Operation
from a2ad.protocol.errors import A2AError, TaskNotFoundError
from a2ad.protocol.model import (
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from a2ad.protocol.v1 import V1
from a2ad.server.auth import ApiKeys, AuthenticationFailed, CredentialAuthenticator
from a2ad.server.dispatch import Dispatcher
from a2ad.server.handler import RequestHandler
from a2ad.server.request import A2ARequest, Headers, Inbound, Reply

BINDING = "NEUTRAL"  # no binding of ours: the request came by none
ALICE_KEY, BOB_KEY = "a2ad_alice-key", "a2ad_bob-key"


class Shop(DemoAgent):
    """The demo agent (echo, ``input <question>``, ``chunks <n>``) with an extended card."""

    def extended_card(self, request: RequestContext) -> AgentCardInfo | None:
        return self.card_info()


@pytest.fixture
async def dispatcher() -> AsyncIterator[Dispatcher]:
    engine = build_engine(
        Shop(chunk_pause=0), MemoryStore(), EngineConfig(allow_private_webhooks=True)
    )
    await engine.start()
    try:
        yield Dispatcher(RequestHandler(engine))
    finally:
        await engine.aclose()


def request(
    dispatcher: Dispatcher,
    operation: Operation,
    params: dict[str, Any],
    *,
    caller: Caller = ANONYMOUS,
    last_event_id: int | None = None,
) -> A2ARequest:
    """The neutral request a binding would read: A2A 1.0, params as JSON."""
    context = dispatcher.handler.request_context("1.0", BINDING, (), caller)
    return A2ARequest(
        Headers.of({"A2A-Version": "1.0"}),
        ("192.0.2.7", 40000),
        dialect=V1,
        operation=operation,
        method=operation.name,
        params=msgspec.Raw(msgspec.json.encode(params)),
        context=context,
        last_event_id=last_event_id,
        base_url="https://agents.example",
    )


async def answer(
    dispatcher: Dispatcher, operation: Operation, params: dict[str, Any], **kw: Any
) -> Any:
    """The Reply's value of a non-streaming operation."""
    got = await dispatcher.answer(request(dispatcher, operation, params, **kw))
    assert isinstance(got, Reply) and got.operation is operation
    return got.value


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    }


async def drain(events: EventStream) -> list[Any]:
    """The stream's items, to its end."""
    items = []
    try:
        while (step := await events.next(timeout=10)) is not None:
            items.append(step[1])
            if step[2]:
                break
    finally:
        events.close()
    return items


def states(items: list[Any]) -> list[TaskState]:
    return [item.status.state for item in items if isinstance(item, (Task, TaskStatusUpdateEvent))]


async def test_send_get_list_and_cancel(dispatcher: Dispatcher) -> None:
    done = await answer(dispatcher, Operation.SEND, message("hello"))
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    got = await answer(dispatcher, Operation.GET, {"id": done.id, "historyLength": 1})
    assert isinstance(got, Task) and got.status.state is TaskState.COMPLETED
    page = await answer(dispatcher, Operation.LIST, {})
    assert isinstance(page, ListTasksResponse) and [t.id for t in page.tasks] == [done.id]

    waiting = await answer(dispatcher, Operation.SEND, message("input which colour?"))
    assert isinstance(waiting, Task) and waiting.status.state is TaskState.INPUT_REQUIRED
    canceled = await answer(dispatcher, Operation.CANCEL, {"id": waiting.id})
    assert isinstance(canceled, Task) and canceled.status.state is TaskState.CANCELED

    with pytest.raises(A2AError) as refused:  # a terminal task stays so
        await answer(dispatcher, Operation.CANCEL, {"id": done.id})
    assert refused.value.code == -32002  # TaskNotCancelableError
    with pytest.raises(TaskNotFoundError):
        await answer(dispatcher, Operation.GET, {"id": "no-such-task"})
    with pytest.raises(A2AError) as invalid:  # the dialect decodes, and refuses, the params
        await answer(dispatcher, Operation.GET, {"historyLength": 1})
    assert invalid.value.code == -32602


async def test_stream_and_subscribe(dispatcher: Dispatcher) -> None:
    events = await dispatcher.answer(request(dispatcher, Operation.STREAM, message("chunks 2")))
    assert isinstance(events, EventStream)
    items = await drain(events)
    assert states(items)[-1] is TaskState.COMPLETED
    assert [i.artifact.parts[0].text for i in items if hasattr(i, "artifact")] == ["c0", "c1"]

    waiting = await answer(dispatcher, Operation.SEND, message("input which one?"))
    subscribe = request(dispatcher, Operation.SUBSCRIBE, {"id": waiting.id})
    follow = await dispatcher.answer(subscribe)
    assert isinstance(follow, EventStream)
    first = await follow.next(timeout=10)
    assert first is not None and isinstance(first[1], Task)
    assert first[1].status.state is TaskState.INPUT_REQUIRED
    reply = await answer(dispatcher, Operation.SEND, message("blue", taskId=waiting.id))
    assert reply.status.state is TaskState.COMPLETED
    assert states(await drain(follow))[-1] is TaskState.COMPLETED

    # Resumed after an event it had: the rest is replayed from the log.
    resumed = request(dispatcher, Operation.SUBSCRIBE, {"id": waiting.id}, last_event_id=1)
    replayed = await dispatcher.answer(resumed)
    assert isinstance(replayed, EventStream)
    assert states(await drain(replayed))[-1] is TaskState.COMPLETED
    with pytest.raises(A2AError) as ended:  # a terminal task has nothing more to follow
        await dispatcher.answer(request(dispatcher, Operation.SUBSCRIBE, {"id": waiting.id}))
    assert ended.value.code == -32004  # UnsupportedOperationError


async def test_push_config_operations(dispatcher: Dispatcher) -> None:
    task = await answer(dispatcher, Operation.SEND, message("input which one?"))
    hook = {"taskId": task.id, "url": "http://127.0.0.1:9/hook", "id": "h1"}
    created = await answer(dispatcher, Operation.CREATE_PUSH_CONFIG, hook)
    assert isinstance(created, TaskPushNotificationConfig) and created.id == "h1"
    named = {"taskId": task.id, "id": "h1"}
    got = await answer(dispatcher, Operation.GET_PUSH_CONFIG, named)
    assert isinstance(got, TaskPushNotificationConfig) and got.url == hook["url"]
    listed = await answer(dispatcher, Operation.LIST_PUSH_CONFIGS, {"taskId": task.id})
    assert isinstance(listed, ListTaskPushNotificationConfigsResponse)
    assert [c.id for c in listed.configs] == ["h1"]
    assert await answer(dispatcher, Operation.DELETE_PUSH_CONFIG, named) is None
    with pytest.raises(TaskNotFoundError):
        await answer(dispatcher, Operation.GET_PUSH_CONFIG, named)


async def test_extended_card(dispatcher: Dispatcher) -> None:
    card = await answer(dispatcher, Operation.EXTENDED_CARD, {})
    assert isinstance(card, dict)
    assert {s["id"] for s in card["skills"]} >= {"input", "chunks"}
    # Its URLs start where the request says the client reached the server.
    assert msgspec.json.encode(card).count(b"https://agents.example") >= 1


def keys() -> CredentialAuthenticator:
    entries = {
        hashlib.sha256(key.encode()).digest(): Caller(
            principal=name, tenants=("shop",), authenticated=True
        )
        for name, key in (("alice", ALICE_KEY), ("bob", BOB_KEY))
    }
    return CredentialAuthenticator(keys=ApiKeys(entries, path="(in the test)"))


async def test_an_api_key_proves_the_caller_and_others_tasks_are_not_found(
    dispatcher: Dispatcher,
) -> None:
    auth = keys()
    peer = ("198.51.100.2", 5000)
    alice = await auth.authenticate(Inbound(Headers.of({"X-API-Key": ALICE_KEY}), peer))
    bob = await auth.authenticate(Inbound(Headers.of([("Authorization", f"Bearer {BOB_KEY}")])))
    assert (alice.principal, bob.principal) == ("alice", "bob")

    mine = await answer(dispatcher, Operation.SEND, message("hello"), caller=alice)
    assert mine.status.state is TaskState.COMPLETED
    seen = await answer(dispatcher, Operation.GET, {"id": mine.id}, caller=alice)
    assert seen.id == mine.id
    # Not yours is not found: bob learns nothing of alice's task, not even that it is.
    with pytest.raises(TaskNotFoundError) as hidden:
        await answer(dispatcher, Operation.GET, {"id": mine.id}, caller=bob)
    assert hidden.value.code == -32001
    with pytest.raises(TaskNotFoundError):
        await answer(dispatcher, Operation.CANCEL, {"id": mine.id}, caller=bob)
    page = await answer(dispatcher, Operation.LIST, {}, caller=bob)
    assert page.tasks == []

    with pytest.raises(AuthenticationFailed) as unknown:
        await auth.authenticate(Inbound(Headers.of({"x-api-key": "a2ad_nobody"})))
    assert unknown.value.given and unknown.value.reason == "unknown key"
    with pytest.raises(AuthenticationFailed) as none:
        await auth.authenticate(Inbound(Headers()))
    assert not none.value.given


def test_headers_are_looked_up_whatever_their_case() -> None:
    headers = Headers.of([("A2A-Extensions", "urn:a"), ("a2a-extensions", "urn:b")])
    assert headers["a2a-EXTENSIONS"] == "urn:a"
    assert headers.all("A2A-Extensions") == ["urn:a", "urn:b"]
    assert list(headers) == ["a2a-extensions"] and len(headers) == 1
    assert headers.get("x-api-key") is None
    assert Inbound(headers, ("192.0.2.1", 80)).remote == "192.0.2.1:80"
