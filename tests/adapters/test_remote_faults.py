"""Upstream faults a front lives through (adapters/remote.py): an upstream
``a2ad serve`` killed mid-stream and started again on its SQLite file, whose
task a2ad follows again and whose end (the upstream failed it: its own turn was
lost) a2ad's task takes; and an upstream that accepts connections but never
answers, which fails the turn once the client's timeout passes, naming it."""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2ad.adapters.remote import RemoteAgent

from ..served import Served
from ..threaded_server import free_port
from .fronting import call, front, ours, sdk_server, send, until


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
