"""A message sent again with another webhook: it is answered with the task the
first send started (idempotent send), and its webhook is set on that task as
CreateTaskPushNotificationConfig would set it, with the same checks and limit.
A real webhook receiver on loopback, JSON-RPC in both versions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2ad import create_app
from a2ad.engine.config import EngineConfig
from a2ad.store.sqlite import SqliteStore

from ..conftest import V1, wait_for
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver
from .test_push import FAST, AppRpc, name, started


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite"])
async def rpc(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppRpc]:
    store = SqliteStore(tmp_path / "tasks.db") if request.param == "sqlite" else None
    app = create_app(
        ScriptedAgent(),
        store=store,
        engine=EngineConfig(allow_private_webhooks=True, push_policy=FAST),
    )
    async for client in started(app):
        yield client


class Version:
    """How one protocol version sends a message with a webhook and lists configs."""

    def __init__(self, v1: bool) -> None:
        self.v1 = v1

    def params(self, message_id: str, text: str, webhook: dict[str, Any]) -> dict[str, Any]:
        if self.v1:
            message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
            return {"message": message, "configuration": {"taskPushNotificationConfig": webhook}}
        message = {
            "kind": "message",
            "messageId": message_id,
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        return {"message": message, "configuration": {"pushNotificationConfig": webhook}}

    async def send(self, rpc: AppRpc, message_id: str, text: str, webhook: dict[str, Any]) -> Any:
        method = "SendMessage" if self.v1 else "message/send"
        return await rpc(method, self.params(message_id, text, webhook), v1=self.v1)

    async def task(self, rpc: AppRpc, message_id: str, text: str, webhook: dict[str, Any]) -> Any:
        body = await self.send(rpc, message_id, text, webhook)
        assert "result" in body, body
        return body["result"]["task"] if self.v1 else body["result"]

    async def urls(self, rpc: AppRpc, task_id: str) -> dict[str, str]:
        """The task's configs, by id: their URLs."""
        if self.v1:
            body = await rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}, v1=True)
            return {c["id"]: c["url"] for c in body["result"]["configs"]}
        body = await rpc("tasks/pushNotificationConfig/list", {"id": task_id})
        inner = [c["pushNotificationConfig"] for c in body["result"]]
        return {c["id"]: c["url"] for c in inner}

    def state(self, received: Any) -> str:
        """The task state a delivery carries (1.0: the task, then status updates)."""
        if self.v1:
            received = received.get("task") or received.get("statusUpdate") or {"status": {}}
        state = received["status"].get("state", "")
        return str(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


@pytest.fixture(params=[True, False], ids=["v1.0", "v0.3"])
def version(request: pytest.FixtureRequest) -> Version:
    return Version(request.param)


async def test_a_resend_naming_another_webhook_sets_it_and_it_gets_the_task(
    rpc: AppRpc, receiver: Receiver, version: Version
) -> None:
    # The conformance kit's case: the same message (id and content) in two tests,
    # each with a webhook of its own and no config id.
    first, second, message_id = name(), name(), str(uuid.uuid4())
    task = await version.task(rpc, message_id, "echo x", {"url": receiver.url(first)})
    await wait_for(lambda: len(receiver.accepted(first)) == 4)  # submitted…completed
    again = await version.task(rpc, message_id, "echo x", {"url": receiver.url(second)})
    assert again["id"] == task["id"]  # the same task: nothing ran again
    # Set as a config of the same id (the task's) would be: it replaces the first,
    # and being another receiver, it gets the task as it stands.
    assert await version.urls(rpc, task["id"]) == {task["id"]: receiver.url(second)}
    await wait_for(lambda: len(receiver.accepted(second)) == 1)
    assert version.state(receiver.accepted(second)[0].body) == "completed"
    assert len(receiver.received(first)) == 4  # nothing more to the first


async def test_a_resend_naming_a_webhook_of_its_own_id_adds_it_beside_the_first(
    rpc: AppRpc, receiver: Receiver, version: Version
) -> None:
    first, second, message_id = name(), name(), str(uuid.uuid4())
    task = await version.task(rpc, message_id, "input which?", {"url": receiver.url(first)})
    webhook = {"url": receiver.url(second), "id": "second", "token": "tok-2"}
    again = await version.task(rpc, message_id, "input which?", webhook)
    assert again["id"] == task["id"]
    assert await version.urls(rpc, task["id"]) == {
        task["id"]: receiver.url(first),
        "second": receiver.url(second),
    }
    await wait_for(lambda: len(receiver.accepted(second)) == 1)
    got = receiver.accepted(second)[0]
    assert version.state(got.body) == "input-required"
    assert got.headers["x-a2a-notification-token"] == "tok-2"
    # Both now get the task's later events: the follow-up completes it.
    follow = (
        {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "that one"}]}
        if version.v1
        else {
            "kind": "message",
            "messageId": str(uuid.uuid4()),
            "role": "user",
            "parts": [{"kind": "text", "text": "that one"}],
        }
    )
    follow["taskId"] = task["id"]
    await rpc("SendMessage" if version.v1 else "message/send", {"message": follow}, v1=version.v1)

    def completed(hook: str) -> bool:
        return any(version.state(r.body) == "completed" for r in receiver.accepted(hook))

    await wait_for(lambda: completed(first) and completed(second))


async def test_a_resend_is_held_to_the_webhook_limit_and_its_checks(
    rpc: AppRpc, receiver: Receiver, version: Version
) -> None:
    message_id = str(uuid.uuid4())
    task = await version.task(rpc, message_id, "echo x", {"url": receiver.url(name()), "id": "0"})
    for i in range(1, 10):
        params = {"taskId": task["id"], "url": receiver.url(name()), "id": str(i)}
        assert "result" in await rpc("CreateTaskPushNotificationConfig", params, v1=True)
    eleventh = {"url": receiver.url(name()), "id": "10"}
    body = await version.send(rpc, message_id, "echo x", eleventh)
    assert body["error"]["code"] == -32004, body
    assert "10 push notification configs" in body["error"]["message"]
    malformed = {"url": "ftp://93.184.215.14/x"}
    body = await version.send(rpc, message_id, "echo x", malformed)
    assert body["error"]["code"] == -32602, body
    assert len(await version.urls(rpc, task["id"])) == 10


async def test_a_resend_accepting_nothing_the_agent_produces_is_refused_as_a_first_send(
    rpc: AppRpc, receiver: Receiver, version: Version
) -> None:
    message_id = str(uuid.uuid4())
    task = await version.task(rpc, message_id, "echo x", {"url": receiver.url(name())})
    params = version.params(message_id, "echo x", {"url": receiver.url(name())})
    params["configuration"]["acceptedOutputModes"] = ["image/png"]
    body = await rpc("SendMessage" if version.v1 else "message/send", params, v1=version.v1)
    assert body["error"]["code"] == -32005, body
    assert "acceptedOutputModes" in body["error"]["message"]
    assert len(await version.urls(rpc, task["id"])) == 1  # its webhook was not set either


async def test_a_streamed_resend_naming_another_webhook_sets_it_too(
    rpc: AppRpc, receiver: Receiver, version: Version
) -> None:
    first, second, message_id = name(), name(), str(uuid.uuid4())
    task = await version.task(rpc, message_id, "echo x", {"url": receiver.url(first)})
    method = "SendStreamingMessage" if version.v1 else "message/stream"
    params = version.params(message_id, "echo x", {"url": receiver.url(second), "id": "s"})
    headers = V1 if version.v1 else {}
    r = await rpc.client.post("/", json=rpc.body(method, params), headers=headers)
    assert r.status_code == 200 and task["id"] in r.text  # the stream of the same task
    assert await version.urls(rpc, task["id"]) == {
        task["id"]: receiver.url(first),
        "s": receiver.url(second),
    }
    await wait_for(lambda: len(receiver.accepted(second)) == 1)
    assert version.state(receiver.accepted(second)[0].body) == "completed"
