"""An agent for bench/serve_workers.py: ``tick <count> <ms>`` emits ``count`` artifacts,
one every ``ms`` milliseconds, then completes; ``sleep:<s> ...`` waits, cancellably,
as the echo agent does; anything else is echoed.

    a2ad serve --agent ticker_agent:TickerAgent    # with bench/peers on PYTHONPATH
"""

from __future__ import annotations

import asyncio

from a2ad import Agent, EchoAgent, TaskContext


class TickerAgent(Agent):
    name = "ticker"
    description = "Emits artifacts at a steady pace, or echoes."

    def __init__(self) -> None:
        self.echo = EchoAgent()

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word != "tick":
            await self.echo.run(ctx)
            return
        count, _, ms = rest.partition(" ")
        await ctx.working()
        for i in range(int(count)):
            await asyncio.sleep(float(ms) / 1000)
            await ctx.artifact(f"tick {i}", name=f"tick-{i}")
        await ctx.complete()
