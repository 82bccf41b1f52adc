"""What `import a2ad` promises a user: names, model types, helpers, stores, mounting."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest

import a2ad
from a2ad import (
    Artifact,
    DataPart,
    FilePart,
    MemoryStore,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
    create_app,
)

from .conftest import V1, Rpc, msg10

# --- names ----------------------------------------------------------------


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert a2ad.__all__ == sorted(a2ad.__all__)
    assert len(set(a2ad.__all__)) == len(a2ad.__all__)
    for name in a2ad.__all__:
        assert getattr(a2ad, name, None) is not None, name


def test_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, Any] = {}
    exec("from a2ad import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(a2ad.__all__)


def test_task_state_has_every_protocol_state() -> None:
    expected = {
        "SUBMITTED",
        "WORKING",
        "COMPLETED",
        "FAILED",
        "CANCELED",
        "INPUT_REQUIRED",
        "AUTH_REQUIRED",
        "REJECTED",
    }
    assert expected <= set(TaskState.__members__)
    assert TaskState.INPUT_REQUIRED.value == "TASK_STATE_INPUT_REQUIRED"
    assert TaskState.CANCELED.value == "TASK_STATE_CANCELED"


# --- model types ----------------------------------------------------------


def test_model_types_use_snake_case_attributes() -> None:
    message = Message(
        message_id="m1", role=Role.USER, parts=[TextPart("hi")], context_id="c1", task_id="t1"
    )
    artifact = Artifact(artifact_id="a1", parts=[TextPart("x")])
    task = Task(
        id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING, message=message)
    )
    assert (message.message_id, message.context_id, message.task_id) == ("m1", "c1", "t1")
    assert artifact.artifact_id == "a1"
    assert (task.id, task.context_id, task.status.state) == ("t1", "c1", TaskState.WORKING)
    assert task.status.message.message_id == "m1"  # type: ignore[union-attr]
    assert task.artifacts == [] and task.history == []


def test_text_and_data_helpers_build_parts() -> None:
    text = TextPart("hello")
    assert isinstance(text, Part)
    assert text.text == "hello"
    data = DataPart({"n": 1})
    assert isinstance(data, Part)
    assert data.data == {"n": 1}
    assert json.loads(msgspec.json.encode(text)) == {"text": "hello"}
    assert json.loads(msgspec.json.encode(data)) == {"data": {"n": 1}}


def test_file_helper_builds_raw_and_url_parts_keeping_name_and_media_type() -> None:
    raw = FilePart(raw=b"\x00\xff", filename="a.bin", media_type="application/octet-stream")
    url = FilePart(url="https://example.com/a.png", filename="a.png", media_type="image/png")
    assert isinstance(raw, Part) and isinstance(url, Part)
    assert json.loads(msgspec.json.encode(raw)) == {
        "raw": "AP8=",
        "filename": "a.bin",
        "mediaType": "application/octet-stream",
    }
    assert json.loads(msgspec.json.encode(url)) == {
        "url": "https://example.com/a.png",
        "filename": "a.png",
        "mediaType": "image/png",
    }


@pytest.mark.parametrize("kwargs", [{}, {"raw": b"x", "url": "https://example.com/x"}])
def test_file_helper_needs_exactly_one_of_raw_and_url(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="raw"):
        FilePart(**kwargs)


def test_part_with_two_contents_is_refused() -> None:
    with pytest.raises(ValueError):
        Part(text="a", url="https://example.com")


def test_task_built_as_documented_encodes_to_the_1_0_json_shape() -> None:
    task = Task(
        id="task-1",
        context_id="ctx-1",
        status=TaskStatus(state=TaskState.COMPLETED),
        history=[Message(message_id="m1", role=Role.USER, parts=[TextPart("hi")])],
        artifacts=[Artifact(artifact_id="art-001", parts=[TextPart("x")])],
    )
    encoded = json.loads(msgspec.json.encode(task))
    assert encoded == {
        "id": "task-1",
        "contextId": "ctx-1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "art-001", "parts": [{"text": "x"}]}],
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}],
    }
    assert msgspec.json.decode(msgspec.json.encode(task), type=Task) == task


def test_documented_task_parses_as_a_1_0_task_in_the_official_sdk() -> None:
    from a2a.types import Task as SdkTask
    from google.protobuf.json_format import MessageToDict, ParseDict

    task = Task(
        id="task-1",
        context_id="ctx-1",
        status=TaskStatus(state=TaskState.COMPLETED, timestamp="2026-01-02T03:04:05.678Z"),
        history=[Message(message_id="m1", role=Role.USER, parts=[TextPart("hi")])],
        artifacts=[Artifact(artifact_id="art-001", parts=[TextPart("x")])],
    )
    encoded = json.loads(msgspec.json.encode(task))
    parsed = ParseDict(encoded, SdkTask(), ignore_unknown_fields=False)
    assert parsed.status.state == 3  # TASK_STATE_COMPLETED
    assert MessageToDict(parsed) == encoded


# --- stores ---------------------------------------------------------------


def stored_task(
    task_id: str, context_id: str, second: int, state: TaskState = TaskState.COMPLETED
) -> Task:
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(
            state=state, timestamp=f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"
        ),
        history=[Message(message_id=f"m-{task_id}", role=Role.USER, parts=[TextPart(task_id)])],
    )


async def test_store_lists_the_tasks_of_a_context_newest_first() -> None:
    store = MemoryStore()
    for task in [
        stored_task("a-old", "ctx-a", 1),
        stored_task("b-1", "ctx-b", 2),
        stored_task("a-new", "ctx-a", 5),
        stored_task("a-mid", "ctx-a", 3),
    ]:
        await store.create(task)
    tasks = await store.list_tasks(context_id="ctx-a")
    assert [t.id for t in tasks] == ["a-new", "a-mid", "a-old"]
    assert all(isinstance(t, Task) for t in tasks)
    assert await store.list_tasks(context_id="ctx-none") == []
    await store.aclose()


async def test_store_lists_every_task_of_a_large_context() -> None:
    store = MemoryStore()
    for i in range(150):
        await store.create(stored_task(f"t{i:03d}", "big", i))
    await store.create(stored_task("other", "small", 200))
    tasks = await store.list_tasks(context_id="big")
    assert [t.id for t in tasks] == [f"t{i:03d}" for i in reversed(range(150))]
    await store.aclose()


async def test_store_lists_the_tasks_a_running_app_created_in_a_context() -> None:
    app = create_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
    ) as c:
        rpc = Rpc(c)
        ids = []
        for text in ("one", "two", "three"):
            # Timestamps have millisecond precision; within one, ties go by id.
            await asyncio.sleep(0.002)
            body = await rpc("SendMessage", msg10(text, contextId="shared"), v1=True)
            ids.append(body["result"]["task"]["id"])
        await rpc("SendMessage", msg10("elsewhere"), v1=True)
    tasks = await app.store.list_tasks(context_id="shared")
    assert [t.id for t in tasks] == list(reversed(ids))
    assert {t.context_id for t in tasks} == {"shared"}
    await app.aclose()


# --- mounting inside another ASGI app ------------------------------------

ASGIApp = Callable[..., Any]


def mount_like_starlette(prefix: str, inner: ASGIApp) -> ASGIApp:
    """A path-prefix dispatcher that builds the child scope the way Starlette's
    Mount does (and the ASGI spec's root_path clarification asks): `path` stays
    the full request path and `root_path` gains the prefix."""

    async def outer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (
            scope["path"] == prefix or scope["path"].startswith(prefix + "/")
        ):
            child = dict(scope)
            child["root_path"] = scope.get("root_path", "") + prefix
            await inner(child, receive, send)
            return
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"outer app"})

    return outer


def mount_stripping_prefix(prefix: str, inner: ASGIApp) -> ASGIApp:
    """A dispatcher in the older style: the prefix moves from `path` to `root_path`."""

    async def outer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (
            scope["path"] == prefix or scope["path"].startswith(prefix + "/")
        ):
            child = dict(scope)
            child["root_path"] = scope.get("root_path", "") + prefix
            child["path"] = scope["path"][len(prefix) :] or "/"
            await inner(child, receive, send)
            return
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"outer app"})

    return outer


def mount_with_starlette(prefix: str, inner: ASGIApp) -> ASGIApp:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    return Starlette(routes=[Mount(prefix, app=inner)])


MOUNTS = [mount_like_starlette, mount_stripping_prefix]
if importlib.util.find_spec("starlette") is not None:
    MOUNTS.append(mount_with_starlette)


@pytest.mark.parametrize("mount", MOUNTS)
async def test_mounted_app_answers_under_its_mount_path(
    mount: Callable[[str, ASGIApp], ASGIApp],
) -> None:
    app = create_app()
    outer = mount("/agents/echo", app)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=outer), base_url="http://host.test"
    ) as c:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg10("mounted")}
        r = await c.post("/agents/echo/", json=body, headers=V1)
        assert r.status_code == 200, r.text
        task = r.json()["result"]["task"]
        assert task["artifacts"][0]["parts"] == [{"text": "mounted"}]

        card = await c.get("/agents/echo/.well-known/agent-card.json")
        assert card.status_code == 200, card.text
        assert card.json()["name"] == "echo"
    await app.aclose()


@pytest.mark.parametrize("mount", MOUNTS)
async def test_mounted_apps_card_points_clients_under_the_mount_path(
    mount: Callable[[str, ASGIApp], ASGIApp],
) -> None:
    app = create_app()
    outer = mount("/agents/echo", app)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=outer), base_url="http://host.test"
    ) as c:
        r = await c.get("/agents/echo/.well-known/agent-card.json")
        assert r.status_code == 200, r.text
        card = r.json()
        urls = {i["url"] for i in card["supportedInterfaces"]} | {card["url"]}
        assert urls == {"http://host.test/agents/echo/"}
        # the advertised url is where the JSON-RPC endpoint answers
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}
        answer = await c.post(card["url"], json=body, headers=V1)
        assert answer.status_code == 200
        assert answer.json()["error"]["code"] == -32001
    await app.aclose()
