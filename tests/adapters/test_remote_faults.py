"""Upstream faults a front lives through (adapters/remote.py): an upstream
``a2ad serve`` killed mid-stream and started again on its SQLite file, whose
task a2ad follows again and whose end (the upstream failed it: its own turn was
lost) a2ad's task takes; and an upstream that accepts connections but never
answers, which fails the turn once the client's timeout passes, naming it."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2ad.adapters.remote import RemoteAgent

from ..conftest import wait_for
from ..served import Served
from ..threaded_server import ThreadedServer, free_port
from .fronting import call, card_of, front, ours, read_body, sdk_server, send, until


async def test_an_upstream_killed_and_restarted_mid_stream_is_followed_to_its_end() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        store = f"sqlite:///{folder}/upstream.db"
        upstream = Served("--agent", "echo", "--store", store, port=port)
        try:
            url = upstream.url
            async for http in front(RemoteAgent(f"a2a+{url}/")):
                params = send("sleep:60 too late", returnImmediately=True)
                task = (await call(http, "SendMessage", params))["task"]

                await until(http, task["id"], lambda t: "upstream" in ours(t))
                upstream.proc.kill()  # mid-stream: a2ad's stream of the upstream task breaks
                upstream.proc.wait(10)
                upstream.__exit__(None, None, None)
                upstream = Served("--agent", "echo", "--store", store, port=port)
                assert upstream.url == url

                read = await until(
                    http, task["id"], lambda t: t["status"]["state"] != "TASK_STATE_WORKING"
                )
                # The restarted upstream failed its task (its turn was lost with it): a2ad
                # followed the task there and ended its own with the upstream's words.
                assert read["status"]["state"] == "TASK_STATE_FAILED", read
                said = read["status"]["message"]["parts"][0]["text"]
                assert "stopped or was lost" in said, said
        finally:
            upstream.__exit__(None, None, None)


@pytest.fixture
def mute_upstream() -> Iterator[str]:
    """A server that accepts connections and reads, but never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


async def test_an_upstream_that_never_answers_fails_the_turn_naming_it(mute_upstream: str) -> None:
    async for http in front(RemoteAgent(f"a2a+{mute_upstream}/", timeout=1.0)):
        got = await asyncio.wait_for(call(http, "SendMessage", send("hello?")), 15)
        task = got["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED", task
        said = task["status"]["message"]["parts"][0]["text"]
        assert f"the upstream agent at {mute_upstream}/" in said, said
        assert "timed out" in said or "no answer" in said, said


class _SlowToCancel:
    """An a2a-sdk executor that works until canceled, and takes its time to cancel."""

    def __init__(self) -> None:
        from a2a.server.agent_execution import AgentExecutor

        class Executor(AgentExecutor):  # type: ignore[misc]
            async def execute(self, context: Any, event_queue: Any) -> None:
                from a2a.helpers.proto_helpers import new_task_from_user_message
                from a2a.server.tasks import TaskUpdater

                task = context.current_task or new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
                await TaskUpdater(event_queue, task.id, task.context_id).start_work()
                await asyncio.sleep(3600)

            async def cancel(self, context: Any, event_queue: Any) -> None:
                await asyncio.sleep(30)  # no answer within the front's bound

        self.executor = Executor()


@pytest.fixture
def slow_to_cancel() -> Iterator[str]:
    with sdk_server(_SlowToCancel().executor, name="slow") as url:
        yield url


async def test_a_cancel_the_upstream_does_not_confirm_ends_after_the_bound_saying_so(
    slow_to_cancel: str,
) -> None:
    agent = RemoteAgent(f"a2a+{slow_to_cancel}/", cancel_seconds=0.5)
    async for http in front(agent):
        task = (await call(http, "SendMessage", send("work", returnImmediately=True)))["task"]
        await until(http, task["id"], lambda t: "upstream" in ours(t))
        canceled = await asyncio.wait_for(call(http, "CancelTask", {"id": task["id"]}), 10)
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        said = canceled["status"]["message"]["parts"][0]["text"]
        assert f"the upstream agent at {slow_to_cancel}/ did not confirm the cancel" in said
        assert "within 0.5 s" in said, said


class _EndsEarly:
    """An upstream whose stream of a new task ends, cleanly, while the task still
    works; a subscription to the task then brings its answer and its end."""

    def __init__(self) -> None:
        self.subscribed = 0
        self.served = ThreadedServer(self._app, what="an early-ending upstream", interface="asgi3")
        self.url = f"http://127.0.0.1:{self.served.port}"

    def _task(self, state: str, artifacts: bool = False) -> dict[str, Any]:
        task: dict[str, Any] = {"id": "up-1", "contextId": "ctx-1", "status": {"state": state}}
        if artifacts:
            task["artifacts"] = [{"artifactId": "a1", "parts": [{"text": "late answer"}]}]
        return task

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["method"] == "GET":
            await _answer(send, "application/json", [card_of(self.url, "early")])
            return
        body = await read_body(receive)
        call = json.loads(body)
        method, rid = call["method"], call["id"]
        working = self._task("TASK_STATE_WORKING")
        if method == "SendStreamingMessage":
            events = [{"task": working}]  # and the stream ends: no final state
        elif method == "SubscribeToTask":
            self.subscribed += 1
            done = self._task("TASK_STATE_COMPLETED", artifacts=True)
            events = [
                {"task": working},
                {"artifactUpdate": {"taskId": "up-1", "contextId": "ctx-1",
                                    "artifact": done["artifacts"][0], "lastChunk": True}},
                {"statusUpdate": {"taskId": "up-1", "contextId": "ctx-1",
                                  "status": {"state": "TASK_STATE_COMPLETED"}}},
            ]  # fmt: skip
        else:
            await _answer(
                send, "application/json", [{"jsonrpc": "2.0", "id": rid, "result": working}]
            )
            return
        results = [{"jsonrpc": "2.0", "id": rid, "result": event} for event in events]
        await _answer(send, "text/event-stream", results, sse=True)


async def _answer(send: Any, kind: str, bodies: list[Any], sse: bool = False) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", kind.encode())]})  # fmt: skip
    if sse:
        text = "".join(f"data: {json.dumps(b)}\n\n" for b in bodies)
    else:
        text = json.dumps(bodies[0])
    await send({"type": "http.response.body", "body": text.encode()})


async def test_a_stream_that_ends_before_its_task_is_followed_by_subscribing_again() -> None:
    upstream = _EndsEarly()
    upstream.served.start()
    try:
        async for http in front(RemoteAgent(f"a2a+{upstream.url}/")):
            task = (await call(http, "SendMessage", send("hello")))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["late answer"]
        assert upstream.subscribed == 1
    finally:
        upstream.served.stop()


class _SlowFirstAnswer:
    """An upstream that makes its task at once but sends its first event late;
    ListTasks finds the task (with the message it was sent), CancelTask is noted."""

    def __init__(self) -> None:
        self.served = ThreadedServer(self._app, what="a slow upstream", interface="asgi3")
        self.url = f"http://127.0.0.1:{self.served.port}"
        self.message: dict[str, Any] = {}
        self.canceled: list[str] = []

    def _task(self) -> dict[str, Any]:
        return {
            "id": "up-1",
            "contextId": self.message.get("contextId", "c"),
            "status": {"state": "TASK_STATE_WORKING"},
            "history": [self.message],
        }

    async def _app(self, scope: dict[str, Any], receive: Any, send_: Any) -> None:
        if scope["method"] == "GET":
            await _answer(send_, "application/json", [card_of(self.url, "slow")])
            return
        raw = await read_body(receive)
        rpc = json.loads(raw)
        method, rid = rpc["method"], rpc["id"]
        if method == "SendStreamingMessage":
            self.message = rpc["params"]["message"]
            await send_({"type": "http.response.start", "status": 200,
                         "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
            await asyncio.sleep(30)  # the first event never comes in time
            return
        if method == "ListTasks":
            result: Any = {
                "tasks": [self._task()],
                "nextPageToken": "",
                "pageSize": 1,
                "totalSize": 1,
            }
        else:  # CancelTask
            self.canceled.append(rpc["params"]["id"])
            result = {**self._task(), "status": {"state": "TASK_STATE_CANCELED"}}
        await _answer(send_, "application/json", [{"jsonrpc": "2.0", "id": rid, "result": result}])


async def test_a_cancel_before_the_upstreams_first_answer_finds_and_cancels_its_task() -> None:
    upstream = _SlowFirstAnswer()
    upstream.served.start()
    try:
        async for http in front(RemoteAgent(f"a2a+{upstream.url}/", cancel_seconds=2)):
            task = (await call(http, "SendMessage", send("slow", returnImmediately=True)))["task"]
            await wait_for(lambda: bool(upstream.message), timeout=10)
            canceled = await call(http, "CancelTask", {"id": task["id"]})
            assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
            await wait_for(lambda: upstream.canceled == ["up-1"], timeout=10)
    finally:
        upstream.served.server.force_exit = True
        upstream.served.stop()
