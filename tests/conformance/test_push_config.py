"""The four push-notification config methods, and a message that names a webhook,
on the wire in both dialects: shapes checked by the version's oracle, the
webhook guard refusing addresses that are not public, and the errors.

The server here runs no delivery (its engine is not started), so what is set
stays pending; delivery itself is tests/engine/test_push.py's.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.types import ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig

from a2ad import MemoryStore, TaskStore, create_app
from a2ad.server.extensions import PUSH_DELIVERY

from ..conftest import V1, Rpc
from ..scripted import ScriptedAgent
from .dialects import V03, V10, WireDialect, result_of
from .oracles import parse_v1, validate_03

# A public address: no name to resolve, so no DNS is needed to accept it.
HOOK = "https://93.184.215.14/hook"
METHODS = {
    "1.0": {
        "set": "CreateTaskPushNotificationConfig",
        "get": "GetTaskPushNotificationConfig",
        "list": "ListTaskPushNotificationConfigs",
        "delete": "DeleteTaskPushNotificationConfig",
    },
    "0.3": {
        "set": "tasks/pushNotificationConfig/set",
        "get": "tasks/pushNotificationConfig/get",
        "list": "tasks/pushNotificationConfig/list",
        "delete": "tasks/pushNotificationConfig/delete",
    },
}


@pytest.fixture(params=[V10, V03], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> WireDialect:
    return request.param  # type: ignore[no-any-return]


def set_params(
    d: WireDialect,
    task_id: str,
    url: str = HOOK,
    *,
    scheme: str | None = None,
    credentials: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Set params in ``d``'s shape; ``fields`` are id and token."""
    config: dict[str, Any] = {"url": url, **fields}
    if scheme is not None:
        auth: dict[str, Any] = {"scheme": scheme} if d.v1 else {"schemes": [scheme]}
        if credentials is not None:
            auth["credentials"] = credentials
        config["authentication"] = auth
    if d.v1:
        return {"taskId": task_id, **config}
    return {"taskId": task_id, "pushNotificationConfig": config}


def flat(d: WireDialect, config: dict[str, Any]) -> dict[str, Any]:
    """A config answer, checked by the version's oracle, as one dict to compare
    across versions: id, taskId, url, token, scheme, credentials (those present)."""
    assert "a2adDelivery" not in config  # only for requests that activate the extension
    if d.v1:
        parse_v1(config, TaskPushNotificationConfig)
        out = {k: v for k, v in config.items() if k != "authentication"}
        auth = config.get("authentication", {})
    else:
        validate_03(config, "TaskPushNotificationConfig")
        assert set(config) == {"taskId", "pushNotificationConfig"}, config
        inner = config["pushNotificationConfig"]
        out = {
            "taskId": config["taskId"],
            **{k: v for k, v in inner.items() if k != "authentication"},
        }
        auth = dict(inner.get("authentication", {}))
        if auth:
            assert len(auth.pop("schemes")) == 1
            auth["scheme"] = inner["authentication"]["schemes"][0]
    return {**out, **auth}


async def call(rpc: Rpc, d: WireDialect, op: str, params: Any) -> dict[str, Any]:
    return await rpc(METHODS[d.version][op], params, v1=d.v1)


async def create(rpc: Rpc, d: WireDialect, task_id: str, url: str = HOOK, **fields: Any) -> Any:
    body = await call(rpc, d, "set", set_params(d, task_id, url, **fields))
    if not d.v1:
        validate_03(body, "SetTaskPushNotificationConfigSuccessResponse")
    return flat(d, result_of(body))


def get_params(d: WireDialect, task_id: str, config_id: str | None) -> dict[str, Any]:
    if d.v1:
        return {"taskId": task_id, "id": config_id}
    return {"id": task_id, **({"pushNotificationConfigId": config_id} if config_id else {})}


async def get(rpc: Rpc, d: WireDialect, task_id: str, config_id: str | None) -> dict[str, Any]:
    body = await call(rpc, d, "get", get_params(d, task_id, config_id))
    if not d.v1:
        validate_03(body, "GetTaskPushNotificationConfigSuccessResponse")
    return result_of(body)  # type: ignore[no-any-return]


async def listed(rpc: Rpc, d: WireDialect, task_id: str, **params: Any) -> Any:
    body = await call(rpc, d, "list", {"taskId": task_id, **params} if d.v1 else {"id": task_id})
    result = result_of(body)
    if d.v1:
        parse_v1(result, ListTaskPushNotificationConfigsResponse)
        return result
    validate_03(body, "ListTaskPushNotificationConfigSuccessResponse")
    return result


def configs_of(d: WireDialect, result: Any) -> list[dict[str, Any]]:
    return result["configs"] if d.v1 else result  # type: ignore[no-any-return]


async def test_a_config_set_is_answered_and_read_back_as_it_was_set_but_its_secrets_masked(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "echo x")
    credentials = "s3cret-credential-value"  # 12 characters or more: the last 4 are shown
    created = await create(
        rpc, d, task["id"], id="c1", token="tok", scheme="Bearer", credentials=credentials
    )
    expected = {
        "id": "c1",
        "taskId": task["id"],
        "url": HOOK,
        "token": "****",
        "scheme": "Bearer",
        "credentials": "****alue",
    }
    assert created == expected
    got = await get(rpc, d, task["id"], "c1")
    assert flat(d, got) == expected
    (only,) = configs_of(d, await listed(rpc, d, task["id"]))
    assert flat(d, only) == expected


async def test_the_delivery_status_comes_to_requests_that_activate_its_extension(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "echo hi")
    await create(rpc, d, task["id"], id="c1")
    asked = {"A2A-Extensions": PUSH_DELIVERY.uri}
    got = await rpc(
        METHODS[d.version]["get"], get_params(d, task["id"], "c1"), v1=d.v1, headers=asked
    )
    # Nothing delivered yet (this server runs no delivery): the task itself waits.
    assert result_of(got)["a2adDelivery"] == {"pending": 1, "delivered": 0, "deadLettered": 0}
    params = {"taskId": task["id"]} if d.v1 else {"id": task["id"]}
    page = await rpc(METHODS[d.version]["list"], params, v1=d.v1, headers=asked)
    (only,) = configs_of(d, result_of(page))
    assert only["a2adDelivery"] == result_of(got)["a2adDelivery"]


async def test_a_config_without_an_id_gets_the_task_id_and_setting_it_again_replaces_it(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "echo x")
    first = await create(rpc, d, task["id"])
    assert first == {"id": task["id"], "taskId": task["id"], "url": HOOK}
    again = await create(rpc, d, task["id"], "https://93.184.215.14/other")
    assert again["id"] == task["id"]
    (only,) = configs_of(d, await listed(rpc, d, task["id"]))
    assert flat(d, only)["url"] == "https://93.184.215.14/other"


async def test_a_0_3_get_without_a_config_id_answers_the_first_config(rpc: Rpc) -> None:
    task = await V03.send_task(rpc, "echo x")
    await create(rpc, V03, task["id"], id="first")
    await create(rpc, V03, task["id"], "https://93.184.215.14/2", id="second")
    assert flat(V03, await get(rpc, V03, task["id"], None))["id"] == "first"
    assert flat(V03, await get(rpc, V03, task["id"], "second"))["id"] == "second"


async def test_configs_are_listed_oldest_first_a_page_at_a_time(rpc: Rpc) -> None:
    task = await V10.send_task(rpc, "echo x")
    for name in ("a", "b", "c"):
        await create(rpc, V10, task["id"], f"{HOOK}/{name}", id=name)
    page = await listed(rpc, V10, task["id"], pageSize=2)
    assert [c["id"] for c in page["configs"]] == ["a", "b"] and page["nextPageToken"]
    rest = await listed(rpc, V10, task["id"], pageSize=2, pageToken=page["nextPageToken"])
    assert [c["id"] for c in rest["configs"]] == ["c"] and "nextPageToken" not in rest
    everything = await listed(rpc, V10, task["id"])
    assert [c["id"] for c in everything["configs"]] == ["a", "b", "c"]
    body = await call(rpc, V10, "list", {"taskId": task["id"], "pageToken": "not ours"})
    V10.error(body, -32602, reason="INVALID_PARAMS")


async def test_delete_removes_the_config_and_deleting_it_again_succeeds(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "echo x")
    await create(rpc, d, task["id"], id="c1")
    params = (
        {"taskId": task["id"], "id": "c1"}
        if d.v1
        else {"id": task["id"], "pushNotificationConfigId": "c1"}
    )
    for _ in range(2):
        body = await call(rpc, d, "delete", params)
        if d.v1:
            assert result_of(body) == {}
        else:
            validate_03(body, "DeleteTaskPushNotificationConfigSuccessResponse")
            assert body["result"] is None
    assert configs_of(d, await listed(rpc, d, task["id"])) == []
    body = await call(rpc, d, "get", get_params(d, task["id"], "c1"))
    error = d.error(body, -32001, reason="TASK_NOT_FOUND")
    assert task["id"] in error["message"] and "c1" in error["message"]


@pytest.mark.parametrize("op", ["set", "get", "list", "delete"])
async def test_every_config_method_on_an_unknown_task_is_task_not_found(
    rpc: Rpc, d: WireDialect, op: str
) -> None:
    params = {
        "set": set_params(d, "no-such-task"),
        "get": get_params(d, "no-such-task", "c1"),
        "list": {"taskId": "no-such-task"} if d.v1 else {"id": "no-such-task"},
        "delete": get_params(d, "no-such-task", "c1"),
    }[op]
    error = d.error(await call(rpc, d, op, params), -32001, reason="TASK_NOT_FOUND")
    assert error["message"] == "Task not found: no-such-task"


async def test_a_task_takes_at_most_ten_configs(rpc: Rpc, d: WireDialect) -> None:
    task = await d.send_task(rpc, "echo x")
    for i in range(10):
        await create(rpc, d, task["id"], id=f"c{i}")
    body = await call(rpc, d, "set", set_params(d, task["id"], id="c10"))
    error = d.error(body, -32004, reason="UNSUPPORTED_OPERATION")
    assert "10" in error["message"] and task["id"] in error["message"]
    await create(rpc, d, task["id"], "https://93.184.215.14/new", id="c3")  # a replacement is fine
    assert len(configs_of(d, await listed(rpc, d, task["id"]))) == 10


async def test_a_config_set_in_one_version_is_read_in_the_other(rpc: Rpc) -> None:
    task = await V03.send_task(rpc, "echo x")
    set_03 = await create(rpc, V03, task["id"], id="c", token="t", scheme="Basic", credentials="x")
    assert flat(V10, await get(rpc, V10, task["id"], "c")) == set_03
    set_10 = await create(rpc, V10, task["id"], id="d", scheme="Bearer")
    assert flat(V03, await get(rpc, V03, task["id"], "d")) == set_10


NOT_PUBLIC = [
    ("http://127.0.0.1:8080/hook", "127.0.0.1"),
    ("http://10.0.0.1/hook", "10.0.0.1"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
    ("http://[::1]:9000/hook", "::1"),
    ("http://localhost:8080/hook", "localhost resolves to"),
    ("https://192.168.1.20/hook", "192.168.1.20"),
    ("http://172.16.5.5/hook", "172.16.5.5"),
    ("http://[fd00::1]/hook", "fd00::1"),
    ("http://[fe80::1]/hook", "fe80::1"),
    ("http://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1"),
    ("http://100.64.0.1/hook", "100.64.0.1"),
    ("http://0.0.0.0:80/hook", "0.0.0.0"),
    ("http://[::169.254.169.254]/hook", "::169.254.169.254"),
    ("http://[64:ff9b::a9fe:a9fe]/hook", "reaches 169.254.169.254"),
    ("http://[2002:7f00:1::]/hook", "reaches 127.0.0.1"),
    ("http://[fec0::1]/hook", "fec0::1"),
    ("http://192.0.0.8/hook", "192.0.0.8"),
]


@pytest.mark.parametrize(("url", "named"), NOT_PUBLIC)
async def test_a_webhook_that_is_not_public_is_refused_when_set(
    rpc: Rpc, d: WireDialect, url: str, named: str
) -> None:
    task = await d.send_task(rpc, "echo x")
    body = await call(rpc, d, "set", set_params(d, task["id"], url))
    error = d.error(body, -32602, reason="INVALID_PARAMS")
    assert named in error["message"] and "not a public address" in error["message"]
    assert "--allow-private-webhooks" in error["message"]
    field = "url" if d.v1 else "pushNotificationConfig.url"
    assert [v["field"] for v in error["data"][1]["fieldViolations"]] == [field]
    assert configs_of(d, await listed(rpc, d, task["id"])) == []


PUSH_IN_SEND = {"1.0": "taskPushNotificationConfig", "0.3": "pushNotificationConfig"}


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://localhost/hook"])
async def test_a_message_naming_a_webhook_that_is_not_public_is_refused_and_starts_nothing(
    rpc: Rpc, d: WireDialect, streaming: bool, url: str
) -> None:
    field = f"configuration.{PUSH_IN_SEND[d.version]}.url"
    config = {PUSH_IN_SEND[d.version]: {"url": url}}
    method = d.method("send")
    if streaming:
        method = "SendStreamingMessage" if d.v1 else "message/stream"
    body = await rpc(method, {"message": d.message("echo x"), "configuration": config}, v1=d.v1)
    error = d.error(body, -32602, reason="INVALID_PARAMS")
    assert "not a public address" in error["message"]
    assert [v["field"] for v in error["data"][1]["fieldViolations"]] == [field]
    assert (await d.list_tasks(rpc))["totalSize"] == 0  # nothing was started


async def test_a_message_naming_a_webhook_sets_it_on_its_task(rpc: Rpc, d: WireDialect) -> None:
    config = {PUSH_IN_SEND[d.version]: {"url": HOOK, "token": "tok-value-123"}}
    task = await d.send_task(rpc, "echo x", configuration=config)
    (only,) = configs_of(d, await listed(rpc, d, task["id"]))
    assert flat(d, only) == {
        "id": task["id"],
        "taskId": task["id"],
        "url": HOOK,
        "token": "****-123",
    }


BAD_CONFIGS = [
    ({"url": "ftp://93.184.215.14/x"}, "url"),
    ({"url": "not a url"}, "url"),
    ({"url": "http:///no-host"}, "url"),
    ({"url": "https://user:pw@93.184.215.14/x"}, "url"),
    ({"url": "https://93.184.215.14:99999/x"}, "url"),
    ({"url": "https://93.184.215.14/" + "x" * 2048}, "url"),
    ({"url": HOOK, "token": "a\r\nX-Injected: 1"}, "token"),
    ({"url": HOOK, "token": "t" * 1025}, "token"),
    ({"url": HOOK, "scheme": "Bearer", "credentials": "c" * 4097}, "authentication.credentials"),
    ({"url": HOOK, "scheme": "Bearer", "credentials": "caf\u00e9"}, "authentication.credentials"),
    ({"url": HOOK, "scheme": "Bearer token"}, "authentication.scheme"),
]


@pytest.mark.parametrize(("fields", "where"), BAD_CONFIGS)
async def test_a_malformed_config_is_refused_naming_its_field(
    rpc: Rpc, d: WireDialect, fields: dict[str, Any], where: str
) -> None:
    task = await d.send_task(rpc, "echo x")
    fields = dict(fields)
    url = fields.pop("url")
    body = await call(rpc, d, "set", set_params(d, task["id"], url, **fields))
    error = d.error(body, -32602, reason="INVALID_PARAMS")
    if not d.v1:
        where = where.replace("authentication.scheme", "authentication.schemes[0]")
    field = where if d.v1 else f"pushNotificationConfig.{where}"
    named = [v["field"] for item in error["data"] for v in item.get("fieldViolations", [])]
    assert named == [field], error
    assert configs_of(d, await listed(rpc, d, task["id"])) == []


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("CreateTaskPushNotificationConfig", {"url": HOOK}, "taskId"),
        ("GetTaskPushNotificationConfig", {"taskId": "t1"}, "id"),
        ("DeleteTaskPushNotificationConfig", {"taskId": "t1"}, "id"),
        ("ListTaskPushNotificationConfigs", {}, "taskId"),
        ("tasks/pushNotificationConfig/set", {"taskId": "t1"}, "pushNotificationConfig"),
        ("tasks/pushNotificationConfig/delete", {"id": "t1"}, "pushNotificationConfigId"),
        ("tasks/pushNotificationConfig/list", {}, "id"),
    ],
)
async def test_a_config_request_missing_a_required_field_names_it(
    rpc: Rpc, method: str, params: dict[str, Any], field: str
) -> None:
    d = V10 if method[0].isupper() else V03
    error = d.error(await rpc(method, params, v1=d.v1), -32602, reason="INVALID_PARAMS")
    named = [v["field"] for item in error["data"] for v in item.get("fieldViolations", [])]
    assert named == [field], error


class TasksOnlyStore(TaskStore):
    """A store that keeps tasks but no webhooks, as a third-party backend might:
    the MemoryStore's task methods, without its ``Webhooks``."""

    def __init__(self) -> None:
        self.tasks = MemoryStore()

    async def write_new(self, new: Any) -> Any:
        return await self.tasks.create(new)

    async def get(self, task_id: str) -> Any:
        return await self.tasks.get(task_id)

    async def write_events(self, new: Any) -> Any:
        return await self.tasks.write_events(new)

    async def events(self, task_id: str, after_seq: int) -> Any:
        return await self.tasks.events(task_id, after_seq)

    async def find_message(self, message_key: bytes) -> str | None:
        return await self.tasks.find_message(message_key)

    async def list(self, query: Any) -> Any:
        return await self.tasks.list(query)

    async def aclose(self) -> None:
        await self.tasks.aclose()


async def test_a_store_without_webhooks_answers_push_not_supported(d: WireDialect) -> None:
    app = create_app(ScriptedAgent(), store=TasksOnlyStore())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
        rpc = Rpc(client)
        task = await d.send_task(rpc, "echo x")
        for op, params in (
            ("set", set_params(d, task["id"])),
            ("get", get_params(d, task["id"], "c1")),
            ("list", {"taskId": task["id"]} if d.v1 else {"id": task["id"]}),
            ("delete", get_params(d, task["id"], "c1")),
        ):
            body = await call(rpc, d, op, params)
            d.error(body, -32003, reason="PUSH_NOTIFICATION_NOT_SUPPORTED")
        config = {PUSH_IN_SEND[d.version]: {"url": HOOK}}
        body = await d.call(rpc, "send", {"message": d.message("echo x"), "configuration": config})
        error = d.error(body, -32003, reason="PUSH_NOTIFICATION_NOT_SUPPORTED")
        assert "stream or GetTask" in error["message"]
        assert (await d.list_tasks(rpc))["totalSize"] == 1  # only the first task
        # The card says so, and offers no extension about deliveries.
        card = (await client.get("/.well-known/agent-card.json", headers=V1 if d.v1 else {})).json()
        assert card["capabilities"]["pushNotifications"] is False
        assert not card["capabilities"].get("extensions")
    await app.aclose()
