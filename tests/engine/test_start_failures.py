"""A task stored before its agent starts (returnImmediately, or a webhook in the
send) is never left submitted forever: if its webhook can't be kept, the task
fails saying so, and a resend of the message gets that failed task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from a2ad import MemoryStore, Task, TaskState
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.protocol.model import TaskPushNotificationConfig
from a2ad.store.base import StoreError, Webhook

from ..scripted import ScriptedAgent
from .requests import WAIT, request


class WebhooklessStore(MemoryStore):
    """A memory store whose webhook writes fail (a database gone, say)."""

    async def put_webhook(self, webhook: Webhook) -> bool:
        raise StoreError("the webhooks table is unavailable (the test's store)")


async def test_a_task_whose_webhook_cannot_be_kept_fails_instead_of_staying_submitted() -> None:
    store = WebhooklessStore()
    engine = build_engine(
        ScriptedAgent(), store, EngineConfig(allow_private_webhooks=True, shutdown_grace=0)
    )
    await engine.start()
    try:
        sent = request("echo hi", immediately=True)
        hook = Webhook(TaskPushNotificationConfig(url="http://127.0.0.1:9/h"), "1.0")
        with pytest.raises(StoreError):
            await asyncio.wait_for(engine.send(sent, webhooks=[hook]), WAIT)
        (task,) = await store.list_tasks(limit=5)
        assert task.status.state is TaskState.FAILED
        assert "could not be started" in (task.status.message.parts[0].text or "")
        # The same message again: its (failed) task, not a wait on a turn that never runs.
        again: Any = await asyncio.wait_for(engine.send(sent), WAIT)
        assert isinstance(again, Task) and again.id == task.id
    finally:
        await engine.aclose()
