"""Push notifications delivered to a real webhook receiver on loopback.

The app serves JSON-RPC in process (ASGI) with its engine started, so the push
worker runs; it may call loopback webhooks (``allow_private_webhooks``) and
retries after a few milliseconds instead of seconds. What each receiver got is
checked against what the task's stream and log say happened.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from a2a.types import StreamResponse

from a2ad import A2AApp, PushPolicy, create_app
from a2ad.engine.config import EngineConfig
from a2ad.protocol.model import TaskPushNotificationConfig
from a2ad.server.extensions import PUSH_DELIVERY
from a2ad.store.base import Webhook
from a2ad.store.sqlite import SqliteStore

from ..conformance.oracles import parse_v1, validate_03
from ..conftest import V1, Rpc, msg03, msg10, wait_for
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver

ATTEMPTS = 4
FAST = PushPolicy(first_retry=0.01, max_retry=0.05, max_attempts=ATTEMPTS, timeout=5)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


class AppRpc(Rpc):
    """JSON-RPC calls to ``app``, which the test can also read from."""

    def __init__(self, client: httpx.AsyncClient, app: A2AApp) -> None:
        super().__init__(client)
        self.app = app


async def started(app: A2AApp) -> AsyncIterator[AppRpc]:
    await app.engine.start()
    transport = httpx.ASGITransport(app=app)
    # Activates a2ad's extension: config answers then carry ``a2adDelivery``.
    headers = {"A2A-Extensions": PUSH_DELIVERY.uri}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://a2ad.test", headers=headers
    ) as client:
        yield AppRpc(client, app)
    await app.aclose()


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


def name() -> str:
    return uuid.uuid4().hex[:8]


def webhook10(receiver: Receiver, hook: str, **extra: Any) -> dict[str, Any]:
    return {"taskPushNotificationConfig": {"url": receiver.url(hook), **extra}}


def webhook03(receiver: Receiver, hook: str, **extra: Any) -> dict[str, Any]:
    return {"pushNotificationConfig": {"url": receiver.url(hook), **extra}}


async def send10(rpc: AppRpc, text: str, configuration: dict[str, Any], **message: Any) -> Any:
    params = {**msg10(text, **message), "configuration": configuration}
    body = await rpc("SendMessage", params, v1=True)
    assert "result" in body, body
    return body["result"]["task"]


async def logged(rpc: AppRpc, task_id: str) -> list[dict[str, Any]]:
    """The task's events as a 1.0 stream would carry them: what the webhook must
    have received after the task itself."""
    kinds = {"TaskStatusUpdateEvent": "statusUpdate", "TaskArtifactUpdateEvent": "artifactUpdate"}
    return [
        {kinds[type(e.event).__name__]: msgspec.to_builtins(e.event)}
        for e in await rpc.app.store.events(task_id, 0)
    ]


async def config_of(rpc: AppRpc, task_id: str, config_id: str) -> dict[str, Any]:
    body = await rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config_id}, v1=True)
    return body["result"]  # type: ignore[no-any-return]


async def settled(rpc: AppRpc, task_id: str, config_id: str) -> dict[str, Any]:
    """The config's ``a2adDelivery`` once nothing is pending any more."""

    async def idle() -> bool:
        config = await config_of(rpc, task_id, config_id)
        return config["a2adDelivery"]["pending"] == 0  # type: ignore[no-any-return]

    await wait_for(idle)
    return (await config_of(rpc, task_id, config_id))["a2adDelivery"]  # type: ignore[no-any-return]


async def test_every_event_reaches_a_1_0_webhook_in_order_with_its_token_and_authorization(
    rpc: AppRpc, receiver: Receiver
) -> None:
    hook = name()
    auth = {"scheme": "Bearer", "credentials": "s3cret"}
    task = await send10(
        rpc, "chunks 4", webhook10(receiver, hook, token="tok-1", authentication=auth)
    )
    events = await logged(rpc, task["id"])
    await wait_for(lambda: len(receiver.accepted(hook)) == len(events) + 1)
    got = receiver.received(hook)
    assert [r.seq for r in got] == list(range(len(events) + 1))
    assert got[0].body["task"]["id"] == task["id"]
    assert got[0].body["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert [r.body for r in got[1:]] == events
    assert got[-1].body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for r in got:
        parse_v1(r.body, StreamResponse)  # exact 1.0
        assert r.headers["content-type"] == "application/a2a+json"
        assert r.headers["authorization"] == "Bearer s3cret"
        assert r.headers["x-a2a-notification-token"] == "tok-1"
        assert r.headers["host"] == f"127.0.0.1:{receiver.port}"
    # No id given: the config is the task's, and it says all went well.
    delivery = await settled(rpc, task["id"], task["id"])
    assert delivery == {"pending": 0, "delivered": len(events) + 1, "deadLettered": 0}


async def test_a_0_3_webhook_gets_the_task_as_it_stood_after_every_event(
    rpc: AppRpc, receiver: Receiver
) -> None:
    hook = name()
    auth = {"schemes": ["Basic"], "credentials": "dXNlcjpwdw=="}
    params = {
        **msg03("chunks 2"),
        "configuration": webhook03(receiver, hook, token="t03", authentication=auth),
    }
    task = (await rpc("message/send", params))["result"]
    count = 1 + len(await logged(rpc, task["id"]))
    await wait_for(lambda: len(receiver.accepted(hook)) == count)
    got = receiver.received(hook)
    for r in got:
        validate_03(r.body, "Task")
        assert r.headers["content-type"] == "application/json"
        assert r.headers["authorization"] == "Basic dXNlcjpwdw=="
        assert r.headers["x-a2a-notification-token"] == "t03"
    states = [r.body["status"]["state"] for r in got]
    assert states == ["submitted", "working", "working", "working", "completed"]
    assert [len(r.body.get("artifacts", [{"parts": []}])[0]["parts"]) for r in got] == [
        0,
        0,
        1,
        2,
        2,
    ]
    assert got[-1].body == (await rpc("tasks/get", {"id": task["id"]}))["result"]


async def test_a_receiver_that_fails_at_first_gets_every_event_in_order_once_it_accepts(
    rpc: AppRpc, receiver: Receiver
) -> None:
    hook = name()
    receiver.rule(hook, fail_first=3)
    task = await send10(rpc, "chunks 3", webhook10(receiver, hook, id="retried"))
    events = await logged(rpc, task["id"])
    await wait_for(lambda: len(receiver.accepted(hook)) == len(events) + 1)
    got = receiver.received(hook)
    assert [(r.seq, r.status) for r in got[:4]] == [(0, 503), (0, 503), (0, 503), (0, 200)]
    assert [r.seq for r in receiver.accepted(hook)] == list(range(len(events) + 1))
    assert [r.body for r in receiver.accepted(hook)][1:] == events
    assert await settled(rpc, task["id"], "retried") == {
        "pending": 0,
        "delivered": len(events) + 1,
        "deadLettered": 0,
        "lastError": "HTTP 503",
    }


@pytest.mark.parametrize(("status", "attempts"), [(500, ATTEMPTS), (410, 1)])
async def test_an_event_a_receiver_keeps_refusing_is_dead_lettered_and_its_owner_can_see_it(
    rpc: AppRpc, receiver: Receiver, status: int, attempts: int
) -> None:
    hook = name()
    receiver.rule(hook, status=status)  # 5xx: tried ATTEMPTS times; 410: refused for good
    task = await send10(rpc, "echo x", webhook10(receiver, hook, id="doomed"))
    count = 1 + len(await logged(rpc, task["id"]))
    delivery = await settled(rpc, task["id"], "doomed")
    assert delivery == {
        "pending": 0,
        "delivered": 0,
        "deadLettered": count,
        "lastError": f"HTTP {status}",
    }
    seqs = [r.seq for r in receiver.received(hook)]
    assert seqs == [seq for seq in range(count) for _ in range(attempts)]  # each in turn
    listed = await rpc("tasks/pushNotificationConfig/list", {"id": task["id"]})
    assert listed["result"][0]["a2adDelivery"] == delivery


async def test_a_slow_receiver_holds_up_neither_another_webhook_nor_the_agent_nor_a_stream(
    rpc: AppRpc, receiver: Receiver
) -> None:
    slow, fast, other = name(), name(), name()
    receiver.rule(slow, hold=True)
    # The task completes while its webhook's first request hangs.
    held = await send10(rpc, "chunks 3", webhook10(receiver, slow))
    assert held["status"]["state"] == "TASK_STATE_COMPLETED"
    await wait_for(lambda: len(receiver.received(slow)) == 1)
    # A second webhook of the same task gets everything meanwhile.
    created = await rpc(
        "CreateTaskPushNotificationConfig",
        {"taskId": held["id"], "id": "fast", "url": receiver.url(fast)},
        v1=True,
    )
    assert "result" in created, created
    await wait_for(lambda: len(receiver.accepted(fast)) == 1)
    assert receiver.accepted(fast)[0].body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # So does another task's webhook, and that task's stream ends as usual.
    params = {**msg10("chunks 3"), "configuration": webhook10(receiver, other)}
    r = await rpc.client.post("/", json=rpc.body("SendStreamingMessage", params), headers=V1)
    states = [line for line in r.text.splitlines() if "TASK_STATE_COMPLETED" in line]
    assert r.status_code == 200 and len(states) == 1
    streamed_id = states[0].split('"taskId":"')[1].split('"')[0]
    count = 1 + len(await logged(rpc, streamed_id))
    await wait_for(lambda: len(receiver.accepted(other)) == count)
    assert [r.seq for r in receiver.accepted(other)] == list(range(count))
    # All this while, the slow webhook had one request, still unanswered.
    assert [(r.seq, r.status) for r in receiver.received(slow)] == [(0, 0)]
    receiver.release(slow)
    count = 1 + len(await logged(rpc, held["id"]))
    await wait_for(lambda: len(receiver.accepted(slow)) == count)
    assert [r.seq for r in receiver.received(slow)] == list(range(count))


async def test_a_webhook_set_on_a_waiting_task_gets_it_then_every_later_event(
    rpc: AppRpc, receiver: Receiver
) -> None:
    hook, follow = name(), name()
    task = await send10(rpc, "input which one?", {})
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    params = {"taskId": task["id"], "url": receiver.url(hook)}
    assert "result" in await rpc("CreateTaskPushNotificationConfig", params, v1=True)
    # The follow-up names a webhook of its own too: it starts from the task as it is.
    done = await send10(
        rpc, "the blue one", webhook10(receiver, follow, id="follow"), taskId=task["id"]
    )
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    count = len(await logged(rpc, task["id"]))
    await wait_for(lambda: len(receiver.accepted(hook)) == 4)
    got = [r.body for r in receiver.accepted(hook)]
    assert got[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [next(iter(b.values()))["status"]["state"] for b in (got[1], got[3])] == [
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert "artifactUpdate" in got[2]
    assert [r.seq for r in receiver.accepted(hook)] == list(range(count - 3, count + 1))
    await wait_for(lambda: len(receiver.accepted(follow)) == 4)
    assert [r.body for r in receiver.accepted(follow)][1:] == got[1:]
    # Set before the follow-up's own events: the task it got was still waiting.
    assert receiver.accepted(follow)[0].body == got[0]


async def test_deleting_a_webhook_drops_what_it_had_not_delivered(
    rpc: AppRpc, receiver: Receiver
) -> None:
    hook = name()
    receiver.rule(hook, hold=True)
    task = await send10(rpc, "chunks 3", webhook10(receiver, hook, id="gone"))
    await wait_for(lambda: len(receiver.received(hook)) == 1)
    params = {"taskId": task["id"], "id": "gone"}
    assert (await rpc("DeleteTaskPushNotificationConfig", params, v1=True))["result"] == {}
    receiver.release(hook)
    await wait_for(lambda: receiver.received(hook)[0].status == 200)
    listed = await rpc("ListTaskPushNotificationConfigs", {"taskId": task["id"]}, v1=True)
    assert listed["result"] == {"configs": []}
    # Nothing more comes: a webhook set now gets the task, and nothing reaches "gone".
    again = name()
    await rpc(
        "CreateTaskPushNotificationConfig",
        {"taskId": task["id"], "url": receiver.url(again)},
        v1=True,
    )
    await wait_for(lambda: len(receiver.accepted(again)) == 1)
    assert len(receiver.received(hook)) == 1


async def test_a_webhook_that_resolves_to_a_private_address_is_refused_at_delivery(
    receiver: Receiver,
) -> None:
    # A server that allows only public webhooks, holding one whose name points at
    # loopback now (set when it pointed elsewhere, as after a DNS change).
    app = create_app(ScriptedAgent(), engine=EngineConfig(push_policy=FAST))
    async for rpc in started(app):
        hook = name()
        task = await send10(rpc, "echo x", {})
        assert app.engine.push is not None
        config = TaskPushNotificationConfig(url=receiver.url(hook, host="localhost"), id="w")
        await app.engine.push.set(task["id"], Webhook(config, "1.0"))
        delivery = await settled(rpc, task["id"], "w")
        assert delivery["deadLettered"] == 1 and delivery["delivered"] == 0
        assert "localhost resolves to" in delivery["lastError"]
        assert "not a public address" in delivery["lastError"]
        assert receiver.received(hook) == []


@pytest.mark.parametrize(
    ("policy", "named"),
    [({"max_attempts": 0}, "max_attempts"), ({"store_calls": 0}, "store_calls")],
)
def test_a_push_policy_below_one_attempt_or_store_call_is_refused_naming_it(
    policy: dict[str, int], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        PushPolicy(**policy)  # type: ignore[arg-type]
