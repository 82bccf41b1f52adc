"""Agents that pick their tasks up after a restart, for tests/engine/test_adoption.py
(``a2ad serve --agent tests.engine.resuming_agents:Stubborn``)."""

from __future__ import annotations

import asyncio

from a2ad import Agent, Task, TaskContext


class Resumable(Agent):
    """Works forever, noting each turn; picks up every task."""

    name = "resumable"

    def __init__(self) -> None:
        self.turns: list[tuple[str, bool]] = []  # (task id, resumed)

    def resumes(self, task: Task) -> bool:
        return True

    async def run(self, ctx: TaskContext) -> None:
        self.turns.append((ctx.task_id, ctx.resumed))
        await ctx.working("on it")
        await asyncio.sleep(3600)


class Stubborn(Resumable):
    """Its ``resumes`` raises: its orphans must still be failed, and the server start."""

    name = "stubborn"

    def resumes(self, task: Task) -> bool:
        raise RuntimeError("resumes() is broken")
