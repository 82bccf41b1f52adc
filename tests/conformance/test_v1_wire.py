"""A2A 1.0 only (A2A-Version: 1.0): version negotiation, the 1.0 part shapes,
timestamps and the ListTasks parameters. Every result is parsed strictly into the
official protobuf types (see oracles.parse_v1); what 0.3 shares is in test_wire.py."""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import SendMessageResponse, Task

from ..conftest import V1, Rpc, msg10
from ..jsonrpc import call
from .dialects import V10, result_of
from .oracles import assert_error, parse_v1


async def post(
    client: httpx.AsyncClient,
    method: str,
    params: Any,
    *,
    path: str = "/",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    return await call(client, method, params, url=path, headers=headers, request_id="x1")


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


# --- parts and timestamps ---


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
    task = await V10.send_task(
        rpc, {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    )
    assert task["history"][0]["parts"] == parts
    assert (await V10.get(rpc, task["id"]))["history"][0]["parts"] == parts


async def test_agent_output_of_every_part_kind_parses_as_1_0(rpc: Rpc) -> None:
    task = await V10.send_task(rpc, "parts")
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


async def test_status_timestamps_are_utc_with_milliseconds(rpc: Rpc) -> None:
    task = await V10.send_task(rpc, "echo x")
    stamp = task["status"]["timestamp"]
    assert len(stamp) == len("2026-11-30T10:00:00.123Z") and stamp.endswith("Z"), stamp


# --- ListTasks ---


async def test_list_tasks_page_size_defaults_to_50(rpc: Rpc) -> None:
    await V10.send_task(rpc, "echo x")
    page = await V10.list_tasks(rpc)
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
    task = await V10.send_task(rpc, "echo has an artifact")
    assert task["artifacts"]
    page = await V10.list_tasks(rpc)
    assert all("artifacts" not in t for t in page["tasks"]), page
    page = await V10.list_tasks(rpc, includeArtifacts=False)
    assert all("artifacts" not in t for t in page["tasks"]), page
    page = await V10.list_tasks(rpc, includeArtifacts=True)
    assert page["tasks"][0]["artifacts"] == task["artifacts"]


async def test_list_tasks_newest_status_first(rpc: Rpc) -> None:
    older = await V10.send_task(rpc, "echo old")
    await asyncio.sleep(0.01)
    newer = await V10.send_task(rpc, "echo new")
    page = await V10.list_tasks(rpc)
    assert [t["id"] for t in page["tasks"]] == [newer["id"], older["id"]]


async def test_list_tasks_bad_page_token_is_invalid_params(rpc: Rpc) -> None:
    await V10.send_task(rpc, "echo x")
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
    done = await V10.send_task(rpc, "echo x")
    asking = await V10.send_task(rpc, "input q?")
    hanging = await V10.send_task(rpc, "hang", configuration={"returnImmediately": True})
    await V10.cancel(rpc, hanging["id"])
    expected = {
        "TASK_STATE_COMPLETED": done,
        "TASK_STATE_CANCELED": hanging,
        "TASK_STATE_INPUT_REQUIRED": asking,
    }[wanted]
    page = await V10.list_tasks(rpc, status=spelling)
    assert [t["id"] for t in page["tasks"]] == [expected["id"]]
    assert [t["status"]["state"] for t in page["tasks"]] == [wanted]
    assert page["totalSize"] == 1


async def test_list_tasks_unknown_status_is_invalid_params(rpc: Rpc) -> None:
    error = assert_error(await rpc("ListTasks", {"status": "TASK_STATE_SLEEPING"}, v1=True), -32602)
    assert "status" in error["message"]


async def test_list_tasks_status_timestamp_after_is_inclusive_lower_bound(rpc: Rpc) -> None:
    older = await V10.send_task(rpc, "echo old")
    await asyncio.sleep(0.02)
    newer = await V10.send_task(rpc, "echo new")
    cut = newer["status"]["timestamp"]
    assert older["status"]["timestamp"] < cut
    page = await V10.list_tasks(rpc, statusTimestampAfter=cut)
    assert [t["id"] for t in page["tasks"]] == [newer["id"]]
    assert page["totalSize"] == 1
    page = await V10.list_tasks(rpc, statusTimestampAfter="2000-01-01T00:00:00Z")
    assert {t["id"] for t in page["tasks"]} == {older["id"], newer["id"]}
    page = await V10.list_tasks(rpc, statusTimestampAfter="2999-01-01T00:00:00Z")
    assert page["tasks"] == [] and page["totalSize"] == 0 and page["nextPageToken"] == ""


async def test_list_tasks_status_timestamp_before_is_an_exclusive_upper_bound(rpc: Rpc) -> None:
    """a2ad's extension (docs/protocol.md): with statusTimestampAfter, a time window."""
    older = await V10.send_task(rpc, "echo before")
    await asyncio.sleep(0.02)
    newer = await V10.send_task(rpc, "echo after")
    cut = newer["status"]["timestamp"]
    page = await V10.list_tasks(rpc, statusTimestampBefore=cut)
    ids = [t["id"] for t in page["tasks"]]
    assert older["id"] in ids and newer["id"] not in ids
    window = {"statusTimestampAfter": older["status"]["timestamp"], "statusTimestampBefore": cut}
    page = await V10.list_tasks(rpc, **window)
    assert [t["id"] for t in page["tasks"]] == [older["id"]] and page["totalSize"] == 1
    for bad in ("tomorrow", "9999-12-31T23:59:59.9999Z"):  # the second rounds into 10000
        error = assert_error(
            await rpc("ListTasks", {"statusTimestampBefore": bad}, v1=True), -32602
        )
        assert "statusTimestampBefore" in error["message"]


async def test_list_tasks_bad_status_timestamp_is_invalid_params(rpc: Rpc) -> None:
    error = assert_error(
        await rpc("ListTasks", {"statusTimestampAfter": "yesterday"}, v1=True), -32602
    )
    assert "statusTimestampAfter" in error["message"]


# --- unsupported features ---


async def test_get_extended_agent_card_is_unsupported_operation(rpc: Rpc) -> None:
    assert_error(
        await rpc("GetExtendedAgentCard", {}, v1=True), -32004, reason="UNSUPPORTED_OPERATION"
    )
