"""A turn leaves nothing for the cycle collector: whatever a request, its agent
and its stream allocate is freed by reference counting when they end.

Reference cycles per turn (an invocation and its outbox, a cancelled task and its
task group) made the collector run several times as often and cost about a
third more CPU per request at 32 concurrent clients (bench/load.py); this keeps
them from coming back, for every way a turn can end.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator

import pytest

from a2ad import Engine, MemoryStore, Task
from a2ad.engine.build import build_engine

from ..scripted import ScriptedAgent
from .requests import request


@pytest.fixture
def collected() -> Iterator[list[object]]:
    """What the cycle collector finds, instead of freeing it, while the test runs."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def send(engine: Engine, text: str) -> None:
    await engine.send(request(text))


async def stream(engine: Engine, text: str) -> None:
    events = await engine.stream(request(text))
    while await events.next(timeout=5) is not None:
        pass
    events.close()


async def cancel(engine: Engine, text: str) -> None:
    task = await engine.send(request(text, immediately=True))
    assert isinstance(task, Task)
    await asyncio.sleep(0)  # let the agent start
    await engine.cancel(task.id)


async def follow_up(engine: Engine, text: str) -> None:
    task = await engine.send(request(text))
    assert isinstance(task, Task)
    await engine.send(request("blue", task_id=task.id))


Turn = Callable[[Engine, str], Awaitable[None]]


@pytest.mark.parametrize(
    ("turn", "text"),
    [
        (send, "echo hi"),
        (send, "reply hi"),
        (send, "raise"),
        (send, "fail"),
        (send, "nothing"),
        (stream, "chunks 3"),
        (cancel, "hang"),
        (follow_up, "input which?"),
    ],
    ids=["complete", "reply", "raise", "fail", "return", "stream", "cancel", "follow-up"],
)
async def test_a_turn_leaves_no_reference_cycles(
    collected: list[object], turn: Turn, text: str
) -> None:
    engine = build_engine(ScriptedAgent(), MemoryStore())
    for _ in range(3):  # warm: first-call caches are not per-turn garbage
        await turn(engine, text)
    gc.collect()
    collected.clear()
    for _ in range(20):
        await turn(engine, text)
    gc.collect()
    ours = without_others(collected)
    kinds = Counter(type(o).__name__ for o in ours)
    await engine.aclose()
    assert not ours, f"{len(ours)} objects in cycles after 20 turns: {kinds}"


FOREIGN = ("aiohttp.", "litellm.", "httpx.", "httpcore.", "openai.", "google.", "praisonai")


def without_others(garbage: list[object]) -> list[object]:
    """``garbage`` less the cycles holding an object of a library these turns never
    touch: another test in the same process (tests run several to a process)
    may leave such a cycle behind, to be found whenever the collector runs."""
    index = {id(o): i for i, o in enumerate(garbage)}
    parent = list(range(len(garbage)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, obj in enumerate(garbage):
        for ref in gc.get_referents(obj):
            j = index.get(id(ref))
            if j is not None:
                parent[root(i)] = root(j)
    foreign = {root(i) for i, o in enumerate(garbage) if type(o).__module__.startswith(FOREIGN)}
    return [o for i, o in enumerate(garbage) if root(i) not in foreign]
