"""A2A 1.0 on the wire (A2A-Version: 1.0): every result is parsed strictly into the
official protobuf types (see oracles.parse_v1)."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import ListTasksResponse, SendMessageResponse, Task, TaskState

from ..conftest import V1, Rpc, msg10
from .oracles import assert_error, parse_v1

TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_FAILED",
    "TASK_STATE_REJECTED",
}


def result_of(body: dict[str, Any]) -> Any:
    assert "error" not in body, f"unexpected error: {json.dumps(body)[:800]}"
    assert body.get("jsonrpc") == "2.0"
    return body["result"]


def message(text: str, **extra: Any) -> dict[str, Any]:
    return msg10(text, **extra)["message"]  # type: ignore[no-any-return]


async def send(
    rpc: Rpc, text: str | None = None, *, msg: dict[str, Any] | None = None, **params: Any
) -> dict[str, Any]:
    """SendMessage; returns the SendMessageResponse JSON after a strict parse."""
    p = {"message": msg if msg is not None else message(text or "echo")}
    p.update(params)
    result = result_of(await rpc("SendMessage", p, v1=True))
    parse_v1(result, SendMessageResponse)
    return result  # type: ignore[no-any-return]


async def send_task(rpc: Rpc, text: str | None = None, **kw: Any) -> dict[str, Any]:
    result = await send(rpc, text, **kw)
    assert set(result) == {"task"}, result
    return result["task"]  # type: ignore[no-any-return]


async def get(rpc: Rpc, task_id: str, **params: Any) -> dict[str, Any]:
    task = result_of(await rpc("GetTask", {"id": task_id, **params}, v1=True))
    parse_v1(task, Task)
    return task  # type: ignore[no-any-return]


async def cancel(rpc: Rpc, task_id: str) -> dict[str, Any]:
    task = result_of(await rpc("CancelTask", {"id": task_id}, v1=True))
    parse_v1(task, Task)
    return task  # type: ignore[no-any-return]


async def list_tasks(rpc: Rpc, **params: Any) -> dict[str, Any]:
    page = result_of(await rpc("ListTasks", params, v1=True))
    parse_v1(page, ListTasksResponse)
    return page  # type: ignore[no-any-return]


def texts(msg: dict[str, Any]) -> list[str]:
    return [p["text"] for p in msg["parts"] if "text" in p]


async def post(
    client: httpx.AsyncClient,
    method: str,
    params: Any,
    *,
    path: str = "/",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": "x1", "method": method, "params": params}
    r = await client.post(path, json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


# --- SendMessage, GetTask, CancelTask ---


async def test_send_message_returns_completed_task_with_artifact_and_history(rpc: Rpc) -> None:
    sent = message("echo hello world")
    result = await send(rpc, msg=sent)
    proto = parse_v1(result, SendMessageResponse)
    assert proto.WhichOneof("payload") == "task"
    task = result["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert proto.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [p for a in task["artifacts"] for p in a["parts"]] == [{"text": "hello world"}]
    first = task["history"][0]
    assert first["messageId"] == sent["messageId"]
    assert first["role"] == "ROLE_USER"
    assert first["parts"] == [{"text": "echo hello world"}]
    assert first["taskId"] == task["id"] and first["contextId"] == task["contextId"]


async def test_get_task_returns_the_state_of_a_sent_task(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x")
    got = await get(rpc, task["id"])
    assert got["id"] == task["id"] and got["contextId"] == task["contextId"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_cancel_on_completed_task_is_refused_and_keeps_it_completed(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x")
    error = assert_error(
        await rpc("CancelTask", {"id": task["id"]}, v1=True), -32002, reason="TASK_NOT_CANCELABLE"
    )
    assert error["message"] == "Task not cancelable: already completed"
    assert (await get(rpc, task["id"]))["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_get_unknown_task_is_task_not_found_naming_the_id(rpc: Rpc) -> None:
    missing = str(uuid.uuid4())
    error = assert_error(
        await rpc("GetTask", {"id": missing}, v1=True), -32001, reason="TASK_NOT_FOUND"
    )
    assert error["message"] == f"Task not found: {missing}"


async def test_cancel_unknown_task_is_task_not_found(rpc: Rpc) -> None:
    missing = str(uuid.uuid4())
    error = assert_error(await rpc("CancelTask", {"id": missing}, v1=True), -32001)
    assert missing in error["message"]


async def test_return_immediately_gives_a_non_terminal_task_that_can_be_canceled(rpc: Rpc) -> None:
    result = await asyncio.wait_for(
        send(rpc, "hang x", configuration={"returnImmediately": True}), timeout=5
    )
    task = result["task"]
    assert task["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
    canceled = await cancel(rpc, task["id"])
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await get(rpc, task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"


async def test_reply_returns_a_message_and_stores_no_task(rpc: Rpc) -> None:
    await send_task(rpc, "echo before")
    before = (await list_tasks(rpc))["totalSize"]
    result = await send(rpc, "reply hi")
    assert set(result) == {"message"}, result
    msg = result["message"]
    assert msg["role"] == "ROLE_AGENT"
    assert msg["parts"] == [{"text": "hi"}]
    assert "taskId" not in msg
    assert (await list_tasks(rpc))["totalSize"] == before


# --- version negotiation ---


async def test_send_message_without_version_header_is_version_not_supported_naming_the_header(
    client: httpx.AsyncClient,
) -> None:
    body = await post(client, "SendMessage", msg10("echo x"))
    error = assert_error(body, -32009, reason="VERSION_NOT_SUPPORTED")
    assert "A2A-Version: 1.0" in error["message"]


async def test_patch_version_in_header_is_ignored(client: httpx.AsyncClient) -> None:
    body = await post(client, "SendMessage", msg10("echo x"), headers={"A2A-Version": "1.0.3"})
    result = result_of(body)
    parse_v1(result, SendMessageResponse)
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_version_as_query_parameter_selects_1_0(client: httpx.AsyncClient) -> None:
    body = await post(client, "SendMessage", msg10("echo x"), path="/?A2A-Version=1.0")
    result = result_of(body)
    parse_v1(result, SendMessageResponse)
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_unsupported_major_version_is_version_not_supported(
    client: httpx.AsyncClient,
) -> None:
    body = await post(client, "SendMessage", msg10("echo x"), headers={"A2A-Version": "2.0"})
    error = assert_error(body, -32009, reason="VERSION_NOT_SUPPORTED")
    assert "2.0" in error["message"]


async def test_0_3_method_under_1_0_header_is_version_not_supported(
    client: httpx.AsyncClient,
) -> None:
    body = await post(
        client, "message/send", {"message": {"role": "user", "parts": [{"text": "x"}]}}, headers=V1
    )
    assert_error(body, -32009, reason="VERSION_NOT_SUPPORTED")


async def test_unknown_method_under_1_0_is_method_not_found(rpc: Rpc) -> None:
    assert_error(await rpc("FrobnicateTask", {}, v1=True), -32601)


# --- follow-ups ---


async def test_follow_up_with_task_id_continues_an_input_required_task(rpc: Rpc) -> None:
    first = await send_task(rpc, "input which colour?")
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert texts(first["status"]["message"]) == ["which colour?"]
    follow = await send_task(
        rpc, msg=message("blue", taskId=first["id"], contextId=first["contextId"])
    )
    assert follow["id"] == first["id"]
    assert follow["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [texts(m) for m in follow["history"] if m["role"] == "ROLE_USER"] == [
        ["input which colour?"],
        ["blue"],
    ]


async def test_follow_up_with_only_task_id_infers_the_context_id(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    follow = await send_task(rpc, msg=message("a", taskId=first["id"]))
    assert follow["contextId"] == first["contextId"]
    assert follow["history"][-1]["contextId"] == first["contextId"]


async def test_follow_up_with_mismatched_context_id_is_invalid_params(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    body = await rpc(
        "SendMessage", {"message": message("a", taskId=first["id"], contextId="other")}, v1=True
    )
    assert_error(body, -32602)
    assert (await get(rpc, first["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_message_to_a_terminal_task_is_unsupported_operation(rpc: Rpc) -> None:
    done = await send_task(rpc, "echo x")
    body = await rpc("SendMessage", {"message": message("more", taskId=done["id"])}, v1=True)
    assert_error(body, -32004, reason="UNSUPPORTED_OPERATION")
    assert (await get(rpc, done["id"]))["history"] == done["history"]


async def test_message_to_an_unknown_task_is_task_not_found(rpc: Rpc) -> None:
    missing = str(uuid.uuid4())
    body = await rpc("SendMessage", {"message": message("more", taskId=missing)}, v1=True)
    error = assert_error(body, -32001)
    assert missing in error["message"]


async def test_messages_sharing_a_context_id_make_tasks_listed_together(rpc: Rpc) -> None:
    context = f"ctx-{uuid.uuid4()}"
    a = await send_task(rpc, msg=message("echo a", contextId=context))
    b = await send_task(rpc, msg=message("echo b", contextId=context))
    await send_task(rpc, "echo elsewhere")
    assert a["id"] != b["id"] and a["contextId"] == b["contextId"] == context
    page = await list_tasks(rpc, contextId=context)
    assert sorted(t["id"] for t in page["tasks"]) == sorted([a["id"], b["id"]])
    assert page["totalSize"] == 2


# --- historyLength ---


async def _two_turn_task(rpc: Rpc) -> dict[str, Any]:
    first = await send_task(rpc, "input q?")
    await send_task(rpc, msg=message("answer", taskId=first["id"]))
    full = await get(rpc, first["id"])
    assert len(full["history"]) >= 3
    return full


async def test_history_length_zero_on_send_omits_history(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x", configuration={"historyLength": 0})
    assert "history" not in task


async def test_history_length_n_on_send_returns_the_n_newest(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    follow = await send_task(
        rpc, msg=message("answer", taskId=first["id"]), configuration={"historyLength": 2}
    )
    full = await get(rpc, first["id"])
    assert follow["history"] == full["history"][-2:]


async def test_history_length_on_get(rpc: Rpc) -> None:
    full = await _two_turn_task(rpc)
    assert "history" not in await get(rpc, full["id"], historyLength=0)
    assert (await get(rpc, full["id"], historyLength=1))["history"] == full["history"][-1:]
    assert (await get(rpc, full["id"], historyLength=3))["history"] == full["history"][-3:]


async def test_history_length_on_list(rpc: Rpc) -> None:
    full = await _two_turn_task(rpc)
    page = await list_tasks(rpc, contextId=full["contextId"], historyLength=0)
    assert "history" not in page["tasks"][0]
    page = await list_tasks(rpc, contextId=full["contextId"], historyLength=2)
    assert page["tasks"][0]["history"] == full["history"][-2:]


async def test_negative_history_length_is_invalid_params(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x")
    error = assert_error(
        await rpc("GetTask", {"id": task["id"], "historyLength": -1}, v1=True), -32602
    )
    assert "historyLength" in error["message"]


# --- parts and states ---


async def test_parts_of_every_kind_round_trip_into_history_exactly(rpc: Rpc) -> None:
    parts = [
        {"text": "echo mixed"},
        {
            "raw": base64.b64encode(b"\x00\xffbin").decode(),
            "filename": "b.bin",
            "mediaType": "application/octet-stream",
        },
        {
            "url": "https://example.com/doc.pdf",
            "filename": "doc.pdf",
            "mediaType": "application/pdf",
        },
        {"data": {"k": [1, "two"], "nested": {"ok": True}}},
        {"data": [1, 2, 3]},
        {"text": "with metadata", "metadata": {"source": "test"}},
    ]
    task = await send_task(
        rpc, msg={"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    )
    assert task["history"][0]["parts"] == parts
    assert (await get(rpc, task["id"]))["history"][0]["parts"] == parts


async def test_agent_output_of_every_part_kind_parses_as_1_0(rpc: Rpc) -> None:
    task = await send_task(rpc, "parts")
    by_name = {a["name"]: a["parts"] for a in task["artifacts"]}
    assert by_name["text"] == [{"text": "plain text"}]
    assert by_name["data"] == [{"data": {"n": 1, "xs": [1, 2]}}]
    assert by_name["raw"] == [
        {
            "raw": base64.b64encode(b"\x00\x01bytes").decode(),
            "filename": "b.bin",
            "mediaType": "application/octet-stream",
        }
    ]
    assert by_name["url"] == [
        {"url": "https://example.com/f.pdf", "filename": "f.pdf", "mediaType": "application/pdf"}
    ]
    assert by_name["multi"] == [{"text": "a"}, {"text": "b"}]
    proto = parse_v1(task, Task)
    raw_part = next(a for a in proto.artifacts if a.name == "raw").parts[0]
    assert raw_part.raw == b"\x00\x01bytes"


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("input which?", "TASK_STATE_INPUT_REQUIRED"),
        ("auth", "TASK_STATE_AUTH_REQUIRED"),
        ("fail", "TASK_STATE_FAILED"),
        ("reject", "TASK_STATE_REJECTED"),
        ("raise", "TASK_STATE_FAILED"),
    ],
)
async def test_states_use_1_0_enum_names(rpc: Rpc, text: str, state: str) -> None:
    task = await send_task(rpc, text)
    assert task["status"]["state"] == state
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert (await get(rpc, task["id"]))["status"]["state"] == state


async def test_status_timestamps_are_utc_with_milliseconds(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x")
    stamp = task["status"]["timestamp"]
    assert len(stamp) == len("2026-11-30T10:00:00.123Z") and stamp.endswith("Z"), stamp


# --- ListTasks ---


async def test_list_tasks_page_size_defaults_to_50(rpc: Rpc) -> None:
    await send_task(rpc, "echo x")
    page = await list_tasks(rpc)
    assert page["pageSize"] == 50
    assert page["totalSize"] == 1 and len(page["tasks"]) == 1
    assert page["nextPageToken"] == ""


@pytest.mark.parametrize("size", [0, 101, -1])
async def test_list_tasks_page_size_out_of_range_is_invalid_params_naming_it(
    rpc: Rpc, size: int
) -> None:
    error = assert_error(await rpc("ListTasks", {"pageSize": size}, v1=True), -32602)
    assert "pageSize" in error["message"]


async def test_list_tasks_omits_artifacts_unless_asked(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo has an artifact")
    assert task["artifacts"]
    page = await list_tasks(rpc)
    assert all("artifacts" not in t for t in page["tasks"]), page
    page = await list_tasks(rpc, includeArtifacts=False)
    assert all("artifacts" not in t for t in page["tasks"]), page
    page = await list_tasks(rpc, includeArtifacts=True)
    assert page["tasks"][0]["artifacts"] == task["artifacts"]


async def test_list_tasks_pages_with_cursor_and_empty_token_on_last_page(rpc: Rpc) -> None:
    ids = [(await send_task(rpc, f"echo {i}"))["id"] for i in range(5)]
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        params: dict[str, Any] = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        page = await list_tasks(rpc, **params)
        pages += 1
        assert page["pageSize"] == 2 and page["totalSize"] == 5
        assert len(page["tasks"]) <= 2
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
        assert pages < 10
    assert pages == 3
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))


async def test_list_tasks_newest_status_first(rpc: Rpc) -> None:
    older = await send_task(rpc, "echo old")
    await asyncio.sleep(0.01)
    newer = await send_task(rpc, "echo new")
    page = await list_tasks(rpc)
    assert [t["id"] for t in page["tasks"]] == [newer["id"], older["id"]]


async def test_list_tasks_bad_page_token_is_invalid_params(rpc: Rpc) -> None:
    await send_task(rpc, "echo x")
    error = assert_error(await rpc("ListTasks", {"pageToken": "not-a-token!"}, v1=True), -32602)
    assert "pageToken" in error["message"]


@pytest.mark.parametrize(
    ("spelling", "wanted"),
    [
        ("TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"),
        ("completed", "TASK_STATE_COMPLETED"),
        ("cancelled", "TASK_STATE_CANCELED"),
        ("TASK_STATE_CANCELED", "TASK_STATE_CANCELED"),
        ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED"),
    ],
)
async def test_list_tasks_filters_by_status(rpc: Rpc, spelling: str, wanted: str) -> None:
    done = await send_task(rpc, "echo x")
    asking = await send_task(rpc, "input q?")
    hanging = (await send(rpc, "hang", configuration={"returnImmediately": True}))["task"]
    await cancel(rpc, hanging["id"])
    expected = {
        "TASK_STATE_COMPLETED": done,
        "TASK_STATE_CANCELED": hanging,
        "TASK_STATE_INPUT_REQUIRED": asking,
    }[wanted]
    page = await list_tasks(rpc, status=spelling)
    assert [t["id"] for t in page["tasks"]] == [expected["id"]]
    assert [t["status"]["state"] for t in page["tasks"]] == [wanted]
    assert page["totalSize"] == 1


async def test_list_tasks_unknown_status_is_invalid_params(rpc: Rpc) -> None:
    error = assert_error(await rpc("ListTasks", {"status": "TASK_STATE_SLEEPING"}, v1=True), -32602)
    assert "status" in error["message"]


async def test_list_tasks_status_timestamp_after_is_inclusive_lower_bound(rpc: Rpc) -> None:
    older = await send_task(rpc, "echo old")
    await asyncio.sleep(0.02)
    newer = await send_task(rpc, "echo new")
    cut = newer["status"]["timestamp"]
    assert older["status"]["timestamp"] < cut
    page = await list_tasks(rpc, statusTimestampAfter=cut)
    assert [t["id"] for t in page["tasks"]] == [newer["id"]]
    assert page["totalSize"] == 1
    page = await list_tasks(rpc, statusTimestampAfter="2000-01-01T00:00:00Z")
    assert {t["id"] for t in page["tasks"]} == {older["id"], newer["id"]}
    page = await list_tasks(rpc, statusTimestampAfter="2999-01-01T00:00:00Z")
    assert page["tasks"] == [] and page["totalSize"] == 0 and page["nextPageToken"] == ""


async def test_list_tasks_bad_status_timestamp_is_invalid_params(rpc: Rpc) -> None:
    error = assert_error(
        await rpc("ListTasks", {"statusTimestampAfter": "yesterday"}, v1=True), -32602
    )
    assert "statusTimestampAfter" in error["message"]


# --- unsupported features ---


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("CreateTaskPushNotificationConfig", {"taskId": "t1", "url": "https://example.com/hook"}),
        ("GetTaskPushNotificationConfig", {"taskId": "t1", "id": "c1"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "t1"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "t1", "id": "c1"}),
    ],
)
async def test_push_notification_config_methods_are_not_supported(
    rpc: Rpc, method: str, params: dict[str, Any]
) -> None:
    assert_error(
        await rpc(method, params, v1=True), -32003, reason="PUSH_NOTIFICATION_NOT_SUPPORTED"
    )


async def test_get_extended_agent_card_is_unsupported_operation(rpc: Rpc) -> None:
    assert_error(
        await rpc("GetExtendedAgentCard", {}, v1=True), -32004, reason="UNSUPPORTED_OPERATION"
    )
