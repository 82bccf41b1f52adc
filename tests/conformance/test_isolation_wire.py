"""Isolation at the wire, with real API keys: for each operation, in A2A 1.0 and
0.3 over JSON-RPC (and 1.0 over HTTP+JSON), Ann's task is invisible to Bob (the
same answer as a task that does not exist), an operator of their tenant sees
both, and a caller may use only its own tenants."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.engine.config import EngineConfig
from a2ad.server import auth
from a2ad.server.auth import ApiKeys, CredentialAuthenticator

from ..conftest import Rpc
from ..scripted import ScriptedAgent
from .dialects import V03, V10, WireDialect, result_of

HOOK = "https://hooks.example.com/a2a"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    made = {
        "ann": auth.add_key(str(path), "ann", tenants=["acme"]),
        "bob": auth.add_key(str(path), "bob", tenants=["acme", "acme-eu"]),
        "olga": auth.add_key(str(path), "olga", tenants=["acme"], roles=["operator"]),
        "gus": auth.add_key(str(path), "gus", tenants=["globex"], roles=["operator"]),
    }
    return path, made


class Callers:
    """One JSON-RPC client per principal, each sending its own key."""

    def __init__(self, clients: dict[str, httpx.AsyncClient]) -> None:
        self.clients = clients
        self.rpc = {name: Rpc(client) for name, client in clients.items()}


@pytest.fixture
async def callers(keys: tuple[Path, dict[str, str]]) -> AsyncIterator[Callers]:
    path, made = keys
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(str(path)))
    app = create_app(
        ScriptedAgent(), authenticator=authenticator, engine=EngineConfig(shutdown_grace=0)
    )
    transport = httpx.ASGITransport(app=app)
    clients = {
        name: httpx.AsyncClient(
            transport=transport,
            base_url="http://a2ad.test",
            headers={"Authorization": f"Bearer {key}"},
        )
        for name, key in made.items()
    }
    yield Callers(clients)
    for client in clients.values():
        await client.aclose()
    await app.aclose()


@pytest.fixture(params=[V10, V03], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> WireDialect:
    return request.param  # type: ignore[no-any-return]


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "error" in body, body
    return body["error"]  # type: ignore[no-any-return]


async def test_anns_task_is_to_bob_exactly_a_missing_task_for_every_operation(
    callers: Callers, d: WireDialect
) -> None:
    ann, bob = callers.rpc["ann"], callers.rpc["bob"]
    asked = await d.send_task(ann, "input which one?")
    missing = str(uuid.uuid4())
    stream_method = "SubscribeToTask" if d.v1 else "tasks/resubscribe"
    follow_up = d.message("blue")

    def calls(task_id: str) -> list[tuple[str, dict[str, Any]]]:
        push_get = (
            ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "h"})
            if d.v1
            else ("tasks/pushNotificationConfig/get", {"id": task_id})
        )
        push_set = (
            ("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK})
            if d.v1
            else (
                "tasks/pushNotificationConfig/set",
                {"taskId": task_id, "pushNotificationConfig": {"url": HOOK}},
            )
        )
        return [
            (d.method("get"), {"id": task_id}),
            (d.method("cancel"), {"id": task_id}),
            (stream_method, {"id": task_id}),
            (d.method("send"), {"message": {**follow_up, "taskId": task_id}}),
            push_get,
            push_set,
        ]

    for (method, theirs), (_, nothing) in zip(calls(asked["id"]), calls(missing), strict=True):
        foreign = error_of(await bob(method, theirs, v1=d.v1))
        absent = error_of(await bob(method, nothing, v1=d.v1))
        assert foreign["code"] == absent["code"] == -32001, (method, foreign)
        assert foreign["message"] == absent["message"].replace(missing, asked["id"]), method
    # Untouched: Ann still reads it waiting for input, and can answer it.
    got = await d.get(ann, asked["id"])
    assert got["status"]["state"] == d.state("input-required")
    answered = await d.send_task(ann, {**follow_up, "taskId": asked["id"]})
    assert answered["status"]["state"] == d.state("completed")


async def test_listings_hold_the_callers_own_tasks_and_an_operator_sees_its_tenant(
    callers: Callers, d: WireDialect
) -> None:
    rpc = callers.rpc
    context = str(uuid.uuid4())
    anns = await d.send_task(rpc["ann"], d.message("echo a", contextId=context))
    # Bob reuses Ann's contextId: a conversation of his own under that id.
    bobs = await d.send_task(rpc["bob"], d.message("echo b", contextId=context))
    assert bobs["contextId"] == context and bobs["id"] != anns["id"]

    async def ids(who: str, **params: Any) -> set[str]:
        page = await d.list_tasks(rpc[who], **params)
        return {t["id"] for t in page["tasks"]}

    assert await ids("ann", contextId=context) == {anns["id"]}
    assert await ids("bob", contextId=context) == {bobs["id"]}
    assert anns["id"] not in await ids("bob")
    assert bobs["id"] not in await ids("ann", status=d.state("completed"))
    assert await ids("olga", contextId=context) == {anns["id"], bobs["id"]}
    assert await ids("gus", contextId=context) == set()
    page = await d.list_tasks(rpc["ann"], contextId=context)
    assert page["totalSize"] == 1
    # Each sees its own task's history only.
    assert d.texts((await d.get(rpc["ann"], anns["id"]))["history"][0]) == ["echo a"]


async def test_an_operator_cancels_a_task_of_its_tenant_and_another_tenants_cannot(
    callers: Callers, d: WireDialect
) -> None:
    rpc = callers.rpc
    hanging = await d.send_task(rpc["bob"], "hang", configuration=d.return_immediately)
    refused = error_of(await d.call(rpc["gus"], "cancel", {"id": hanging["id"]}))
    assert refused["code"] == -32001
    canceled = await d.cancel(rpc["olga"], hanging["id"])
    assert canceled["status"]["state"] == d.state("canceled")


async def test_a_tenant_not_the_callers_is_refused_and_its_own_are_separate(
    callers: Callers,
) -> None:
    rpc = callers.rpc
    body = await rpc["ann"](
        "SendMessage", {"message": V10.message("echo x"), "tenant": "globex"}, v1=True
    )
    error = error_of(body)
    assert error["code"] == -32600 and "'globex'" in error["message"]
    assert error["data"][0]["reason"] == "PERMISSION_DENIED"
    # Bob has two tenants: a task in acme-eu is not listed in acme (his default).
    eu = result_of(
        await rpc["bob"](
            "SendMessage", {"message": V10.message("echo eu"), "tenant": "acme-eu"}, v1=True
        )
    )["task"]
    acme = await V10.list_tasks(rpc["bob"])
    assert eu["id"] not in {t["id"] for t in acme["tasks"]}
    in_eu = await V10.list_tasks(rpc["bob"], tenant="acme-eu")
    assert [t["id"] for t in in_eu["tasks"]] == [eu["id"]]


async def test_rest_keeps_tasks_apart_and_refuses_a_foreign_tenant_with_403(
    callers: Callers,
) -> None:
    ann, bob = callers.clients["ann"], callers.clients["bob"]
    v1 = {"A2A-Version": "1.0"}
    sent = await ann.post("/message:send", json={"message": V10.message("echo r")}, headers=v1)
    task_id = sent.json()["task"]["id"]
    assert (await ann.get(f"/tasks/{task_id}", headers=v1)).status_code == 200
    foreign = await bob.get(f"/tasks/{task_id}", headers=v1)
    absent = await bob.get(f"/tasks/{uuid.uuid4()}", headers=v1)
    assert foreign.status_code == absent.status_code == 404
    assert foreign.json()["error"]["status"] == absent.json()["error"]["status"]
    elsewhere = await ann.get("/globex/tasks", headers=v1)
    assert elsewhere.status_code == 403
    assert elsewhere.json()["error"]["status"] == "PERMISSION_DENIED"
    assert elsewhere.json()["error"]["details"][0]["reason"] == "PERMISSION_DENIED"
    mine = await ann.get("/acme/tasks", headers=v1)
    assert task_id in {t["id"] for t in mine.json()["tasks"]}


async def test_a_follow_up_to_anns_task_cannot_leave_bobs_webhook_on_it(
    keys: tuple[Path, dict[str, str]],
) -> None:
    path, made = keys
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(str(path)))
    app = create_app(
        ScriptedAgent(),
        authenticator=authenticator,
        engine=EngineConfig(allow_private_webhooks=True, shutdown_grace=0),
    )
    transport = httpx.ASGITransport(app=app)

    def client(who: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {made[who]}"}
        return httpx.AsyncClient(transport=transport, base_url="http://a2ad.test", headers=headers)

    try:
        async with client("ann") as ann_http, client("bob") as bob_http:
            ann, bob = Rpc(ann_http), Rpc(bob_http)
            asked = await V10.send_task(ann, "input which one?")
            webhook = {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/bobs"}}
            message = {**V10.message("blue"), "taskId": asked["id"]}
            body = await bob("SendMessage", {"message": message, "configuration": webhook}, v1=True)
            assert error_of(body)["code"] == -32001
            listed = await ann("ListTaskPushNotificationConfigs", {"taskId": asked["id"]}, v1=True)
            assert result_of(listed)["configs"] == []
    finally:
        await app.aclose()
