"""The agent the worker tests run in ``a2ad worker`` processes (and in the
``a2ad serve`` that runs it itself, to compare)."""

from __future__ import annotations

import asyncio
import os

from a2ad import Agent, TaskContext

from ..scripted import ScriptedAgent

TURNS = "A2AD_TEST_TURNS"  # a file each turn's start and cancel are noted in


class WorkAgent(Agent):
    """ScriptedAgent (first word: input, hang, chunks, echo, ...), plus ``nap
    <seconds>``: working, sleep, then complete. Each turn it starts, and each
    one canceled, is noted in ``$A2AD_TEST_TURNS`` as ``<what> <task id> <pid>``."""

    name = "work"
    description = "ScriptedAgent, noting its turns in $A2AD_TEST_TURNS."

    def __init__(self) -> None:
        self.scripted = ScriptedAgent()

    async def run(self, ctx: TaskContext) -> None:
        note("start", ctx.task_id)
        word, _, rest = ctx.text.partition(" ")
        try:
            if word == "nap" and len(ctx.history) <= 1:
                await ctx.working("napping")
                await asyncio.sleep(float(rest))
                await ctx.complete("rested")
            else:
                await self.scripted.run(ctx)
        except asyncio.CancelledError:
            note("cancel", ctx.task_id)
            raise


def note(what: str, task_id: str) -> None:
    path = os.environ.get(TURNS)
    if path:
        with open(path, "a") as file:
            file.write(f"{what} {task_id} {os.getpid()}\n")
