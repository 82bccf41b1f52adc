"""A2A 0.3 on the wire (no A2A-Version header): every result is checked against
the 0.3.0 JSON Schema, every error against JSONRPCErrorResponse."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import uuid
from typing import Any

import httpx
import pytest

from ..conftest import Rpc, msg03
from .oracles import assert_error, validate_03

TERMINAL_03 = {"completed", "canceled", "failed", "rejected"}


def result_of(body: dict[str, Any]) -> Any:
    assert "error" not in body, f"unexpected error: {json.dumps(body)[:800]}"
    assert body.get("jsonrpc") == "2.0"
    return body["result"]


async def send(
    rpc: Rpc, text: str | None = None, *, message: dict[str, Any] | None = None, **params: Any
) -> dict[str, Any]:
    """message/send; the result validated as a 0.3 SendMessageSuccessResponse."""
    p = msg03(text or "echo") if message is None else {"message": message}
    p.update(params)
    body = await rpc("message/send", p)
    validate_03(body, "SendMessageSuccessResponse")
    return result_of(body)  # type: ignore[no-any-return]


async def send_task(rpc: Rpc, text: str | None = None, **kw: Any) -> dict[str, Any]:
    result = await send(rpc, text, **kw)
    return validate_03(result, "Task")  # type: ignore[no-any-return]


async def get(rpc: Rpc, task_id: str, **params: Any) -> dict[str, Any]:
    body = await rpc("tasks/get", {"id": task_id, **params})
    validate_03(body, "GetTaskSuccessResponse")
    return validate_03(result_of(body), "Task")  # type: ignore[no-any-return]


async def list_tasks(rpc: Rpc, **params: Any) -> dict[str, Any]:
    page = result_of(await rpc("tasks/list", params))
    assert set(page) == {"tasks", "nextPageToken", "pageSize", "totalSize"}, page
    assert isinstance(page["nextPageToken"], str)
    assert isinstance(page["pageSize"], int) and isinstance(page["totalSize"], int)
    for task in page["tasks"]:
        validate_03(task, "Task")
    return page  # type: ignore[no-any-return]


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p.get("kind") == "text"]


# --- the doc example and the basic operations ---


async def test_doc_example_body_posted_to_a2a_returns_completed_task(
    client: httpx.AsyncClient,
) -> None:
    raw = '{"jsonrpc":"2.0","method":"message/send","id":"1","params":{"message":{"role":"user","parts":[{"text":"Analyze this data"}]}}}'  # noqa: E501 (the doc's exact body)
    r = await client.post("/a2a", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 200
    body = r.json()
    validate_03(body, "SendMessageSuccessResponse")
    assert body["id"] == "1"
    task = validate_03(result_of(body), "Task")
    assert task["kind"] == "task"
    assert task["id"] and task["contextId"]
    assert task["status"]["state"] == "completed"
    # The scripted agent echoes the words after the first one, as 0.3 text parts.
    parts = [p for a in task["artifacts"] for p in a["parts"]]
    assert parts == [{"kind": "text", "text": "this data"}]
    # The user's message is in history, with a generated messageId and kind.
    first = task["history"][0]
    assert first["kind"] == "message" and first["role"] == "user" and first["messageId"]
    assert first["parts"] == [{"kind": "text", "text": "Analyze this data"}]


async def test_tasks_get_returns_the_state_of_a_sent_task(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo hello")
    got = await get(rpc, task["id"])
    assert got["id"] == task["id"]
    assert got["contextId"] == task["contextId"]
    assert got["status"]["state"] == "completed"


async def test_cancel_on_completed_task_is_refused_and_keeps_it_completed(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo done")
    body = await rpc("tasks/cancel", {"id": task["id"]})
    error = assert_error(body, -32002, reason="TASK_NOT_CANCELABLE", dialect="0.3")
    assert error["message"] == "Task not cancelable: already completed"
    assert (await get(rpc, task["id"]))["status"]["state"] == "completed"


async def test_get_unknown_task_is_task_not_found_naming_the_id(rpc: Rpc) -> None:
    missing = f"no-such-{uuid.uuid4()}"
    error = assert_error(
        await rpc("tasks/get", {"id": missing}), -32001, reason="TASK_NOT_FOUND", dialect="0.3"
    )
    assert error["message"] == f"Task not found: {missing}"


async def test_get_without_id_is_invalid_params_naming_id(rpc: Rpc) -> None:
    error = assert_error(await rpc("tasks/get", {}), -32602, dialect="0.3")
    assert re.search(r"\bid\b", error["message"]), error


async def test_unknown_method_is_method_not_found(rpc: Rpc) -> None:
    error = assert_error(await rpc("tasks/frobnicate", {"id": "x"}), -32601, dialect="0.3")
    assert "tasks/frobnicate" in error["message"]


# --- contexts and follow-ups ---


async def test_two_messages_with_one_context_id_make_two_tasks_listed_together(rpc: Rpc) -> None:
    context = f"ctx-{uuid.uuid4()}"
    a = await send_task(
        rpc,
        "echo one",
        message={"role": "user", "contextId": context, "parts": [{"text": "echo one"}]},
    )
    b = await send_task(
        rpc,
        "echo two",
        message={"role": "user", "contextId": context, "parts": [{"text": "echo two"}]},
    )
    await send_task(rpc, "echo elsewhere")
    assert a["id"] != b["id"]
    assert a["contextId"] == b["contextId"] == context
    page = await list_tasks(rpc, contextId=context)
    assert sorted(t["id"] for t in page["tasks"]) == sorted([a["id"], b["id"]])
    assert page["totalSize"] == 2
    assert all(t["contextId"] == context for t in page["tasks"])


async def test_null_context_id_in_message_is_accepted(rpc: Rpc) -> None:
    task = await send_task(
        rpc, message={"role": "user", "contextId": None, "parts": [{"text": "echo x"}]}
    )
    assert isinstance(task["contextId"], str) and task["contextId"]
    assert task["status"]["state"] == "completed"


async def test_non_blocking_send_returns_at_once_with_an_active_task(rpc: Rpc) -> None:
    body = await asyncio.wait_for(
        rpc("message/send", {**msg03("hang x"), "configuration": {"blocking": False}}), timeout=5
    )
    validate_03(body, "SendMessageSuccessResponse")
    task = validate_03(result_of(body), "Task")
    assert task["status"]["state"] in {"submitted", "working"}
    canceled = result_of(await rpc("tasks/cancel", {"id": task["id"]}))
    validate_03(canceled, "Task")
    assert canceled["status"]["state"] == "canceled"
    assert (await get(rpc, task["id"]))["status"]["state"] == "canceled"


async def test_follow_up_with_task_id_continues_an_input_required_task(rpc: Rpc) -> None:
    first = await send_task(rpc, "input which colour?")
    assert first["status"]["state"] == "input-required"
    assert texts(first["status"]["message"]) == ["which colour?"]
    follow = await send_task(
        rpc,
        message={
            "role": "user",
            "taskId": first["id"],
            "contextId": first["contextId"],
            "parts": [{"text": "blue"}],
        },
    )
    assert follow["id"] == first["id"]
    assert follow["status"]["state"] == "completed"
    user_texts = [texts(m) for m in follow["history"] if m["role"] == "user"]
    assert user_texts == [["input which colour?"], ["blue"]]
    assert [p["text"] for a in follow["artifacts"] for p in a["parts"]] == ["got: blue"]


async def test_follow_up_with_only_task_id_infers_the_context_id(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    follow = await send_task(
        rpc, message={"role": "user", "taskId": first["id"], "parts": [{"text": "a"}]}
    )
    assert follow["contextId"] == first["contextId"]
    assert follow["history"][-1]["contextId"] == first["contextId"]
    assert follow["history"][-1]["taskId"] == first["id"]


async def test_follow_up_with_mismatched_context_id_is_invalid_params(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    body = await rpc(
        "message/send",
        {
            "message": {
                "role": "user",
                "taskId": first["id"],
                "contextId": "some-other-context",
                "parts": [{"text": "a"}],
            }
        },
    )
    assert_error(body, -32602, dialect="0.3")
    assert (await get(rpc, first["id"]))["status"]["state"] == "input-required"


async def test_message_to_a_terminal_task_is_unsupported_operation(rpc: Rpc) -> None:
    done = await send_task(rpc, "echo x")
    body = await rpc(
        "message/send",
        {"message": {"role": "user", "taskId": done["id"], "parts": [{"text": "more"}]}},
    )
    error = assert_error(body, -32004, reason="UNSUPPORTED_OPERATION", dialect="0.3")
    assert done["id"] in error["message"]
    got = await get(rpc, done["id"])
    assert got["status"]["state"] == "completed"
    assert got["history"] == done["history"]


# --- historyLength ---


async def _two_turn_task(rpc: Rpc) -> dict[str, Any]:
    first = await send_task(rpc, "input q?")
    await send_task(
        rpc, message={"role": "user", "taskId": first["id"], "parts": [{"text": "answer"}]}
    )
    full = await get(rpc, first["id"])
    assert len(full["history"]) >= 3
    return full


async def test_history_length_zero_on_send_omits_history(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo x", configuration={"historyLength": 0})
    assert "history" not in task


async def test_history_length_n_on_send_returns_the_n_newest(rpc: Rpc) -> None:
    first = await send_task(rpc, "input q?")
    follow = await send_task(
        rpc,
        message={"role": "user", "taskId": first["id"], "parts": [{"text": "answer"}]},
        configuration={"historyLength": 2},
    )
    full = await get(rpc, first["id"])
    assert [m["messageId"] for m in follow["history"]] == [
        m["messageId"] for m in full["history"][-2:]
    ]


async def test_history_length_on_get(rpc: Rpc) -> None:
    full = await _two_turn_task(rpc)
    assert "history" not in await get(rpc, full["id"], historyLength=0)
    one = await get(rpc, full["id"], historyLength=1)
    assert one["history"] == full["history"][-1:]
    two = await get(rpc, full["id"], historyLength=2)
    assert two["history"] == full["history"][-2:]
    assert (await get(rpc, full["id"], historyLength=1000))["history"] == full["history"]


async def test_history_length_on_list(rpc: Rpc) -> None:
    full = await _two_turn_task(rpc)
    page = await list_tasks(rpc, contextId=full["contextId"], historyLength=0)
    assert [t["id"] for t in page["tasks"]] == [full["id"]]
    assert "history" not in page["tasks"][0]
    page = await list_tasks(rpc, contextId=full["contextId"], historyLength=1)
    assert page["tasks"][0]["history"] == full["history"][-1:]


# --- parts ---


async def test_parts_with_and_without_kind_round_trip_into_history_in_0_3_shape(rpc: Rpc) -> None:
    raw = base64.b64encode(b"\x00\xffbinary").decode()
    sent = [
        {"kind": "text", "text": "echo with kind"},
        {"text": "without kind"},
        {
            "kind": "file",
            "file": {"bytes": raw, "name": "b.bin", "mimeType": "application/octet-stream"},
        },
        {
            "file": {
                "uri": "https://example.com/doc.pdf",
                "name": "doc.pdf",
                "mimeType": "application/pdf",
            }
        },
        {"kind": "data", "data": {"k": [1, "two"], "nested": {"ok": True}}},
        {"data": {"inferred": 1}},
    ]
    task = await send_task(rpc, message={"role": "user", "parts": sent})
    expected = [
        {"kind": "text", "text": "echo with kind"},
        {"kind": "text", "text": "without kind"},
        {
            "kind": "file",
            "file": {"bytes": raw, "name": "b.bin", "mimeType": "application/octet-stream"},
        },
        {
            "kind": "file",
            "file": {
                "uri": "https://example.com/doc.pdf",
                "name": "doc.pdf",
                "mimeType": "application/pdf",
            },
        },
        {"kind": "data", "data": {"k": [1, "two"], "nested": {"ok": True}}},
        {"kind": "data", "data": {"inferred": 1}},
    ]
    assert task["history"][0]["parts"] == expected
    got = await get(rpc, task["id"])
    assert got["history"][0]["parts"] == expected


async def test_text_input_produces_artifact_parts_of_kind_text(rpc: Rpc) -> None:
    task = await send_task(rpc, "echo some words")
    for artifact in task["artifacts"]:
        validate_03(artifact, "Artifact")
        assert artifact["artifactId"]
    assert [p for a in task["artifacts"] for p in a["parts"]] == [
        {"kind": "text", "text": "some words"}
    ]


async def test_agent_output_of_every_part_kind_is_valid_0_3(rpc: Rpc) -> None:
    task = await send_task(rpc, "parts")
    assert task["status"]["state"] == "completed"
    by_name = {a["name"]: a for a in task["artifacts"]}
    for artifact in task["artifacts"]:
        validate_03(artifact, "Artifact")
    assert by_name["text"]["parts"] == [{"kind": "text", "text": "plain text"}]
    assert by_name["data"]["parts"] == [{"kind": "data", "data": {"n": 1, "xs": [1, 2]}}]
    [raw] = by_name["raw"]["parts"]
    validate_03(raw, "FilePart")
    validate_03(raw["file"], "FileWithBytes")
    assert raw == {
        "kind": "file",
        "file": {
            "bytes": base64.b64encode(b"\x00\x01bytes").decode(),
            "name": "b.bin",
            "mimeType": "application/octet-stream",
        },
    }
    [url] = by_name["url"]["parts"]
    validate_03(url["file"], "FileWithUri")
    assert url == {
        "kind": "file",
        "file": {
            "uri": "https://example.com/f.pdf",
            "name": "f.pdf",
            "mimeType": "application/pdf",
        },
    }
    assert by_name["multi"]["parts"] == [
        {"kind": "text", "text": "a"},
        {"kind": "text", "text": "b"},
    ]


# --- states and replies ---


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("input which?", "input-required"),
        ("auth", "auth-required"),
        ("fail", "failed"),
        ("reject", "rejected"),
        ("raise", "failed"),
    ],
)
async def test_states_use_0_3_spelling(rpc: Rpc, text: str, state: str) -> None:
    task = await send_task(rpc, text)
    assert task["status"]["state"] == state
    status_message = validate_03(task["status"]["message"], "Message")
    assert status_message["role"] == "agent"
    validate_03(task["status"], "TaskStatus")
    assert (await get(rpc, task["id"]))["status"]["state"] == state
    listed = await list_tasks(rpc, contextId=task["contextId"])
    assert [t["status"]["state"] for t in listed["tasks"]] == [state]


async def test_agent_exception_fails_the_task_without_leaking_its_text(rpc: Rpc) -> None:
    task = await send_task(rpc, "raise")
    assert task["status"]["state"] == "failed"
    assert "secret internal detail" not in json.dumps(task)


async def test_reply_returns_a_message_and_stores_no_task(rpc: Rpc) -> None:
    await send_task(rpc, "echo before")
    before = (await list_tasks(rpc))["totalSize"]
    result = await send(rpc, "reply hi")
    validate_03(result, "Message")
    assert result["kind"] == "message"
    assert result["role"] == "agent"
    assert result["parts"] == [{"kind": "text", "text": "hi"}]
    assert "taskId" not in result
    assert (await list_tasks(rpc))["totalSize"] == before


async def test_list_pages_are_0_3_tasks_with_a_last_page_token_of_empty_string(rpc: Rpc) -> None:
    ids = [(await send_task(rpc, f"echo {i}"))["id"] for i in range(3)]
    page1 = await list_tasks(rpc, pageSize=2)
    assert page1["pageSize"] == 2 and page1["totalSize"] == 3 and len(page1["tasks"]) == 2
    assert page1["nextPageToken"]
    page2 = await list_tasks(rpc, pageSize=2, pageToken=page1["nextPageToken"])
    assert page2["nextPageToken"] == ""
    assert sorted(t["id"] for t in page1["tasks"] + page2["tasks"]) == sorted(ids)
    assert all(t["kind"] == "task" for t in page1["tasks"] + page2["tasks"])


async def test_message_to_an_unknown_task_is_task_not_found(rpc: Rpc) -> None:
    missing = str(uuid.uuid4())
    body = await rpc(
        "message/send", {"message": {"role": "user", "taskId": missing, "parts": [{"text": "hi"}]}}
    )
    error = assert_error(body, -32001, reason="TASK_NOT_FOUND", dialect="0.3")
    assert missing in error["message"]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (
            "tasks/pushNotificationConfig/set",
            {"taskId": "t1", "pushNotificationConfig": {"url": "https://example.com/hook"}},
        ),
        ("tasks/pushNotificationConfig/get", {"id": "t1"}),
        ("tasks/pushNotificationConfig/list", {"id": "t1"}),
        ("tasks/pushNotificationConfig/delete", {"id": "t1", "pushNotificationConfigId": "c1"}),
    ],
)
async def test_push_notification_config_methods_are_not_supported(
    rpc: Rpc, method: str, params: dict[str, Any]
) -> None:
    assert_error(
        await rpc(method, params), -32003, reason="PUSH_NOTIFICATION_NOT_SUPPORTED", dialect="0.3"
    )
