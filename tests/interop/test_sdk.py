"""The official a2a-sdk (1.x) client against a2ad under a real uvicorn.

Each test runs a fresh a2ad (the `live` fixture, ScriptedAgent) and talks to it
only through `a2a.client`, as a user of the SDK would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory, create_client
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from a2ad import create_app
from a2ad.engine.config import EngineConfig

from ..conftest import LiveServer, wait_for
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver
from .sdk import TIMEOUT, collect, request, send_task

MakeClient = Callable[..., Awaitable[Client]]


@pytest.fixture
async def sdk(live: LiveServer) -> AsyncIterator[MakeClient]:
    """Makes SDK clients for the live server (card discovery included) and closes them."""
    made: list[Client] = []

    async def make(**config: Any) -> Client:
        client = await create_client(live.url, client_config=ClientConfig(**config))
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


# --- discovery --------------------------------------------------------------


async def test_sdk_reads_the_agent_card(live: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, live.url).get_agent_card()
    assert card.name == "scripted"
    assert card.capabilities.streaming
    interfaces = {
        (i.protocol_binding, i.protocol_version): i.url for i in card.supported_interfaces
    }
    assert interfaces == {
        (binding, version): live.url + "/"
        for binding in ("JSONRPC", "HTTP+JSON")
        for version in ("1.0", "0.3")
    }
    assert [s.name for s in card.skills] == ["scripted"]


# --- SendMessage / SendStreamingMessage --------------------------------------


async def test_sdk_send_without_streaming_returns_the_completed_task(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    task = await send_task(client, "echo hi there")
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [[p.text for p in a.parts] for a in task.artifacts] == [["hi there"]]
    assert [a.name for a in task.artifacts] == ["echo"]
    assert [(m.role, m.parts[0].text) for m in task.history] == [
        (Role.ROLE_USER, "echo hi there"),
        (Role.ROLE_AGENT, "on it"),
    ]
    assert task.id and task.context_id


async def test_sdk_receives_every_part_kind_intact(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    task = await send_task(client, "parts")
    parts = {a.name: list(a.parts) for a in task.artifacts}
    assert parts["text"][0].text == "plain text"
    data = parts["data"][0]
    assert data.WhichOneof("content") == "data"
    assert data.data.struct_value["n"] == 1
    assert list(data.data.struct_value["xs"]) == [1, 2]
    raw = parts["raw"][0]
    assert raw.raw == b"\x00\x01bytes"
    assert (raw.filename, raw.media_type) == ("b.bin", "application/octet-stream")
    url = parts["url"][0]
    assert url.url == "https://example.com/f.pdf"
    assert (url.filename, url.media_type) == ("f.pdf", "application/pdf")
    assert [p.text for p in parts["multi"]] == ["a", "b"]


async def test_sdk_stream_sees_the_task_first_then_updates_until_completed(sdk: MakeClient) -> None:
    client = await sdk(streaming=True)
    events = await collect(client.send_message(request("chunks 3")))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert set(kinds[1:]) == {"status_update", "artifact_update"}
    task_id = events[0].task.id

    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert [c.artifact.parts[0].text for c in chunks] == ["c0", "c1", "c2"]
    assert [(c.append, c.last_chunk) for c in chunks] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert {c.task_id for c in chunks} == {task_id}

    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert kinds[-1] == "status_update"


async def test_sdk_stream_of_a_reply_is_one_agent_message(sdk: MakeClient) -> None:
    client = await sdk(streaming=True)
    events = await collect(client.send_message(request("reply hello")))
    assert [e.WhichOneof("payload") for e in events] == ["message"]
    assert events[0].message.role == Role.ROLE_AGENT
    assert events[0].message.parts[0].text == "hello"
    assert events[0].message.task_id == ""


async def test_sdk_follow_up_answers_an_input_required_task(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    asked = await send_task(client, "input which one?")
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert asked.status.message.parts[0].text == "which one?"
    answered = await send_task(client, "this one", task_id=asked.id, context_id=asked.context_id)
    assert answered.id == asked.id
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert answered.artifacts[0].parts[0].text == "got: this one"


# --- GetTask / ListTasks -----------------------------------------------------


async def test_sdk_get_task_honours_history_length(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    sent = await send_task(client, "echo hi")
    full = await client.get_task(GetTaskRequest(id=sent.id))
    assert full.status.state == TaskState.TASK_STATE_COMPLETED
    assert [m.parts[0].text for m in full.history] == ["echo hi", "on it"]
    assert list(full.artifacts) == list(sent.artifacts)

    newest = await client.get_task(GetTaskRequest(id=sent.id, history_length=1))
    assert [m.parts[0].text for m in newest.history] == ["on it"]


async def test_sdk_list_tasks_pages_through_the_tasks_sent(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    sent = [(await send_task(client, f"echo {i}")).id for i in range(3)]

    first = await client.list_tasks(ListTasksRequest(page_size=2))
    assert first.total_size == 3
    assert first.page_size == 2
    assert len(first.tasks) == 2
    assert first.next_page_token

    second = await client.list_tasks(
        ListTasksRequest(page_size=2, page_token=first.next_page_token)
    )
    assert len(second.tasks) == 1
    assert second.next_page_token == ""

    listed = [t.id for t in first.tasks] + [t.id for t in second.tasks]
    assert listed == list(reversed(sent))  # newest first


async def test_sdk_list_tasks_filters_by_context(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    mine = await send_task(client, "echo mine", context_id="ctx-interop")
    await send_task(client, "echo other")
    page = await client.list_tasks(ListTasksRequest(context_id="ctx-interop", page_size=10))
    assert [t.id for t in page.tasks] == [mine.id]
    assert page.total_size == 1


# --- CancelTask / errors --------------------------------------------------------


async def test_sdk_cancels_a_running_task(sdk: MakeClient, agent: ScriptedAgent) -> None:
    poller = await sdk(streaming=False, polling=True)
    started = await send_task(poller, "hang x")
    assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    await wait_for(lambda: started.id in agent.started)

    canceled = await poller.cancel_task(CancelTaskRequest(id=started.id))
    assert canceled.id == started.id
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    await wait_for(lambda: started.id in agent.cancelled)
    again = await poller.get_task(GetTaskRequest(id=started.id))
    assert again.status.state == TaskState.TASK_STATE_CANCELED


async def test_sdk_cancel_of_a_completed_task_raises_not_cancelable(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    done = await send_task(client, "echo done")
    with pytest.raises(TaskNotCancelableError) as info:
        await client.cancel_task(CancelTaskRequest(id=done.id))
    assert "completed" in info.value.message


async def test_sdk_get_of_an_unknown_task_raises_not_found(sdk: MakeClient) -> None:
    client = await sdk(streaming=False)
    with pytest.raises(TaskNotFoundError) as info:
        await client.get_task(GetTaskRequest(id="no-such-task"))
    assert "no-such-task" in info.value.message


# --- SubscribeToTask -------------------------------------------------------------


async def test_sdk_subscription_to_a_running_task_starts_with_the_task_and_ends_at_cancel(
    sdk: MakeClient, agent: ScriptedAgent
) -> None:
    poller = await sdk(streaming=False, polling=True)
    streamer = await sdk(streaming=True)
    started = await send_task(poller, "hang x")
    await wait_for(lambda: started.id in agent.started)

    events: list[StreamResponse] = []

    async def follow() -> None:
        async for event in streamer.subscribe(SubscribeToTaskRequest(id=started.id)):
            events.append(event)

    follower = asyncio.create_task(follow())
    try:
        await wait_for(lambda: len(events) >= 1)
        first = events[0]
        assert first.WhichOneof("payload") == "task"
        assert first.task.id == started.id
        assert first.task.status.state == TaskState.TASK_STATE_WORKING

        await poller.cancel_task(CancelTaskRequest(id=started.id))
        async with asyncio.timeout(TIMEOUT):
            await follower
    finally:
        follower.cancel()
    last = events[-1]
    assert last.WhichOneof("payload") == "status_update"
    assert last.status_update.status.state == TaskState.TASK_STATE_CANCELED


async def test_sdk_subscription_to_a_completed_task_is_unsupported(sdk: MakeClient) -> None:
    client = await sdk(streaming=True)
    events = await collect(client.send_message(request("echo done")))
    task_id = events[0].task.id
    with pytest.raises(UnsupportedOperationError):
        await collect(client.subscribe(SubscribeToTaskRequest(id=task_id)))


# --- the SDK's A2A 0.3 client path ------------------------------------------------


@pytest.fixture
async def wire(live: LiveServer) -> AsyncIterator[tuple[httpx.AsyncClient, list[tuple[str, str]]]]:
    """An httpx client recording (A2A-Version header, JSON-RPC method) per request."""
    seen: list[tuple[str, str]] = []

    async def record(r: httpx.Request) -> None:
        if r.method == "POST":
            seen.append((r.headers.get("a2a-version", ""), json.loads(r.content)["method"]))

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        yield http, seen


async def only_03_card(http: httpx.AsyncClient, url: str) -> AgentCard:
    card = await A2ACardResolver(http, url).get_agent_card()
    keep = [
        i
        for i in card.supported_interfaces
        if i.protocol_version == "0.3" and i.protocol_binding == "JSONRPC"
    ]
    assert len(keep) == 1
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


async def test_sdk_03_client_sends_and_gets_tasks(
    live: LiveServer, wire: tuple[httpx.AsyncClient, list[tuple[str, str]]]
) -> None:
    http, seen = wire
    card = await only_03_card(http, live.url)
    client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
    try:
        task = await send_task(client, "echo old school")
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "old school"
        got = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
        assert got.id == task.id
        assert got.status.state == TaskState.TASK_STATE_COMPLETED
        assert [m.parts[0].text for m in got.history] == ["on it"]
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
    finally:
        await client.close()
    assert seen == [("0.3", "message/send"), ("0.3", "tasks/get"), ("0.3", "tasks/get")]


async def test_sdk_03_client_streams_and_cancels(
    live: LiveServer, wire: tuple[httpx.AsyncClient, list[tuple[str, str]]], agent: ScriptedAgent
) -> None:
    http, seen = wire
    card = await only_03_card(http, live.url)
    streamer = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    poller = ClientFactory(ClientConfig(streaming=False, polling=True, httpx_client=http)).create(
        card
    )
    try:
        events = await collect(streamer.send_message(request("chunks 2")))
        assert events[0].WhichOneof("payload") == "task"
        assert [
            e.artifact_update.artifact.parts[0].text
            for e in events
            if e.HasField("artifact_update")
        ] == ["c0", "c1"]
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

        hanging = await send_task(poller, "hang x")
        await wait_for(lambda: hanging.id in agent.started)
        canceled = await poller.cancel_task(CancelTaskRequest(id=hanging.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await poller.cancel_task(CancelTaskRequest(id=hanging.id))
    finally:
        await streamer.close()
        await poller.close()
    assert [m for _, m in seen] == [
        "message/stream",
        "message/send",
        "tasks/cancel",
        "tasks/cancel",
    ]
    assert {v for v, _ in seen} == {"0.3"}


# --- push notifications through the SDK's clients ------------------------------


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_sdk_sets_gets_lists_and_deletes_push_configs_and_the_webhook_gets_the_events(
    agent: ScriptedAgent, version: str
) -> None:
    hook = f"sdk-{version}"
    with (
        Receiver() as receiver,
        LiveServer(create_app(agent, engine=EngineConfig(allow_private_webhooks=True))) as live,
    ):
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, live.url).get_agent_card()
            assert card.capabilities.push_notifications is True
            keep = [i for i in card.supported_interfaces if i.protocol_version == version]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(keep)
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            try:
                sent = request("chunks 2")
                sent.configuration.task_push_notification_config.url = receiver.url(hook)
                sent.configuration.task_push_notification_config.token = "tok"
                (event,) = await collect(client.send_message(sent))
                task = event.task
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                await wait_for(lambda: len(receiver.accepted(hook)) == 5)  # the task, 4 events
                assert receiver.accepted(hook)[-1].headers["x-a2a-notification-token"] == "tok"

                config = TaskPushNotificationConfig(
                    task_id=task.id, id="extra", url=receiver.url(f"{hook}-extra"), token="t2"
                )
                created = await client.create_task_push_notification_config(config)
                assert (created.task_id, created.id, created.url) == (
                    task.id,
                    "extra",
                    config.url,
                )
                got = await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task.id, id="extra")
                )
                assert (got.id, got.url, got.token) == ("extra", config.url, "****")  # masked
                listed = await client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=task.id)
                )
                assert [c.id for c in listed.configs] == [task.id, "extra"]
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="extra")
                )
                listed = await client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=task.id)
                )
                assert [c.id for c in listed.configs] == [task.id]
            finally:
                await client.close()
