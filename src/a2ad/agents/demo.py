"""The built-in demo agent (``a2ad serve --agent demo``): the echo agent, plus a
question and a streamed artifact, to try multi-turn tasks and streaming with.

``input <question>`` asks the question (the task waits in input-required); the
answer, sent to that task, completes it with the artifact ``got: <answer>``.
``chunks <n>`` streams one artifact in n chunks (at most 100), a moment apart.
Anything else is echoed, ``sleep:<seconds> `` included, as the echo agent does.
"""

from __future__ import annotations

import asyncio

from ..agent import Agent, AgentSkill, TaskContext
from .echo import EchoAgent

__all__ = ["DemoAgent"]

MAX_CHUNKS = 100
CHUNK_PAUSE_SECONDS = 0.1  # long enough to see the artifact grow, short for tests


class DemoAgent(Agent):
    name = "demo"
    description = (
        "Shows what a task can do: asks a question ('input …'), streams an artifact "
        "('chunks N'), and echoes anything else."
    )
    skills = (
        *EchoAgent.skills,
        AgentSkill(
            id="input",
            name="Ask",
            description="'input <question>' asks the question; the answer sent to the task "
            "completes it with 'got: <answer>'.",
            tags=["multi-turn", "demo"],
            examples=["input which colour?"],
        ),
        AgentSkill(
            id="chunks",
            name="Stream",
            description=f"'chunks <n>' streams one artifact in n chunks (at most {MAX_CHUNKS}).",
            tags=["streaming", "demo"],
            examples=["chunks 3"],
        ),
    )

    def __init__(self, *, chunk_pause: float = CHUNK_PAUSE_SECONDS) -> None:
        self.echo = EchoAgent(final_message=True)
        self.chunk_pause = chunk_pause

    async def run(self, ctx: TaskContext) -> None:
        if len(ctx.history) > 1:  # the answer to the question this task asked
            answer = f"got: {ctx.text}"
            await ctx.artifact(answer, name="answer")
            await ctx.complete(answer)
            return
        word, _, rest = ctx.text.strip().partition(" ")
        if word == "input":
            await ctx.working("on it")
            await ctx.require_input(rest.strip() or "which one?")
        elif word == "chunks" and (rest.strip() or "3").isdigit():
            await self._chunks(ctx, min(int(rest.strip() or "3"), MAX_CHUNKS))
        else:
            await self.echo.run(ctx)

    async def _chunks(self, ctx: TaskContext, count: int) -> None:
        await ctx.working("on it")
        chunks = [f"c{i}" for i in range(count)]
        for i, chunk in enumerate(chunks):
            if i:
                await asyncio.sleep(self.chunk_pause)
            last = i == count - 1
            await ctx.artifact(
                chunk, artifact_id="stream", name="stream", append=i > 0, last_chunk=last
            )
        await ctx.complete("".join(chunks))
