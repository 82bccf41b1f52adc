"""Orphans picked up again (Agent.resumes, engine/local_turns.py ``adopt``): a
task another instance runs, with its lease alive, is not taken; an agent whose
``resumes`` raises has its orphans failed, and the server still starts."""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

import httpx

from a2ad import create_app
from a2ad.engine.upkeep import ORPHANED
from a2ad.store.memory import MemoryStore

from ..conftest import wait_for
from ..jsonrpc import answer, rpc_body
from ..served import Served
from .resuming_agents import Resumable

V1 = {"A2A-Version": "1.0"}


def _send() -> dict[str, Any]:
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": "go"}]}
    return {"message": message, "configuration": {"returnImmediately": True}}


async def test_a_task_another_instance_runs_is_not_taken() -> None:
    store = MemoryStore()
    mine, theirs = Resumable(), Resumable()
    a, b = create_app(mine, store=store), create_app(theirs, store=store)
    for app in (a, b):
        app.engine.shutdown_grace = 0
        await app.lifetime.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=a), base_url="http://a"
        ) as h:
            got = answer(await h.post("/", json=rpc_body("SendMessage", _send()), headers=V1))
        task_id = got["result"]["task"]["id"]
        await wait_for(lambda: bool(mine.turns), timeout=5)
        # B found it among the orphans a moment ago (a stale list): it asks the store again.
        parts = b.engine._parts
        assert parts.local is not None and parts.maintenance is not None
        took = await parts.local.adopt(task_id, parts.maintenance._is_orphan)
        assert took  # handled: another instance runs it
        await asyncio.sleep(0.2)
        assert theirs.turns == []  # no second turn
        assert mine.turns == [(task_id, False)]
    finally:
        await a.aclose()
        await b.aclose()


async def test_an_agent_whose_resumes_raises_has_its_orphans_failed_and_the_server_starts() -> None:
    agent = ["--agent", "tests.engine.resuming_agents:Stubborn"]
    with tempfile.TemporaryDirectory() as folder:
        store = ["--store", f"sqlite:///{folder}/a2ad.db"]
        with Served(*agent, *store) as first:
            with httpx.Client(base_url=first.url) as http:
                body = rpc_body("SendMessage", _send())
                task_id = answer(http.post("/", json=body, headers=V1))["result"]["task"]["id"]
            first.expect("task working|task submitted")
            first.proc.kill()  # a crash: the task stays working in the file
            first.proc.wait(10)
        with Served(*agent, *store) as second:
            with httpx.Client(base_url=second.url) as http:
                body = rpc_body("GetTask", {"id": task_id})
                task = answer(http.post("/", json=body, headers=V1))["result"]
            assert task["status"]["state"] == "TASK_STATE_FAILED", task
            assert task["status"]["message"]["parts"][0]["text"] == ORPHANED
            second.expect("resumes\\(\\) failed")
