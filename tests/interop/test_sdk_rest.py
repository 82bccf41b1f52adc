"""The official a2a-sdk client over HTTP+JSON, against a2ad under a real uvicorn.

The client is made as a user makes it: ClientFactory reads the agent card and
picks the HTTP+JSON interface because the client config asks for that binding.
An event hook records every request's method and path, to show that the REST
paths (not the JSON-RPC endpoint) carried the calls.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from a2ad import create_app
from a2ad.engine.config import EngineConfig

from ..conftest import LiveServer, wait_for
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver
from .sdk import collect, request, send_task

TIMEOUT = 10


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def server(agent: ScriptedAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent)) as live:
        yield live


class Recorder:
    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, r: httpx.Request) -> None:
        if not r.url.path.startswith("/.well-known/"):
            self.paths.append(f"{r.method} {r.url.path}")


@pytest.fixture
async def http() -> AsyncIterator[tuple[httpx.AsyncClient, Recorder]]:
    seen = Recorder()
    async with httpx.AsyncClient(event_hooks={"request": [seen]}, timeout=TIMEOUT) as c:
        yield c, seen


async def card_for(http: httpx.AsyncClient, url: str, version: str) -> AgentCard:
    """The card, keeping the interfaces of ``version`` (the SDK would pick 1.0)."""
    card = await A2ACardResolver(http, url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_version == version]
    assert {i.protocol_binding for i in keep} == {"JSONRPC", "HTTP+JSON"}
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


def rest_client(
    http: httpx.AsyncClient, card: AgentCard, *, streaming: bool, polling: bool = False
) -> Client:
    """An SDK client on the card's HTTP+JSON interface; ``polling`` sends return
    the task at once (returnImmediately / blocking: false)."""
    config = ClientConfig(
        streaming=streaming,
        polling=polling,
        httpx_client=http,
        supported_protocol_bindings=["HTTP+JSON"],
    )
    return ClientFactory(config).create(card)


async def test_sdk_1_0_over_rest_sends_gets_lists_and_cancels(
    server: LiveServer, http: tuple[httpx.AsyncClient, Recorder], agent: ScriptedAgent
) -> None:
    c, seen = http
    card = await card_for(c, server.url, "1.0")
    client = rest_client(c, card, streaming=False)
    poller = rest_client(c, card, streaming=False, polling=True)
    try:
        context = f"ctx-{uuid.uuid4()}"
        task = await send_task(client, "echo over rest", context_id=context)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "over rest"
        got = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
        assert [m.parts[0].text for m in got.history] == ["on it"]
        await send_task(client, "echo again", context_id=context)
        page = await client.list_tasks(
            ListTasksRequest(context_id=context, status=TaskState.TASK_STATE_COMPLETED, page_size=1)
        )
        assert page.total_size == 2 and len(page.tasks) == 1 and page.next_page_token
        hanging = await send_task(poller, "hang", context_id=context)
        await wait_for(lambda: hanging.id in agent.started)
        canceled = await client.cancel_task(CancelTaskRequest(id=hanging.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=hanging.id))
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
    finally:
        await client.close()
        await poller.close()
    assert seen.paths[:3] == [
        "POST /message:send",
        f"GET /tasks/{task.id}",
        "POST /message:send",
    ]
    assert "GET /tasks" in seen.paths and f"POST /tasks/{hanging.id}:cancel" in seen.paths
    assert "POST /" not in seen.paths


async def test_sdk_1_0_over_rest_streams_and_subscribes(
    server: LiveServer, http: tuple[httpx.AsyncClient, Recorder], agent: ScriptedAgent
) -> None:
    c, seen = http
    client = rest_client(c, await card_for(c, server.url, "1.0"), streaming=True)
    try:
        events = await collect(client.send_message(request("chunks 2")))
        assert events[0].WhichOneof("payload") == "task"
        texts = [
            e.artifact_update.artifact.parts[0].text
            for e in events
            if e.HasField("artifact_update")
        ]
        assert texts == ["c0", "c1"]
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

        poller = rest_client(c, await card_for(c, server.url, "1.0"), streaming=False, polling=True)
        task_id = (await send_task(poller, "hang")).id
        await poller.close()
        await wait_for(lambda: task_id in agent.started)
        followed: list[StreamResponse] = []

        async def follow() -> None:
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                followed.append(event)

        following = asyncio.create_task(follow())
        await wait_for(lambda: followed)
        await client.cancel_task(CancelTaskRequest(id=task_id))
        async with asyncio.timeout(TIMEOUT):
            await following
    finally:
        await client.close()
    assert followed[0].task.id == task_id
    assert followed[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    assert seen.paths[0] == "POST /message:stream"
    assert f"POST /tasks/{task_id}:subscribe" in seen.paths


async def test_sdk_0_3_over_rest_sends_gets_streams_and_cancels(
    server: LiveServer, http: tuple[httpx.AsyncClient, Recorder], agent: ScriptedAgent
) -> None:
    c, seen = http
    card = await card_for(c, server.url, "0.3")
    sender = rest_client(c, card, streaming=False)
    poller = rest_client(c, card, streaming=False, polling=True)
    streamer = rest_client(c, card, streaming=True)
    try:
        task = await send_task(sender, "parts")
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        kinds = {a.name: a.parts[0].WhichOneof("content") for a in task.artifacts}
        assert kinds == {
            "text": "text",
            "data": "data",
            "raw": "raw",
            "url": "url",
            "multi": "text",
        }
        raw = next(a for a in task.artifacts if a.name == "raw").parts[0]
        assert (raw.raw, raw.filename, raw.media_type) == (
            b"\x00\x01bytes",
            "b.bin",
            "application/octet-stream",
        )
        got = await sender.get_task(GetTaskRequest(id=task.id, history_length=1))
        assert got.id == task.id and len(got.history) == 1
        events = await collect(streamer.send_message(request("chunks 2")))
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        hanging = await send_task(poller, "hang")
        await wait_for(lambda: hanging.id in agent.started)
        canceled = await poller.cancel_task(CancelTaskRequest(id=hanging.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await poller.cancel_task(CancelTaskRequest(id=hanging.id))
        with pytest.raises(TaskNotFoundError):
            await poller.get_task(GetTaskRequest(id="no-such-task"))
    finally:
        await sender.close()
        await poller.close()
        await streamer.close()
    assert seen.paths[:3] == [
        "POST /v1/message:send",
        f"GET /v1/tasks/{task.id}",
        "POST /v1/message:stream",
    ]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_sdk_over_rest_sets_gets_and_deletes_push_configs_and_the_webhook_gets_events(
    agent: ScriptedAgent, http: tuple[httpx.AsyncClient, Recorder], version: str
) -> None:
    c, seen = http
    hook = f"rest-{version}"
    with (
        Receiver() as receiver,
        LiveServer(create_app(agent, engine=EngineConfig(allow_private_webhooks=True))) as live,
    ):
        client = rest_client(c, await card_for(c, live.url, version), streaming=False)
        try:
            sent = request("chunks 2")
            sent.configuration.task_push_notification_config.url = receiver.url(hook)
            (event,) = await collect(client.send_message(sent))
            task = event.task
            await wait_for(lambda: len(receiver.accepted(hook)) == 5)  # the task, 4 events
            config = TaskPushNotificationConfig(
                task_id=task.id, id="extra", url=receiver.url(f"{hook}-extra"), token="t2"
            )
            created = await client.create_task_push_notification_config(config)
            assert (created.task_id, created.id, created.url) == (task.id, "extra", config.url)
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="extra")
            )
            assert (got.id, got.url, got.token) == ("extra", config.url, "****")  # masked
            if version == "1.0":  # the SDK's 0.3 REST client does not list, nor delete
                listed = await client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=task.id)
                )
                assert [x.id for x in listed.configs] == [task.id, "extra"]
            if version == "1.0":
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="extra")
                )
            else:  # nor delete: as a user without it would
                path = f"/v1/tasks/{task.id}/pushNotificationConfigs/extra"
                async with httpx.AsyncClient() as plain:  # no A2A-Version: 0.3
                    r = await plain.delete(live.url + path)
                assert (r.status_code, r.json()) == (200, {}), r.text
            with pytest.raises(TaskNotFoundError):
                await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task.id, id="extra")
                )
        finally:
            await client.close()
    prefix = "/v1" if version == "0.3" else ""
    assert f"POST {prefix}/tasks/{task.id}/pushNotificationConfigs" in seen.paths
    if version == "1.0":
        assert f"DELETE /tasks/{task.id}/pushNotificationConfigs/extra" in seen.paths
