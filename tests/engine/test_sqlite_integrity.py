"""One SQLite file under concurrent load through the JSON-RPC API: senders,
cancellers (some cancelling twice), follow-ups (some racing each other or a
cancel) and subscribers, all at once. Nothing but the protocol's own errors may
come back, every subscriber sees every event of its task once and in order,
terminal states never change, and the file reopens to the same tasks."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import (
    Message,
    SqliteStore,
    Task,
    TaskArtifactUpdateEvent,
    TaskContext,
    TaskStatusUpdateEvent,
    create_app,
)
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.store.base import LoggedEvent

from ..conftest import Rpc, wait_for
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from ..server.sse_client import Dialect, Frame, body, frames, kind, state

Json = dict[str, Any]
Seen = tuple[int, str, str]  # (seq, what, text): what is a state word or "artifact"

SENDS = 200
HANGS = 40
DOUBLE_CANCELS = 20
ASKS = 30
DOUBLE_ANSWERS = 10
RACED_ASKS = 10
GATED = 30
GATED_STEPS = 4


class GatedAgent(ScriptedAgent):
    """ScriptedAgent, plus ``gated <n>``: works, waits for the test to open its
    gate, then streams one artifact in n chunks with a progress update after
    each, and completes."""

    def __init__(self) -> None:
        super().__init__()
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, task_id: str) -> asyncio.Event:
        return self.gates.setdefault(task_id, asyncio.Event())

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word != "gated" or len(ctx.history) > 1:
            await super().run(ctx)
            return
        await ctx.working("waiting")
        await self.gate(ctx.task_id).wait()
        n = int(rest)
        for i in range(n):
            await ctx.artifact(
                f"c{i}", artifact_id="out", append=i > 0, last_chunk=i == n - 1, name="out"
            )
            await ctx.working(f"step {i}")
        await ctx.complete("done")


def seen_event(seq: int, event: object) -> Seen:
    if isinstance(event, TaskArtifactUpdateEvent):
        return (seq, "artifact", "".join(str(p.text) for p in event.artifact.parts))
    assert isinstance(event, TaskStatusUpdateEvent), event
    message = event.status.message
    return (seq, event.status.state.word, message.text if isinstance(message, Message) else "")


def seen_frame(f: Frame, v1: bool) -> Seen:
    assert f.id is not None
    result = f.result
    b = body(result, v1)
    if kind(result, v1) == "artifact":
        return (f.id, "artifact", "".join(p["text"] for p in b["artifact"]["parts"]))
    assert kind(result, v1) == "status", result
    message = b["status"].get("message")
    return (f.id, state(result, v1), message["parts"][0]["text"] if message else "")


def logged(events: list[LoggedEvent]) -> list[Seen]:
    return [seen_event(e.seq, e.event) for e in events]


class FirstBodyWatch:
    """The app as served, telling the test when a response marked with an
    ``x-watch`` header has sent its first body bytes. httpx's ASGITransport hands
    a body over only once the response has ended, too late to learn that a
    stream that runs until the test lets it end has begun."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.first_body: dict[bytes, asyncio.Event] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        key = dict(scope.get("headers", ())).get(b"x-watch")
        if key is None:
            await self.app(scope, receive, send)
            return
        sent = self.first_body[key]

        async def watched(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and message.get("body"):
                sent.set()

        await self.app(scope, receive, watched)


class Load:
    """The JSON-RPC client side of the load, recording every response."""

    def __init__(self, client: httpx.AsyncClient, watch: FirstBodyWatch) -> None:
        self.client = client
        self.watch = watch
        self.rpc = Rpc(client)
        self.responses: list[Json] = []

    async def call(self, method: str, params: Any, *, v1: bool) -> Json:
        r = await self.rpc(method, params, v1=v1)
        self.responses.append(r)
        return r

    async def send(self, d: Dialect, text: str, **options: Any) -> Json:
        r = await self.call(d.method("send"), d.message(text, **options), v1=d.v1)
        return r

    async def sse(
        self, d: Dialect, task_id: str, last_event_id: str | None, attached: asyncio.Event
    ) -> list[Frame]:
        """Subscribe and read to the end; ``attached`` is set once the server has
        sent the first event."""
        headers = dict(d.headers)
        key = uuid.uuid4().hex
        self.watch.first_body[key.encode()] = attached
        headers["x-watch"] = key
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        async with self.client.stream(
            "POST", "/", json=rpc_body(d.method("subscribe"), {"id": task_id}), headers=headers
        ) as r:
            assert r.status_code == 200
            if not r.headers["content-type"].startswith("text/event-stream"):
                self.responses.append(json.loads(await r.aread()))
                raise AssertionError(f"subscribe failed: {self.responses[-1]}")
            got = [f async for f in frames(r)]
        for f in got:
            self.responses.append(f.data)
        return got


def dialect(i: int) -> Dialect:
    return Dialect(i % 2 == 0)


def task_of(d: Dialect, r: Json) -> Json:
    assert "result" in r, r
    return d.task_of(r["result"])


async def test_concurrent_load_on_one_sqlite_file_keeps_every_task_consistent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    rng = random.Random(7)
    path = tmp_path / "a2ad.db"
    agent = GatedAgent()
    app = create_app(agent, store=SqliteStore(path), engine=EngineConfig(shutdown_grace=0))
    engine = app.engine
    watch = FirstBodyWatch(app)
    transport = httpx.ASGITransport(app=watch)
    terminal: dict[str, str] = {}  # task id -> terminal state word, as first reported

    def finished(d: Dialect, task: Json) -> None:
        word = d.state_word(task)
        assert word in ("completed", "canceled", "failed", "rejected"), task
        assert terminal.setdefault(task["id"], word) == word, (task, terminal[task["id"]])

    async def sender(i: int) -> None:
        d = dialect(i)
        await asyncio.sleep(rng.random() * 0.05)
        task = task_of(d, await load.send(d, f"echo n{i}"))
        assert d.state_word(task) == "completed", task
        assert task["artifacts"][0]["parts"][0]["text"] == f"n{i}"
        finished(d, task)

    async def canceller(i: int) -> None:
        d = dialect(i)
        task_id = task_of(d, await load.send(d, "hang", immediately=True))["id"]
        await wait_for(lambda: task_id in agent.started, timeout=20)
        twice = i < DOUBLE_CANCELS
        replies = await asyncio.gather(
            *(load.call(d.method("cancel"), {"id": task_id}, v1=d.v1) for _ in range(1 + twice))
        )
        won = [r for r in replies if "result" in r]
        lost = [r for r in replies if "error" in r]
        assert len(won) == 1, replies
        assert d.state_word(won[0]["result"]) == "canceled"
        for r in lost:
            assert r["error"]["code"] == -32002, r
            assert r["error"]["message"] == "Task not cancelable: already canceled"
        finished(d, won[0]["result"])
        await wait_for(lambda: task_id in agent.cancelled, timeout=20)

    async def asker(i: int) -> None:
        d = dialect(i)
        asked = task_of(d, await load.send(d, f"input q{i}?"))
        assert d.state_word(asked) == "input-required", asked
        answers = 2 if i < DOUBLE_ANSWERS else 1
        replies = await asyncio.gather(
            *(load.send(d, f"a{i}.{k}", taskId=asked["id"]) for k in range(answers))
        )
        won = [r for r in replies if "result" in r]
        assert len(won) == 1, replies
        task = task_of(d, won[0])
        assert d.state_word(task) == "completed", task
        assert task["artifacts"][-1]["parts"][0]["text"].startswith(f"got: a{i}.")
        for r in replies:
            if "error" in r:
                assert r["error"]["code"] == -32004, r
        finished(d, task)

    async def raced_asker(i: int) -> None:
        """A follow-up and a cancel of the same task at once: either may win."""
        d = dialect(i)
        asked = task_of(d, await load.send(d, "input which?"))
        answering = load.send(d, "blue", taskId=asked["id"])
        cancelling = load.call(d.method("cancel"), {"id": asked["id"]}, v1=d.v1)
        if i % 2:  # whichever starts first tends to win: try both orders
            answer, cancel = await asyncio.gather(answering, cancelling)
        else:
            cancel, answer = await asyncio.gather(cancelling, answering)
        got = task_of(d, await load.call(d.method("get"), {"id": asked["id"]}, v1=d.v1))
        final = d.state_word(got)
        if final == "canceled":
            assert d.state_word(cancel["result"]) == "canceled", cancel
            if "error" in answer:
                assert answer["error"]["code"] == -32004, answer
            else:
                assert d.state_word(task_of(d, answer)) == "canceled", answer
        else:
            assert final == "completed", got
            assert cancel["error"]["code"] == -32002, cancel
            assert d.state_word(task_of(d, answer)) == "completed", answer
        finished(d, got)

    watched: dict[str, list[list[Seen]]] = {}  # task id -> what each subscriber saw

    async def engine_subscriber(task_id: str, attached: asyncio.Event) -> list[Seen]:
        stream = await engine.subscribe(task_id)
        out: list[Seen] = []
        try:
            first = await stream.next()
            attached.set()
            assert first is not None and isinstance(first[1], Task), first
            assert first[0] is not None
            start = first[0]
            while (step := await stream.next()) is not None:
                seq, item, _last = step
                assert seq is not None
                out.append(seen_event(seq, item))
        finally:
            stream.close()
        assert [s[0] for s in out] == list(range(start + 1, start + 1 + len(out))), out
        return out

    async def sse_subscriber(
        d: Dialect, task_id: str, last_event_id: str | None, attached: asyncio.Event
    ) -> list[Seen]:
        got = await load.sse(d, task_id, last_event_id, attached)
        if last_event_id is None:
            head, got = got[0], got[1:]
            assert kind(head.result, d.v1) == "task", head
            assert head.id is not None
            start = head.id
        else:
            start = int(last_event_id)
        out = [seen_frame(f, d.v1) for f in got]
        assert [s[0] for s in out] == list(range(start + 1, start + 1 + len(out))), out
        if not d.v1:
            flags = [f.result["final"] for f in got if kind(f.result, False) == "status"]
            assert flags[-1] is True and not any(flags[:-1]), flags
        return out

    async def watched_task(i: int) -> None:
        d = dialect(i)
        task_id = task_of(d, await load.send(d, f"gated {GATED_STEPS}", immediately=True))["id"]
        attached = [asyncio.Event() for _ in range(3)]
        subscribers = [
            asyncio.ensure_future(engine_subscriber(task_id, attached[0])),
            asyncio.ensure_future(sse_subscriber(d, task_id, None, attached[1])),
            asyncio.ensure_future(sse_subscriber(dialect(i + 1), task_id, "0", attached[2])),
        ]
        # A stream's first event (the task, or the replayed or live "working" update,
        # which comes before the gate opens) is sent only once its subscription is in
        # place. A subscriber that failed before it ends the wait too; gather reports it.
        await wait_for(
            lambda: all(a.is_set() for a in attached) or any(s.done() for s in subscribers),
            timeout=20,
        )
        await asyncio.sleep(rng.random() * 0.05)
        agent.gate(task_id).set()
        seen = await asyncio.gather(*subscribers)
        watched[task_id] = list(seen)
        got = task_of(d, await load.call(d.method("get"), {"id": task_id}, v1=d.v1))
        finished(d, got)

    # Another server instance on the same file (its own connection) keeps up its
    # upkeep and reads meanwhile: it must neither lock the first out nor take its
    # running tasks for orphans.
    other = build_engine(agent, SqliteStore(path), EngineConfig(shutdown_grace=0))
    busy = True

    async def other_instance() -> int:
        rounds = 0
        while busy:
            await other.maintain_once()
            await other.store.list_tasks(state="working", limit=50)
            rounds += 1
            await asyncio.sleep(0.005)
        return rounds

    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
        load = Load(client, watch)
        async with asyncio.timeout(30):
            upkeep = asyncio.ensure_future(other_instance())
            try:
                await asyncio.gather(
                    *(sender(i) for i in range(SENDS)),
                    *(canceller(i) for i in range(HANGS)),
                    *(asker(i) for i in range(ASKS)),
                    *(raced_asker(i) for i in range(RACED_ASKS)),
                    *(watched_task(i) for i in range(GATED)),
                )
            finally:
                busy = False
                assert await upkeep > 0
                await other.aclose()

            store = engine.store
            # Every subscriber saw every event of its task, once, in order, to the end.
            for task_id, views in watched.items():
                log = logged(await store.events(task_id, 0))
                assert len(log) == 2 + 2 * GATED_STEPS
                assert log[-1][1] == "completed"
                for view in views:
                    assert view, task_id
                    assert view == log[len(log) - len(view) :], (view, log)
                assert len(views[2]) == len(log)  # replayed from Last-Event-ID 0

            # Terminal states never change: not by a late cancel, a late answer,
            # nor by upkeep.
            before = {t: await store.get(t) for t in terminal}
            late = []
            for j, task_id in enumerate(terminal):
                d = dialect(j)
                late.append(load.call(d.method("cancel"), {"id": task_id}, v1=d.v1))
                late.append(load.send(d, "too late", taskId=task_id))
            for r in await asyncio.gather(*late):
                assert r["error"]["code"] in (-32002, -32004), r
            await engine.maintain_once()
            for j, task_id in enumerate(terminal):
                d = dialect(j)
                got = task_of(d, await load.call(d.method("get"), {"id": task_id}, v1=d.v1))
                assert d.state_word(got) == terminal[task_id], got
                assert await store.get(task_id) == before[task_id]

            # No errors but the protocol's, and no internal ones.
            for r in load.responses:
                if "error" in r:
                    assert r["error"]["code"] in (-32002, -32004), r
                assert "locked" not in json.dumps(r), r
            errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
            assert errors == [], [rec.getMessage() for rec in errors]

            # Each task's seq is its number of logged events, numbered 1..seq.
            tasks = await store.list_tasks(limit=10_000)
            total = SENDS + HANGS + ASKS + RACED_ASKS + GATED
            assert {t.id for t in tasks} == set(terminal)
            assert len(tasks) == total
            snapshots = {}
            for t in tasks:
                stored = await store.get(t.id)
                assert stored is not None
                events = await store.events(t.id, 0)
                assert [e.seq for e in events] == list(range(1, stored.seq + 1)), t.id
                snapshots[t.id] = (stored, events)
    await app.aclose()

    # The file, reopened, holds the same tasks and logs.
    async with SqliteStore(path) as reopened:
        again = await reopened.list_tasks(limit=10_000)
        assert {t.id for t in again} == set(snapshots)
        for task_id, (stored, events) in snapshots.items():
            assert await reopened.get(task_id) == stored
            assert await reopened.events(task_id, 0) == events
