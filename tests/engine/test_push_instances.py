"""Push from several instances on one PostgreSQL store: each webhook is claimed
by one instance while it delivers (store/base.py ``due_webhooks``), so its
receiver gets every event once, in order, whichever instance stored it."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import PushPolicy, create_app
from a2ad.engine.config import EngineConfig
from a2ad.store import store_from_url

from ..conftest import V1, msg10, wait_for
from ..postgres import fresh_schema
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver

FAST = PushPolicy(first_retry=0.01, max_retry=0.05, max_attempts=4, timeout=5)
KEY = os.urandom(32)  # both instances read the webhooks' secrets with one key


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with fresh_schema() as made:
        yield made


async def send_hooked(app: Any, text: str, webhook_url: str) -> dict[str, Any]:
    """A blocking SendMessage to ``app`` naming a 1.0 webhook: the task it answers."""
    params = {
        **msg10(text),
        "configuration": {"taskPushNotificationConfig": {"url": webhook_url}},
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
        sent = await http.post(
            "/",
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params},
            headers=V1,
        )
    return sent.json()["result"]["task"]  # type: ignore[no-any-return]


async def test_two_instances_deliver_each_event_of_a_webhook_once_in_order(url: str) -> None:
    apps = [
        create_app(
            ScriptedAgent(),
            store=store_from_url(url),
            secret_key=KEY,
            engine=EngineConfig(allow_private_webhooks=True, push_policy=FAST),
        )
        for _ in range(2)
    ]
    for app in apps:
        await app.engine.start()
    try:
        with Receiver() as receiver:
            hooks = [uuid.uuid4().hex[:8] for _ in range(4)]
            for hook in hooks:  # held: each instance's outbox round (1 s) finds them due
                receiver.rule(hook, hold=True)
            tasks = [await send_hooked(apps[0], "chunks 25", receiver.url(h)) for h in hooks]
            expected = {}
            for hook, task in zip(hooks, tasks, strict=True):
                expected[hook] = len(await apps[0].store.events(task["id"], 0)) + 1

            def all_arrived() -> bool:
                return all(len(receiver.accepted(h)) >= n for h, n in expected.items())

            await asyncio.sleep(2.5)  # both instances' outbox rounds have come and gone
            for hook in hooks:
                receiver.release(hook)
            await wait_for(all_arrived, timeout=20)
            await asyncio.sleep(0.5)  # a duplicate would come late: give it the time to
            for hook, n in expected.items():
                seqs = [r.seq for r in receiver.received(hook)]
                assert seqs == list(range(n)), (hook, seqs)
    finally:
        for app in apps:
            await app.aclose()


async def test_more_webhooks_due_than_the_push_concurrency_are_each_delivered_at_once(
    url: str,
) -> None:
    # Two lanes, six webhooks: as each lane ends, the next due webhook starts
    # then, not once a claim taken for a lane that was not free runs out (60 s).
    app = create_app(
        ScriptedAgent(),
        store=store_from_url(url),
        secret_key=KEY,
        engine=EngineConfig(
            allow_private_webhooks=True,
            push_policy=PushPolicy(
                first_retry=0.01, max_retry=0.05, max_attempts=4, timeout=5, concurrency=2
            ),
        ),
    )
    await app.engine.start()
    try:
        with Receiver() as receiver:
            hooks = [uuid.uuid4().hex[:8] for _ in range(6)]
            for hook in hooks:  # held: the six are due while both lanes are taken
                receiver.rule(hook, hold=True)
            for hook in hooks:
                task = await send_hooked(app, "echo hi", receiver.url(hook))
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            await wait_for(lambda: len(receiver.received()) >= 2)  # both lanes hold one
            for hook in hooks:  # one at a time: the lanes end apart
                receiver.release(hook)
                await asyncio.sleep(0.2)
            # Each task made 3 deliveries: the task as set, working, completed.
            await wait_for(lambda: all(len(receiver.accepted(h)) >= 3 for h in hooks), 10)
    finally:
        await app.aclose()
