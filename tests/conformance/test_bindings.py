"""Binding equivalence (A2A 1.0 §5.1): one scenario, run through JSON-RPC and
HTTP+JSON in 1.0 and in 0.3, gives the same tasks, states, events and errors.

Each binding is a small client here that reads every answer through the oracle
of its wire (parse_v1 for 1.0, the 0.3 JSON Schema for 0.3 JSON-RPC, the 0.3
proto for 0.3 HTTP+JSON) and reduces it to a plain summary that names nothing
binding-specific: a task is its state, artifacts and history; an error is its
ErrorInfo reason. Each test runs its scenario through the four and compares the
summaries with each other and with what the scenario must give.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.types import ListTasksResponse, SendMessageResponse, StreamResponse, Task

from a2ad import create_app

from ..conftest import LiveServer, wait_for
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from ..server.sse_client import frames
from .oracles import assert_error, assert_status, parse_03_rest, parse_v1, validate_03

TIMEOUT = 10


@dataclass(frozen=True)
class Failed:
    """An error answer, as every binding must agree on it."""

    reason: str


Summary = Any  # plain JSON-like values: what the four bindings are compared on


def _word(state: str) -> str:
    """A state in any binding's spelling as one word: ``input-required``."""
    word = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "canceled" if word == "cancelled" else word


def _part(p: dict[str, Any]) -> Summary:
    """A part in any of the three shapes, as (kind, content...)."""
    if "text" in p:
        return ("text", p["text"])
    if "data" in p:
        data = p["data"]
        if p.get("kind") is None and isinstance(data, dict) and set(data) == {"data"}:
            data = data["data"]  # the 0.3 proto's DataPart
        return ("data", data)
    f = p.get("file", p)
    if "fileWithBytes" in f:  # base64 of the base64 text, as the official SDKs read it
        content = base64.b64decode(base64.b64decode(f["fileWithBytes"]))
    elif "raw" in f or "bytes" in f:
        content = base64.b64decode(f.get("raw") or f["bytes"])
    else:
        content = f.get("url") or f.get("uri") or f["fileWithUri"]
    name = f.get("filename") or f.get("name") or ""
    mime = f.get("mediaType") or f.get("mimeType") or ""
    return ("file", name, mime, content)


def _message(m: dict[str, Any]) -> Summary:
    role = m["role"].removeprefix("ROLE_").lower()
    parts = m.get("parts", m.get("content", []))
    return (role, [_part(p) for p in parts])


def _task(t: dict[str, Any]) -> Summary:
    status = t["status"]
    return {
        "state": _word(status["state"]),
        "status": _message(status["message"]) if "message" in status else None,
        "artifacts": [
            (a.get("name", ""), [_part(p) for p in a["parts"]]) for a in t.get("artifacts", [])
        ],
        "history": [_message(m) for m in t.get("history", [])],
    }


def _event(item: dict[str, Any]) -> Summary:
    """A stream item in any binding's shape as (kind, what it says)."""
    kind = item.get("kind")
    if "statusUpdate" in item or kind == "status-update":
        status = item.get("statusUpdate", item)["status"]
        return ("status", _word(status["state"]))
    if "artifactUpdate" in item or kind == "artifact-update":
        artifact = item.get("artifactUpdate", item)["artifact"]
        return ("artifact", [_part(p) for p in artifact["parts"]])
    if "task" in item or kind == "task":
        return ("task", _word(item.get("task", item)["status"]["state"]))
    return ("message", _message(item.get("message", item)))


@dataclass(frozen=True)
class Binding:
    rest: bool
    version: str
    http: httpx.AsyncClient

    @property
    def name(self) -> str:
        return f"{'HTTP+JSON' if self.rest else 'JSON-RPC'} {self.version}"

    @property
    def v1(self) -> bool:
        return self.version == "1.0"

    # --- requests ---

    def _message(self, text: str, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        ids: dict[str, str] = {"messageId": str(uuid.uuid4())}
        if context_id:
            ids["contextId"] = context_id
        if task_id:
            ids["taskId"] = task_id
        if self.v1:
            return {"role": "ROLE_USER", "parts": [{"text": text}], **ids}
        if self.rest:
            return {"role": "ROLE_USER", "content": [{"text": text}], **ids}
        return {"role": "user", "parts": [{"kind": "text", "text": text}], **ids}

    def _send_params(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        immediately: bool = False,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"message": self._message(text, context_id, task_id)}
        if immediately:
            params["configuration"] = (
                {"returnImmediately": True} if self.v1 else {"blocking": False}
            )
        return params

    def _rpc(self, op: str, params: Any) -> dict[str, Any]:
        names = {
            "send": ("SendMessage", "message/send"),
            "stream": ("SendStreamingMessage", "message/stream"),
            "get": ("GetTask", "tasks/get"),
            "list": ("ListTasks", "tasks/list"),
            "cancel": ("CancelTask", "tasks/cancel"),
            "subscribe": ("SubscribeToTask", "tasks/resubscribe"),
        }[op]
        method = names[0] if self.v1 else names[1]
        return rpc_body(method, params)

    @property
    def _headers(self) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if self.v1 else {}

    def _path(self, path: str) -> str:
        return path if self.v1 else "/v1" + path

    async def _unary(self, op: str, params: dict[str, Any], rest: tuple[str, str]) -> Any:
        """The result JSON, or Failed; ``rest`` is (HTTP method, path)."""
        if self.rest:
            method, path = rest
            query = {k: v for k, v in params.items() if method == "GET" and k != "id"}
            body = params if method == "POST" and op == "send" else None
            r = await self.http.request(
                method, self._path(path), json=body, params=_query(query), headers=self._headers
            )
            if r.status_code != 200:
                return Failed(assert_status(r.status_code, r.json())["reason"])
            return r.json()
        r = await self.http.post("/", json=self._rpc(op, params), headers=self._headers)
        assert r.status_code == 200, r.text
        answer = r.json()
        if "error" in answer:
            error = assert_error(answer, answer["error"]["code"], dialect=self.version)
            return Failed(error["data"][0]["reason"])
        return answer["result"]

    # --- operations, each answering a Summary ---

    async def send(self, text: str, **how: Any) -> Summary:
        result = await self._unary(
            "send", self._send_params(text, **how), ("POST", "/message:send")
        )
        if isinstance(result, Failed):
            return result
        if self.v1:
            parse_v1(result, SendMessageResponse)
        elif self.rest:
            parse_03_rest(result, pb03.SendMessageResponse)
        else:
            validate_03(result, "Task" if result.get("kind") == "task" else "Message")
        if "message" in result or result.get("kind") == "message":
            return ("message", _message(result.get("message", result)))
        return {"id": result.get("task", result)["id"], **self._checked(result.get("task", result))}

    def _checked(self, task: dict[str, Any]) -> Summary:
        if self.v1:
            parse_v1(task, Task)
        elif self.rest:
            parse_03_rest(task, pb03.Task)
        else:
            validate_03(task, "Task")
        return _task(task)

    async def get(self, task_id: str, **query: Any) -> Summary:
        result = await self._unary("get", {"id": task_id, **query}, ("GET", f"/tasks/{task_id}"))
        return result if isinstance(result, Failed) else self._checked(result)

    async def cancel(self, task_id: str) -> Summary:
        result = await self._unary("cancel", {"id": task_id}, ("POST", f"/tasks/{task_id}:cancel"))
        return result if isinstance(result, Failed) else self._checked(result)

    async def list(self, **query: Any) -> Summary:
        page = await self._unary("list", query, ("GET", "/tasks"))
        if isinstance(page, Failed):
            return page
        if self.v1:
            parse_v1(page, ListTasksResponse)
        assert set(page) == {"tasks", "nextPageToken", "pageSize", "totalSize"}, page
        return {
            "tasks": sorted((_task(t) for t in page["tasks"]), key=json.dumps),
            "totalSize": page["totalSize"],
            "pageSize": page["pageSize"],
            "more": bool(page["nextPageToken"]),
        }

    async def stream(self, text: str, **how: Any) -> Summary:
        params = self._send_params(text, **how)
        if self.rest:
            return await self._sse("POST", self._path("/message:stream"), json=params)
        return await self._sse("POST", "/", json=self._rpc("stream", params))

    async def subscribe(self, task_id: str, last_event_id: int | None = None) -> Summary:
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        if self.rest:
            return await self._sse(
                "GET", self._path(f"/tasks/{task_id}:subscribe"), headers=headers
            )
        body = self._rpc("subscribe", {"id": task_id})
        return await self._sse("POST", "/", json=body, headers=headers)

    async def _sse(self, method: str, path: str, **kwargs: Any) -> Summary:
        headers = {**self._headers, **kwargs.pop("headers", {})}
        async with self.http.stream(method, path, headers=headers, **kwargs) as r:
            if not r.headers["content-type"].startswith("text/event-stream"):
                await r.aread()
                if self.rest:
                    return Failed(assert_status(r.status_code, r.json())["reason"])
                error = assert_error(r.json(), r.json()["error"]["code"], dialect=self.version)
                return Failed(error["data"][0]["reason"])
            items = [self._stream_item(f.data) async for f in frames(r)]
        return [_event(item) for item in items]

    def _stream_item(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.v1:
            item = data if self.rest else data["result"]
            parse_v1(item, StreamResponse)
            return item  # type: ignore[no-any-return]
        if self.rest:
            parse_03_rest(data, pb03.StreamResponse)
            return data
        validate_03(data, "SendStreamingMessageSuccessResponse")
        return data["result"]  # type: ignore[no-any-return]


def _query(values: dict[str, Any]) -> dict[str, str]:
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in values.items()}


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def server(agent: ScriptedAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent)) as live:
        yield live


@pytest.fixture
async def bindings(server: LiveServer) -> AsyncIterator[list[Binding]]:
    async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as http:
        yield [Binding(rest, v, http) for rest in (False, True) for v in ("1.0", "0.3")]


def same(results: dict[str, Summary], expected: Summary) -> None:
    """Every binding's summary is ``expected``; a failure shows them side by side."""
    differing = {name: r for name, r in results.items() if r != expected}
    assert not differing, f"expected {expected!r}\nbut got {differing!r}"


def without_ids(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "id"}


ON_IT = ("agent", [("text", "on it")])


# --- scenarios ----------------------------------------------------------------


async def test_send_gives_the_same_completed_task(bindings: list[Binding]) -> None:
    results = {b.name: without_ids(await b.send("echo same")) for b in bindings}
    same(
        results,
        {
            "state": "completed",
            "status": None,
            "artifacts": [("echo", [("text", "same")])],
            "history": [("user", [("text", "echo same")]), ON_IT],
        },
    )


async def test_a_reply_is_the_same_message(bindings: list[Binding]) -> None:
    same(
        {b.name: await b.send("reply yes") for b in bindings},
        ("message", ("agent", [("text", "yes")])),
    )


async def test_every_part_kind_arrives_the_same(bindings: list[Binding]) -> None:
    results = {b.name: without_ids(await b.send("parts"))["artifacts"] for b in bindings}
    same(
        results,
        [
            ("text", [("text", "plain text")]),
            ("data", [("data", {"n": 1, "xs": [1, 2]})]),
            ("raw", [("file", "b.bin", "application/octet-stream", b"\x00\x01bytes")]),
            ("url", [("file", "f.pdf", "application/pdf", "https://example.com/f.pdf")]),
            ("multi", [("text", "a"), ("text", "b")]),
        ],
    )


async def test_a_stream_gives_the_same_events(bindings: list[Binding]) -> None:
    same(
        {b.name: await b.stream("chunks 2") for b in bindings},
        [
            ("task", "submitted"),
            ("status", "working"),
            ("artifact", [("text", "c0")]),
            ("artifact", [("text", "c1")]),
            ("status", "completed"),
        ],
    )


async def test_get_with_history_length_gives_the_same_history(bindings: list[Binding]) -> None:
    results = {}
    for b in bindings:
        task = await b.send("echo h")
        results[b.name] = [(await b.get(task["id"], historyLength=n))["history"] for n in (0, 1, 2)]
    same(results, [[], [ON_IT], [("user", [("text", "echo h")]), ON_IT]])


async def test_list_with_filters_gives_the_same_page(bindings: list[Binding]) -> None:
    results = {}
    for b in bindings:
        context = f"ctx-{uuid.uuid4()}"
        for text in ("echo 1", "echo 2", "echo 3", "fail"):
            await b.send(text, context_id=context)
        results[b.name] = (
            await b.list(contextId=context, status="TASK_STATE_COMPLETED", pageSize=2),
            await b.list(
                contextId=context, status="failed", historyLength=0, includeArtifacts=True
            ),
        )
    (first, failed) = next(iter(results.values()))
    same(results, (first, failed))
    assert first["totalSize"] == 3 and first["pageSize"] == 2 and first["more"]
    assert [t["state"] for t in first["tasks"]] == ["completed", "completed"]
    assert all(t["artifacts"] == [] for t in first["tasks"])  # includeArtifacts defaults false
    assert failed == {
        "tasks": [
            {
                "state": "failed",
                "status": ("agent", [("text", "it broke")]),
                "artifacts": [],
                "history": [],
            }
        ],
        "totalSize": 1,
        "pageSize": 50,
        "more": False,
    }


async def test_cancel_and_its_errors_are_the_same(
    bindings: list[Binding], agent: ScriptedAgent
) -> None:
    results = {}
    for b in bindings:
        task = await b.send("hang", immediately=True)
        await wait_for(lambda: task["id"] in agent.started)  # noqa: B023
        canceled = await b.cancel(task["id"])
        results[b.name] = (
            canceled["state"],
            await b.cancel(task["id"]),
            await b.cancel(f"missing-{uuid.uuid4()}"),
        )
    same(results, ("canceled", Failed("TASK_NOT_CANCELABLE"), Failed("TASK_NOT_FOUND")))


async def test_subscribe_gives_the_same_events_and_errors(
    bindings: list[Binding], agent: ScriptedAgent
) -> None:
    results = {}
    for b in bindings:
        done = await b.send("chunks 2")
        replayed = await b.subscribe(done["id"], last_event_id=1)  # after "working"
        finished = await b.subscribe(done["id"])
        results[b.name] = (replayed, finished, await b.subscribe(f"missing-{uuid.uuid4()}"))
    same(
        results,
        (
            [
                ("artifact", [("text", "c0")]),
                ("artifact", [("text", "c1")]),
                ("status", "completed"),
            ],
            Failed("UNSUPPORTED_OPERATION"),
            Failed("TASK_NOT_FOUND"),
        ),
    )


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("get-unknown", "TASK_NOT_FOUND"),
        ("negative-history", "INVALID_PARAMS"),
        ("bad-status-filter", "INVALID_PARAMS"),
        ("message-to-a-finished-task", "UNSUPPORTED_OPERATION"),
        ("message-to-an-unknown-task", "TASK_NOT_FOUND"),
    ],
)
async def test_errors_are_the_same(bindings: list[Binding], scenario: str, reason: str) -> None:
    results = {}
    for b in bindings:
        if scenario == "get-unknown":
            results[b.name] = await b.get(f"missing-{uuid.uuid4()}")
        elif scenario == "negative-history":
            task = await b.send("echo n")
            results[b.name] = await b.get(task["id"], historyLength=-1)
        elif scenario == "bad-status-filter":
            results[b.name] = await b.list(status="sleeping")
        elif scenario == "message-to-a-finished-task":
            task = await b.send("echo first")
            results[b.name] = await b.send("echo again", task_id=task["id"])
        else:
            results[b.name] = await b.send("echo lost", task_id=f"missing-{uuid.uuid4()}")
    same(results, Failed(reason))
