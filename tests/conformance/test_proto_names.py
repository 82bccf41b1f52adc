"""A2A 1.0 params under the proto's field names (``message_id``) as well as their
JSON names (``messageId``), as ProtoJSON parsers accept them: every method, over
JSON-RPC and in REST bodies; free-form values (metadata, a data part's data) kept
exactly as sent; a field given under both names refused, naming both."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from a2a.types import SendMessageResponse, Task

from ..conftest import Rpc
from ..jsonrpc import rpc_body
from .dialects import V10, result_of
from .oracles import assert_error, assert_status, parse_v1

HOOK = "https://93.184.215.14/hook"  # public: accepted without DNS

Spell = Callable[[str], str]


def camel(name: str) -> str:
    return name


def snake(name: str) -> str:
    return re.sub("[A-Z]", lambda m: "_" + m.group().lower(), name)


SPELLINGS = pytest.mark.parametrize("key", [camel, snake], ids=["camel", "snake"])
BINDINGS = pytest.mark.parametrize("binding", ["jsonrpc", "rest"])

# Keys with underscores, and a JSON name beside its proto name, inside free-form values.
METADATA = {"trace_id": "t1", "message_id": "not a field", "messageId": "nor this"}
DATA = {"snake_key": {"inner_key": [1, {"deep_key": True}]}, "big": 2**70}


def send_params(key: Spell, text: str, context_id: str, **configuration: Any) -> dict[str, Any]:
    return {
        "message": {
            key("messageId"): str(uuid.uuid4()),
            "role": "ROLE_USER",
            key("contextId"): context_id,
            key("referenceTaskIds"): ["earlier-task"],
            "parts": [
                {"text": text, key("mediaType"): "text/plain", "metadata": METADATA},
                {"data": DATA},
            ],
            "metadata": METADATA,
        },
        "configuration": {key("acceptedOutputModes"): ["text/plain"], **configuration},
        "metadata": METADATA,
    }


async def send(
    client: httpx.AsyncClient, binding: str, params: dict[str, Any], method: str = "SendMessage"
) -> httpx.Response:
    if binding == "rest":
        return await client.post("/message:send", json=params)
    body = rpc_body(method, params)
    return await client.post("/", json=body, headers={"A2A-Version": "1.0"})


def sent_task(r: httpx.Response, binding: str) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    result = r.json() if binding == "rest" else result_of(r.json())
    parse_v1(result, SendMessageResponse)
    return result["task"]  # type: ignore[no-any-return]


def invalid_params(r: httpx.Response, binding: str) -> dict[str, Any]:
    """The error of an INVALID_PARAMS answer: message and its one field violation."""
    if binding == "rest":
        assert_status(400, r.json(), reason="INVALID_PARAMS")
        error = r.json()["error"]
        details = error["details"]
    else:
        error = assert_error(r.json(), -32602, reason="INVALID_PARAMS")
        details = error["data"]
    (violation,) = details[1]["fieldViolations"]
    return {"message": error["message"], "field": violation["field"]}


VARYING = frozenset({"id", "taskId", "contextId", "messageId", "artifactId", "timestamp"})


def comparable(value: Any) -> Any:
    """``value`` without what differs between two sends: ids and timestamps."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


@BINDINGS
async def test_a_send_in_proto_names_makes_the_task_a_send_in_json_names_makes(
    client: httpx.AsyncClient, binding: str
) -> None:
    tasks = []
    for key in (camel, snake):
        config = {key("historyLength"): 5, key("returnImmediately"): False}
        r = await send(
            client, binding, send_params(key, "echo hi", f"ctx-{key.__name__}", **config)
        )
        tasks.append(sent_task(r, binding))
    by_camel, by_snake = tasks
    assert by_snake["contextId"] == "ctx-snake"
    assert by_snake["status"]["state"] == "TASK_STATE_COMPLETED"
    first = by_snake["history"][0]
    assert first["referenceTaskIds"] == ["earlier-task"]
    assert first["parts"][0]["mediaType"] == "text/plain"
    assert comparable(by_snake) == comparable(by_camel)


@BINDINGS
async def test_free_form_keys_with_underscores_come_back_exactly_as_sent(
    client: httpx.AsyncClient, binding: str, rpc: Rpc
) -> None:
    task = sent_task(await send(client, binding, send_params(snake, "echo x", "c1")), binding)
    stored = result_of(await rpc("GetTask", {"id": task["id"]}, v1=True))
    for message in (task["history"][0], stored["history"][0]):
        assert message["metadata"] == METADATA
        assert message["parts"][0]["metadata"] == METADATA
        assert message["parts"][1]["data"] == DATA


@BINDINGS
async def test_return_immediately_in_its_proto_name_answers_before_the_agent_ends(
    client: httpx.AsyncClient, binding: str
) -> None:
    params = send_params(snake, "hang", "c1", return_immediately=True)
    task = sent_task(await send(client, binding, params), binding)
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


@BINDINGS
async def test_a_webhook_in_proto_names_is_set_on_the_task(
    client: httpx.AsyncClient, binding: str, rpc: Rpc
) -> None:
    hook = {"url": HOOK, "token": "tok", "authentication": {"scheme": "Bearer"}}
    params = send_params(snake, "echo x", "c1", task_push_notification_config=hook)
    task = sent_task(await send(client, binding, params), binding)
    listed = result_of(
        await rpc("ListTaskPushNotificationConfigs", {"task_id": task["id"]}, v1=True)
    )
    (config,) = listed["configs"]
    assert {k: config[k] for k in ("taskId", "url", "token", "authentication")} == {
        "taskId": task["id"],
        **hook,
        "token": "****",  # masked in every answer
    }


@SPELLINGS
async def test_get_task_reads_history_length_in_either_name(rpc: Rpc, key: Spell) -> None:
    task = await V10.send_task(rpc, "input which?")
    got = result_of(await rpc("GetTask", {"id": task["id"], key("historyLength"): 1}, v1=True))
    parse_v1(got, Task)
    assert len(got["history"]) == 1
    full = result_of(await rpc("GetTask", {"id": task["id"]}, v1=True))
    assert got["history"] == full["history"][-1:]


@SPELLINGS
async def test_list_tasks_reads_every_filter_in_either_name(rpc: Rpc, key: Spell) -> None:
    older = await V10.send_task(rpc, "echo a")
    newer = await V10.send_task(rpc, "echo b")
    context = older["contextId"]
    assert newer["contextId"] != context
    params = {
        key("contextId"): context,
        key("pageSize"): 1,
        key("statusTimestampAfter"): "2000-01-01T00:00:00Z",
        key("includeArtifacts"): True,
        key("historyLength"): 0,
    }
    page = await V10.list_tasks(rpc, **params)
    (task,) = page["tasks"]
    assert task["id"] == older["id"]
    assert task["artifacts"] and "history" not in task
    assert page["pageSize"] == 1


@BINDINGS
async def test_push_config_methods_read_proto_names(
    client: httpx.AsyncClient, binding: str, rpc: Rpc
) -> None:
    task = await V10.send_task(rpc, "echo x")
    config = {"id": "c1", "url": HOOK, "authentication": {"scheme": "Bearer", "credentials": "s"}}
    if binding == "rest":
        path = f"/tasks/{task['id']}/pushNotificationConfigs"
        r = await client.post(path, json={"task_id": task["id"], **config})
        assert r.status_code == 200, r.text
        created = r.json()
    else:
        params = {"task_id": task["id"], **config}
        created = result_of(await rpc("CreateTaskPushNotificationConfig", params, v1=True))
    assert created["taskId"] == task["id"] and created["authentication"]["credentials"] == "****"
    ids = {"task_id": task["id"], "id": "c1"}
    got = result_of(await rpc("GetTaskPushNotificationConfig", ids, v1=True))
    assert got["url"] == HOOK
    page = {"task_id": task["id"], "page_size": 1}
    assert (
        len(result_of(await rpc("ListTaskPushNotificationConfigs", page, v1=True))["configs"]) == 1
    )
    assert result_of(await rpc("DeleteTaskPushNotificationConfig", ids, v1=True)) == {}
    listed = result_of(
        await rpc("ListTaskPushNotificationConfigs", {"task_id": task["id"]}, v1=True)
    )
    assert listed["configs"] == []


async def test_a_rest_body_naming_another_task_than_the_path_in_proto_names_is_refused(
    client: httpx.AsyncClient, rpc: Rpc
) -> None:
    task = await V10.send_task(rpc, "echo x")
    path = f"/tasks/{task['id']}/pushNotificationConfigs"
    r = await client.post(path, json={"task_id": "another", "url": HOOK})
    error = invalid_params(r, "rest")
    assert error["field"] == "task_id" and "another" in error["message"]


@BINDINGS
async def test_a_field_under_both_its_names_is_refused_naming_both(
    client: httpx.AsyncClient, binding: str, rpc: Rpc
) -> None:
    params = send_params(camel, "echo x", "c1")
    params["message"]["message_id"] = "another"
    error = invalid_params(await send(client, binding, params), binding)
    assert "`message.messageId`" in error["message"]
    assert "`message.message_id`" in error["message"]
    assert error["field"] == "message.messageId"
    assert (await V10.list_tasks(rpc))["totalSize"] == 0  # nothing was started


@BINDINGS
async def test_an_invalid_field_in_its_proto_name_is_named_as_sent(
    client: httpx.AsyncClient, binding: str
) -> None:
    params = send_params(snake, "echo x", "c1")
    params["message"]["parts"][0]["media_type"] = 5
    error = invalid_params(await send(client, binding, params), binding)
    assert error["field"] == "message.parts[0].media_type"
    assert "`params.message.parts[0].media_type`" in error["message"]


async def test_a_missing_field_inside_a_proto_named_one_is_named_as_sent(rpc: Rpc) -> None:
    hook = {"token": "tok"}  # no url
    params = send_params(snake, "echo x", "c1", task_push_notification_config=hook)
    error = assert_error(await rpc("SendMessage", params, v1=True), -32602, reason="INVALID_PARAMS")
    (violation,) = error["data"][1]["fieldViolations"]
    assert violation["field"] == "configuration.task_push_notification_config.url"
