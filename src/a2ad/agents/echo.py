"""The built-in echo agent: answers with an artifact holding the text it got.

A text that starts with ``sleep:<seconds> `` makes it wait that long first (at
most an hour), cancellably: the convention a2ad's load and cancel tests use.
"""

from __future__ import annotations

import asyncio
import re

from ..agent import Agent, AgentSkill, TaskContext

__all__ = ["EchoAgent"]

_SLEEP = re.compile(r"sleep:(\d+(?:\.\d+)?)(?:\s+|$)")
MAX_SLEEP_SECONDS = 3600.0


class EchoAgent(Agent):
    name = "echo"
    description = "Echoes the text it receives back as an artifact."
    skills = (
        AgentSkill(
            id="echo",
            name="Echo",
            description="Returns the message text as an artifact; "
            "'sleep:<seconds> <text>' waits first.",
            tags=["echo", "test"],
            examples=["hello", "sleep:2 hello after two seconds"],
        ),
    )

    def __init__(self, *, final_message: bool = False) -> None:
        # The plain echo answers with the artifact alone (what the benchmarks
        # measure); final_message also completes with the text as the agent's
        # message, which the task's history then holds (the demo agent's way).
        self.final_message = final_message

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working()
        text = ctx.text
        match = _SLEEP.match(text)
        if match:
            await asyncio.sleep(min(float(match.group(1)), MAX_SLEEP_SECONDS))
            text = text[match.end() :]
        await ctx.artifact(text, name="echo")
        await ctx.complete(text if self.final_message and text else None)
