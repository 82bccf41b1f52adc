"""Listing tasks through the JSON-RPC API: 1.0 ``ListTasks`` and a2ad's 0.3 ``tasks/list``.

Order is newest status timestamp first, ties by id descending; pages are keyset
pages, so a walk never repeats a task and never trips over a token whose task
changed or was evicted meanwhile.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest

from a2ad import A2AApp, Message, Role, Task, TaskState, TaskStatus, TextPart, create_app
from a2ad.store.memory import MemoryStore

from ..conftest import Rpc, msg03, wait_for
from ..scripted import ScriptedAgent

Json = dict[str, Any]


@pytest.fixture
def max_tasks() -> int:
    return 10_000


@pytest.fixture
def app(agent: ScriptedAgent, max_tasks: int) -> A2AApp:
    return create_app(agent, store=MemoryStore(max_tasks=max_tasks))


class Lister:
    """ListTasks in one protocol version."""

    def __init__(self, rpc: Rpc, version: str) -> None:
        self.rpc = rpc
        self.version = version
        self.v1 = version == "1.0"

    def state(self, word: str) -> str:
        return f"TASK_STATE_{word.upper().replace('-', '_')}" if self.v1 else word

    async def call(self, **params: Any) -> Json:
        method = "ListTasks" if self.v1 else "tasks/list"
        return await self.rpc(method, params, v1=self.v1)

    async def page(self, **params: Any) -> Json:
        r = await self.call(**params)
        assert "result" in r, r
        result: Json = r["result"]
        assert set(result) == {"tasks", "nextPageToken", "pageSize", "totalSize"}, result
        if not self.v1:
            assert all(t["kind"] == "task" for t in result["tasks"])
        return result

    async def walk(self, page_size: int, between: Any = None, **params: Any) -> list[list[Json]]:
        """Every page of one walk; ``between(n)`` runs after page n."""
        pages: list[list[Json]] = []
        token = ""
        while True:
            result = await self.page(pageSize=page_size, pageToken=token, **params)
            assert result["pageSize"] == page_size
            assert len(result["tasks"]) <= page_size
            pages.append(result["tasks"])
            token = result["nextPageToken"]
            if token == "":
                return pages
            assert len(pages) < 200, "the walk does not end"
            if between is not None:
                await between(len(pages))


@pytest.fixture(params=["1.0", "0.3"])
def lister(request: pytest.FixtureRequest, rpc: Rpc) -> Lister:
    return Lister(rpc, request.param)


def ids(tasks: list[Json]) -> list[str]:
    return [t["id"] for t in tasks]


def newest_first(tasks: list[Json]) -> list[str]:
    return ids(sorted(tasks, key=lambda t: (t["status"]["timestamp"], t["id"]), reverse=True))


async def echo(rpc: Rpc, text: str = "echo hi", **extra: Any) -> str:
    r = await rpc("message/send", msg03(text, **extra))
    assert r["result"]["status"]["state"] == "completed", r
    return str(r["result"]["id"])


async def ask(rpc: Rpc) -> str:
    r = await rpc("message/send", msg03("input which colour?"))
    assert r["result"]["status"]["state"] == "input-required", r
    return str(r["result"]["id"])


async def answer(rpc: Rpc, task_id: str) -> None:
    r = await rpc("message/send", msg03("blue", taskId=task_id))
    assert r["result"]["status"]["state"] == "completed", r


async def hang(rpc: Rpc, agent: ScriptedAgent) -> str:
    r = await rpc("message/send", {**msg03("hang"), "configuration": {"blocking": False}})
    task_id = str(r["result"]["id"])
    await wait_for(lambda: task_id in agent.started)
    return task_id


async def get(rpc: Rpc, task_id: str) -> Json:
    return await rpc("tasks/get", {"id": task_id})


# --- order ---


async def test_list_is_newest_first_and_an_update_moves_a_task_to_the_front(
    lister: Lister, rpc: Rpc
) -> None:
    asked = await ask(rpc)
    created = [asked]
    for i in range(4):
        await asyncio.sleep(0.002)  # distinct millisecond timestamps
        created.append(await echo(rpc, f"echo {i}"))
    page = await lister.page()
    assert ids(page["tasks"]) == created[::-1]
    assert ids(page["tasks"]) == newest_first(page["tasks"])

    await asyncio.sleep(0.002)
    await answer(rpc, asked)
    page = await lister.page()
    assert ids(page["tasks"]) == [asked, *created[:0:-1]]
    assert page["tasks"][0]["status"]["state"] == lister.state("completed")


async def test_equal_timestamps_are_ordered_by_id_descending_on_every_call(
    lister: Lister, app: A2AApp
) -> None:
    same = "2026-03-01T12:00:00.000Z"
    names = [str(uuid.uuid4()) for _ in range(7)]
    for task_id in names:
        await app.store.create(
            Task(
                id=task_id,
                context_id="ctx",
                status=TaskStatus(state=TaskState.COMPLETED, timestamp=same),
                history=[
                    Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[TextPart("x")])
                ],
            )
        )
    expected = sorted(names, reverse=True)
    assert ids((await lister.page())["tasks"]) == expected
    assert ids((await lister.page())["tasks"]) == expected
    for size in (1, 2, 3):
        pages = await lister.walk(size)
        assert [i for page in pages for i in ids(page)] == expected


# --- paging ---


@pytest.mark.parametrize("page_size", [1, 4, 13, 14, 100])
async def test_page_size_paging_walks_every_task_exactly_once(
    lister: Lister, rpc: Rpc, page_size: int
) -> None:
    created = {await echo(rpc, f"echo {i}") for i in range(13)}
    everything = await lister.page(pageSize=100)
    pages = await lister.walk(page_size)
    walked = [i for page in pages for i in ids(page)]
    assert walked == ids(everything["tasks"])
    assert sorted(walked) == sorted(created)
    assert len(pages) == max(1, -(-13 // page_size))
    assert all(len(page) == page_size for page in pages[:-1])


async def test_next_page_token_is_empty_on_the_last_page_and_on_an_empty_list(
    lister: Lister, rpc: Rpc
) -> None:
    empty = await lister.page()
    assert empty == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}
    for i in range(4):
        await echo(rpc, f"echo {i}")
    first = await lister.page(pageSize=2)
    assert first["nextPageToken"] != ""
    last = await lister.page(pageSize=2, pageToken=first["nextPageToken"])
    assert len(last["tasks"]) == 2
    assert last["nextPageToken"] == ""  # exactly full, and still the last page
    whole = await lister.page(pageSize=4)
    assert whole["nextPageToken"] == "" and len(whole["tasks"]) == 4


async def test_total_size_counts_all_matches_before_pagination(lister: Lister, rpc: Rpc) -> None:
    for i in range(3):
        await echo(rpc, f"echo {i}", contextId="ctx-a")
    failed = await rpc("message/send", msg03("fail now", contextId="ctx-a"))
    assert failed["result"]["status"]["state"] == "failed", failed
    for i in range(2):
        await echo(rpc, f"echo b{i}", contextId="ctx-b")
    asked = await ask(rpc)

    async def total(**params: Any) -> int:
        first = await lister.page(pageSize=1, **params)
        assert len(first["tasks"]) == 1
        if first["totalSize"] > 1:
            second = await lister.page(pageSize=1, pageToken=first["nextPageToken"], **params)
            assert second["totalSize"] == first["totalSize"]
        return int(first["totalSize"])

    assert await total() == 7
    assert await total(contextId="ctx-a") == 4
    assert await total(contextId="ctx-b") == 2
    assert await total(status=lister.state("completed")) == 5
    assert await total(status=lister.state("input-required")) == 1
    assert await total(contextId="ctx-a", status=lister.state("completed")) == 3
    only = await lister.page(status=lister.state("input-required"))
    assert ids(only["tasks"]) == [asked]


async def test_status_timestamp_after_keeps_tasks_updated_at_or_after_it(
    lister: Lister, rpc: Rpc
) -> None:
    old = await echo(rpc, "echo old")
    await asyncio.sleep(0.005)
    new = await echo(rpc, "echo new")
    boundary = (await get(rpc, new))["result"]["status"]["timestamp"]
    page = await lister.page(statusTimestampAfter=boundary)
    assert ids(page["tasks"]) == [new] and page["totalSize"] == 1
    page = await lister.page(statusTimestampAfter="2000-01-01T00:00:00Z")
    assert ids(page["tasks"]) == [new, old]


# --- what each listed task carries ---


async def test_history_length_limits_each_listed_tasks_history(lister: Lister, rpc: Rpc) -> None:
    task_id = await echo(rpc, "echo hi")
    full = (await get(rpc, task_id))["result"]["history"]
    assert len(full) >= 2  # the user's message and the agent's progress message

    unset = (await lister.page())["tasks"][0]
    assert [m["messageId"] for m in unset["history"]] == [m["messageId"] for m in full]
    one = (await lister.page(historyLength=1))["tasks"][0]
    assert [m["messageId"] for m in one["history"]] == [full[-1]["messageId"]]
    zero = (await lister.page(historyLength=0))["tasks"][0]
    assert "history" not in zero
    many = (await lister.page(historyLength=1000))["tasks"][0]
    assert len(many["history"]) == len(full)
    # Listing with a limit does not trim what is stored.
    assert (await get(rpc, task_id))["result"]["history"] == full


async def test_artifacts_are_omitted_unless_include_artifacts(lister: Lister, rpc: Rpc) -> None:
    task_id = await echo(rpc, "echo payload")
    default = (await lister.page())["tasks"][0]
    assert default["id"] == task_id and "artifacts" not in default
    off = (await lister.page(includeArtifacts=False))["tasks"][0]
    assert "artifacts" not in off
    on = (await lister.page(includeArtifacts=True))["tasks"][0]
    assert [p["text"] for a in on["artifacts"] for p in a["parts"]] == ["payload"]
    assert "artifacts" in (await get(rpc, task_id))["result"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": 101}, "pageSize"),
        ({"historyLength": -1}, "historyLength"),
        ({"pageToken": "not a token!"}, "pageToken"),
        ({"status": "sleepy"}, "status"),
        ({"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
        ({"statusTimestampAfter": "2030-13-45T00:00:00Z"}, "statusTimestampAfter"),
        # Well-formed, but it cannot be converted to UTC.
        ({"statusTimestampAfter": "9999-12-31T23:59:59-01:00"}, "statusTimestampAfter"),
    ],
    ids=[
        "pageSize-0",
        "pageSize-101",
        "historyLength-negative",
        "garbage-token",
        "unknown-status",
        "timestamp-not-a-time",
        "timestamp-impossible-date",
        "timestamp-out-of-range",
    ],
)
async def test_invalid_list_params_are_invalid_params_naming_the_field(
    lister: Lister, rpc: Rpc, params: Json, field: str
) -> None:
    await echo(rpc)
    r = await lister.call(**params)
    assert r["error"]["code"] == -32602, r
    assert field in r["error"]["message"]
    violations = [v["field"] for d in r["error"]["data"] for v in d.get("fieldViolations", [])]
    assert violations == [field], r


@pytest.mark.parametrize(
    "context_id", ["x" * 257, "two\nlines", "nul\x00"], ids=["too-long", "newline", "nul"]
)
async def test_send_with_an_invalid_context_id_is_invalid_params_and_stores_nothing(
    lister: Lister, rpc: Rpc, context_id: str
) -> None:
    method = "SendMessage" if lister.v1 else "message/send"
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER" if lister.v1 else "user",
        "parts": [{"text": "echo hi"}],
        "contextId": context_id,
    }
    r = await rpc(method, {"message": message}, v1=lister.v1)
    assert r["error"]["code"] == -32602, r
    violations = [v["field"] for d in r["error"]["data"] for v in d.get("fieldViolations", [])]
    assert violations == ["message.contextId"], r
    assert (await lister.page())["tasks"] == []


# --- paging while the store changes ---


@pytest.mark.parametrize("max_tasks", [5])
async def test_token_pointing_at_an_evicted_task_still_continues_the_walk(
    lister: Lister, rpc: Rpc, agent: ScriptedAgent
) -> None:
    running = [await hang(rpc, agent) for _ in range(4)]
    await asyncio.sleep(0.002)
    newest = await echo(rpc, "echo newest")  # the only terminal task: next to be evicted
    first = await lister.page(pageSize=1)
    assert ids(first["tasks"]) == [newest]
    token = first["nextPageToken"]

    await asyncio.sleep(0.002)  # strictly newer than `newest` (ties within 1 ms go by id)
    replacement = await echo(rpc, "echo replacement")
    assert (await get(rpc, newest))["error"]["code"] == -32001  # evicted

    rest = await lister.page(pageSize=10, pageToken=token)
    assert sorted(ids(rest["tasks"])) == sorted(running)
    assert replacement not in ids(rest["tasks"])
    assert rest["nextPageToken"] == ""


@pytest.mark.parametrize("max_tasks", [12])
@pytest.mark.parametrize("seed", range(6))
async def test_paging_while_tasks_change_and_get_evicted_never_repeats_or_errors(
    lister: Lister, rpc: Rpc, agent: ScriptedAgent, seed: int
) -> None:
    rnd = random.Random(seed)
    hanging = [await hang(rpc, agent) for _ in range(3)]
    asking = [await ask(rpc) for _ in range(3)]
    for i in range(6):
        await echo(rpc, f"echo {i}")
    before = {t["id"]: t for t in (await lister.page(pageSize=100))["tasks"]}
    assert len(before) == 12

    async def change(page_number: int) -> None:
        for _ in range(rnd.randint(1, 3)):
            action = rnd.choice(["cancel", "answer", "echo", "echo", "ask"])
            if action == "cancel" and hanging:
                r = await rpc("tasks/cancel", {"id": hanging.pop(rnd.randrange(len(hanging)))})
                assert r["result"]["status"]["state"] == "canceled", r
            elif action == "answer" and asking:
                task_id = asking.pop(rnd.randrange(len(asking)))
                if "result" in await get(rpc, task_id):  # not evicted meanwhile
                    await answer(rpc, task_id)
            elif action == "ask":
                asking.append(await ask(rpc))
            else:
                await echo(rpc, f"echo new after page {page_number}")
            await asyncio.sleep(rnd.choice([0, 0.002]))

    pages = await lister.walk(rnd.choice([1, 2, 3]), between=change)
    walked = [i for page in pages for i in ids(page)]
    assert len(walked) == len(set(walked)), "a task came back on a later page"

    # A task nobody touched and nobody evicted during the walk is seen exactly once.
    current = {t["id"]: t for t in (await lister.page(pageSize=100))["tasks"]}
    untouched = [task_id for task_id, seen in before.items() if current.get(task_id) == seen]
    assert untouched, "the scenario left nothing untouched; it checks nothing"
    assert any(task_id not in current for task_id in before), "nothing was evicted during the walk"
    for task_id in untouched:
        assert walked.count(task_id) == 1, task_id
