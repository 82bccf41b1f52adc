"""Turn observers (engine/runner.py): told when each agent turn begins and ends,
in the turn's own asyncio task, so that what they set in context variables is
what the agent's code sees (how log context and tracing follow a turn)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from a2ad import Agent, MemoryStore, Task, TaskState
from a2ad.agent import TaskContext
from a2ad.engine.build import build_engine
from a2ad.engine.invocation import Invocation

from .requests import WAIT, request

current_turn: contextvars.ContextVar[str] = contextvars.ContextVar("current_turn", default="")


class Reads(Agent):
    """Completes with what the observer set in its context."""

    name = "reads"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.complete(f"seen {current_turn.get()}")


class Notes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    def began(self, invocation: Invocation) -> contextvars.Token[str]:
        self.seen.append(("began", invocation.task_id, asyncio.current_task()))
        return current_turn.set(invocation.task_id)

    def ended(self, invocation: Invocation, token: contextvars.Token[str]) -> None:
        state = invocation.outcome.result().status.state if invocation.outcome.done() else None
        self.seen.append(("ended", invocation.task_id, state))
        current_turn.reset(token)


async def test_observers_see_each_turn_begin_and_end_in_its_own_task() -> None:
    notes = Notes()
    engine = build_engine(Reads(), MemoryStore(), turn_observers=[notes])
    await engine.start()
    try:
        task: Any = await asyncio.wait_for(engine.send(request("hi")), WAIT)
        assert isinstance(task, Task)
        assert task.status.state is TaskState.COMPLETED
        assert task.status.message.parts[0].text == f"seen {task.id}"
        (began, ended) = notes.seen
        assert began[:2] == ("began", task.id)
        assert began[2] is not asyncio.current_task()  # the turn's task, not the caller's
        assert ended == ("ended", task.id, TaskState.COMPLETED)
        assert current_turn.get() == ""  # nothing leaked into the caller's context
    finally:
        await engine.aclose()
