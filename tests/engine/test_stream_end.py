"""A subscription whose task disappears (evicted while waiting for input) ends."""

from __future__ import annotations

from a2ad import MemoryStore
from a2ad.engine.build import build_engine

from ..scripted import ScriptedAgent
from .requests import request


async def test_subscription_to_an_evicted_task_ends_at_the_next_quiet_tick() -> None:
    store = MemoryStore(max_tasks=1)
    engine = build_engine(ScriptedAgent(), store)
    waiting = await engine.send(request("input which?"))
    stream = await engine.subscribe(waiting.id)
    first = await stream.next(timeout=0.05)
    assert first is not None and first[1].id == waiting.id  # the current task comes first
    await engine.send(request("echo pushes the waiting task out"))
    assert await store.get(waiting.id) is None
    assert await stream.next(timeout=0.05) is None
    stream.close()
    await engine.aclose()
