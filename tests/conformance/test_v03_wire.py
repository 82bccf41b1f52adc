"""A2A 0.3 only (no A2A-Version header): the doc example, the lenient input 0.3
clients send (no messageId, parts without kind, null ids) and the 0.3 part shapes.
Every result is checked against the 0.3.0 JSON Schema; what 1.0 shares is in
test_wire.py."""

from __future__ import annotations

import base64

import httpx

from ..conftest import Rpc
from .dialects import V03, result_of
from .oracles import validate_03


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


# --- lenient input ---


async def test_null_context_id_in_message_is_accepted(rpc: Rpc) -> None:
    task = await V03.send_task(
        rpc, {"role": "user", "contextId": None, "parts": [{"text": "echo x"}]}
    )
    assert isinstance(task["contextId"], str) and task["contextId"]
    assert task["status"]["state"] == "completed"


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
    task = await V03.send_task(rpc, {"role": "user", "parts": sent})
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
    got = await V03.get(rpc, task["id"])
    assert got["history"][0]["parts"] == expected


# --- agent output ---


async def test_agent_output_of_every_part_kind_is_valid_0_3(rpc: Rpc) -> None:
    task = await V03.send_task(rpc, "parts")
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
