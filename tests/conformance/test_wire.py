"""The JSON-RPC behaviour A2A 1.0 and 0.3 share, run in both dialects.

Only the spelling differs between the two runs of a test, and the dialect object
(dialects.py) owns it; it also runs the version's oracle on every result. What
exists in one version only is in test_v1_wire.py and test_v03_wire.py."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any

import pytest

from ..conftest import Rpc
from .dialects import V03, V10, WireDialect


@pytest.fixture(params=[V10, V03], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> WireDialect:
    return request.param  # type: ignore[no-any-return]


# --- send, get, cancel ---


async def test_send_message_returns_completed_task_with_artifact_and_history(
    rpc: Rpc, d: WireDialect
) -> None:
    sent = d.message("echo hello world", messageId=str(uuid.uuid4()))
    task = await d.send_task(rpc, sent)
    assert task["status"]["state"] == d.state("completed")
    assert task["artifacts"] and all(a["artifactId"] for a in task["artifacts"])
    assert [p for a in task["artifacts"] for p in a["parts"]] == [d.text_part("hello world")]
    first = task["history"][0]
    assert first["messageId"] == sent["messageId"]
    assert first["role"] == d.role("user")
    assert first["parts"] == [d.text_part("echo hello world")]
    assert first["taskId"] == task["id"] and first["contextId"] == task["contextId"]


async def test_get_task_returns_the_state_of_a_sent_task(rpc: Rpc, d: WireDialect) -> None:
    task = await d.send_task(rpc, "echo x")
    got = await d.get(rpc, task["id"])
    assert got["id"] == task["id"] and got["contextId"] == task["contextId"]
    assert got["status"]["state"] == d.state("completed")


async def test_cancel_on_completed_task_is_refused_and_keeps_it_completed(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "echo x")
    body = await d.call(rpc, "cancel", {"id": task["id"]})
    error = d.error(body, -32002, reason="TASK_NOT_CANCELABLE")
    assert error["message"] == "Task not cancelable: already completed"
    assert (await d.get(rpc, task["id"]))["status"]["state"] == d.state("completed")


async def test_get_unknown_task_is_task_not_found_naming_the_id(rpc: Rpc, d: WireDialect) -> None:
    missing = f"no-such-{uuid.uuid4()}"
    error = d.error(await d.call(rpc, "get", {"id": missing}), -32001, reason="TASK_NOT_FOUND")
    assert error["message"] == f"Task not found: {missing}"


async def test_cancel_unknown_task_is_task_not_found(rpc: Rpc, d: WireDialect) -> None:
    missing = str(uuid.uuid4())
    error = d.error(await d.call(rpc, "cancel", {"id": missing}), -32001)
    assert missing in error["message"]


async def test_get_without_id_is_invalid_params_naming_id(rpc: Rpc, d: WireDialect) -> None:
    error = d.error(await d.call(rpc, "get", {}), -32602)
    assert re.search(r"\bid\b", error["message"]), error


async def test_send_returning_immediately_gives_an_active_task_that_can_be_canceled(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await asyncio.wait_for(
        d.send_task(rpc, "hang x", configuration=d.return_immediately), timeout=5
    )
    assert task["status"]["state"] in {d.state("submitted"), d.state("working")}
    canceled = await d.cancel(rpc, task["id"])
    assert canceled["status"]["state"] == d.state("canceled")
    assert (await d.get(rpc, task["id"]))["status"]["state"] == d.state("canceled")


async def test_reply_returns_a_message_and_stores_no_task(rpc: Rpc, d: WireDialect) -> None:
    await d.send_task(rpc, "echo before")
    before = (await d.list_tasks(rpc))["totalSize"]
    msg = d.message_of(await d.send(rpc, "reply hi"))
    assert msg["role"] == d.role("agent")
    assert msg["parts"] == [d.text_part("hi")]
    assert "taskId" not in msg
    assert (await d.list_tasks(rpc))["totalSize"] == before


async def test_unknown_method_is_method_not_found_naming_it(rpc: Rpc, d: WireDialect) -> None:
    method = "FrobnicateTask" if d.v1 else "tasks/frobnicate"
    error = d.error(await rpc(method, {"id": "x"}, v1=d.v1), -32601)
    assert method in error["message"]


# --- follow-ups and contexts ---


async def test_follow_up_with_task_id_continues_an_input_required_task(
    rpc: Rpc, d: WireDialect
) -> None:
    first = await d.send_task(rpc, "input which colour?")
    assert first["status"]["state"] == d.state("input-required")
    assert d.texts(first["status"]["message"]) == ["which colour?"]
    follow = await d.send_task(
        rpc, d.message("blue", taskId=first["id"], contextId=first["contextId"])
    )
    assert follow["id"] == first["id"]
    assert follow["status"]["state"] == d.state("completed")
    user_texts = [d.texts(m) for m in follow["history"] if m["role"] == d.role("user")]
    assert user_texts == [["input which colour?"], ["blue"]]
    assert [p["text"] for a in follow["artifacts"] for p in a["parts"]] == ["got: blue"]


async def test_follow_up_with_only_task_id_infers_the_context_id(rpc: Rpc, d: WireDialect) -> None:
    first = await d.send_task(rpc, "input q?")
    follow = await d.send_task(rpc, d.message("a", taskId=first["id"]))
    assert follow["contextId"] == first["contextId"]
    assert follow["history"][-1]["contextId"] == first["contextId"]
    assert follow["history"][-1]["taskId"] == first["id"]


async def test_follow_up_with_mismatched_context_id_is_invalid_params(
    rpc: Rpc, d: WireDialect
) -> None:
    first = await d.send_task(rpc, "input q?")
    msg = d.message("a", taskId=first["id"], contextId="some-other-context")
    d.error(await d.call(rpc, "send", {"message": msg}), -32602)
    assert (await d.get(rpc, first["id"]))["status"]["state"] == d.state("input-required")


async def test_message_to_a_terminal_task_is_unsupported_operation(
    rpc: Rpc, d: WireDialect
) -> None:
    done = await d.send_task(rpc, "echo x")
    body = await d.call(rpc, "send", {"message": d.message("more", taskId=done["id"])})
    error = d.error(body, -32004, reason="UNSUPPORTED_OPERATION")
    assert done["id"] in error["message"]
    got = await d.get(rpc, done["id"])
    assert got["status"]["state"] == d.state("completed")
    assert got["history"] == done["history"]


async def test_message_to_an_unknown_task_is_task_not_found(rpc: Rpc, d: WireDialect) -> None:
    missing = str(uuid.uuid4())
    body = await d.call(rpc, "send", {"message": d.message("more", taskId=missing)})
    error = d.error(body, -32001, reason="TASK_NOT_FOUND")
    assert missing in error["message"]


async def test_messages_sharing_a_context_id_make_tasks_listed_together(
    rpc: Rpc, d: WireDialect
) -> None:
    context = f"ctx-{uuid.uuid4()}"
    a = await d.send_task(rpc, d.message("echo a", contextId=context))
    b = await d.send_task(rpc, d.message("echo b", contextId=context))
    await d.send_task(rpc, "echo elsewhere")
    assert a["id"] != b["id"] and a["contextId"] == b["contextId"] == context
    page = await d.list_tasks(rpc, contextId=context)
    assert sorted(t["id"] for t in page["tasks"]) == sorted([a["id"], b["id"]])
    assert page["totalSize"] == 2
    assert all(t["contextId"] == context for t in page["tasks"])


# --- historyLength ---


async def _two_turn_task(rpc: Rpc, d: WireDialect) -> dict[str, Any]:
    first = await d.send_task(rpc, "input q?")
    await d.send_task(rpc, d.message("answer", taskId=first["id"]))
    full = await d.get(rpc, first["id"])
    assert len(full["history"]) >= 3
    return full


async def test_history_length_zero_on_send_omits_history(rpc: Rpc, d: WireDialect) -> None:
    task = await d.send_task(rpc, "echo x", configuration={"historyLength": 0})
    assert "history" not in task


async def test_history_length_n_on_send_returns_the_n_newest(rpc: Rpc, d: WireDialect) -> None:
    first = await d.send_task(rpc, "input q?")
    follow = await d.send_task(
        rpc, d.message("answer", taskId=first["id"]), configuration={"historyLength": 2}
    )
    full = await d.get(rpc, first["id"])
    assert follow["history"] == full["history"][-2:]


async def test_history_length_on_get_returns_the_n_newest(rpc: Rpc, d: WireDialect) -> None:
    full = await _two_turn_task(rpc, d)
    assert "history" not in await d.get(rpc, full["id"], historyLength=0)
    for n in (1, 2, 3):
        got = await d.get(rpc, full["id"], historyLength=n)
        assert got["history"] == full["history"][-n:], n
    assert (await d.get(rpc, full["id"], historyLength=1000))["history"] == full["history"]


async def test_history_length_on_list_returns_the_n_newest(rpc: Rpc, d: WireDialect) -> None:
    full = await _two_turn_task(rpc, d)
    page = await d.list_tasks(rpc, contextId=full["contextId"], historyLength=0)
    assert [t["id"] for t in page["tasks"]] == [full["id"]]
    assert "history" not in page["tasks"][0]
    for n in (1, 2):
        page = await d.list_tasks(rpc, contextId=full["contextId"], historyLength=n)
        assert page["tasks"][0]["history"] == full["history"][-n:], n


async def test_negative_history_length_is_invalid_params(rpc: Rpc, d: WireDialect) -> None:
    task = await d.send_task(rpc, "echo x")
    body = await d.call(rpc, "get", {"id": task["id"], "historyLength": -1})
    error = d.error(body, -32602)
    assert "historyLength" in error["message"]


# --- states ---


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
async def test_states_are_spelled_in_the_dialect_on_send_get_and_list(
    rpc: Rpc, d: WireDialect, text: str, state: str
) -> None:
    task = await d.send_task(rpc, text)
    assert task["status"]["state"] == d.state(state)
    assert task["status"]["message"]["role"] == d.role("agent")
    assert (await d.get(rpc, task["id"]))["status"]["state"] == d.state(state)
    listed = await d.list_tasks(rpc, contextId=task["contextId"])
    assert [t["status"]["state"] for t in listed["tasks"]] == [d.state(state)]


async def test_agent_exception_fails_the_task_without_leaking_its_text(
    rpc: Rpc, d: WireDialect
) -> None:
    task = await d.send_task(rpc, "raise")
    assert task["status"]["state"] == d.state("failed")
    assert "secret internal detail" not in json.dumps(task)


# --- listing ---


async def test_list_tasks_pages_with_cursor_and_empty_token_on_last_page(
    rpc: Rpc, d: WireDialect
) -> None:
    ids = [(await d.send_task(rpc, f"echo {i}"))["id"] for i in range(5)]
    seen: list[str] = []
    sizes: list[int] = []
    token = ""
    while True:
        params: dict[str, Any] = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        page = await d.list_tasks(rpc, **params)
        assert page["pageSize"] == 2 and page["totalSize"] == 5
        sizes.append(len(page["tasks"]))
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
        assert len(sizes) < 10
    assert token == ""
    assert sizes == [2, 2, 1]
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
