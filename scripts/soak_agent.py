"""The agent scripts/soak.py serves: it takes some time, may ask for input, and
streams its answer as artifact chunks, so every kind of request has something to
wait for, follow up or cut.

The task's first message says what to do: ``soak chunks=N delay=S ask=0|1``. With
``ask=1`` the first turn pauses at input-required; any follow-up continues it.
The answer is one artifact, ``result``, sent as N appended chunks ``[i/N]``, one
every S seconds; `expected_result` is its whole text, which the soak test checks.
"""

from __future__ import annotations

import asyncio
import re

from a2ad import Agent, Role, TaskContext

__all__ = ["SoakAgent", "agent", "expected_result", "spec_text"]

_SPEC = re.compile(r"soak chunks=(\d+) delay=(\d+(?:\.\d+)?) ask=([01])")


def spec_text(chunks: int, delay: float, ask: bool) -> str:
    return f"soak chunks={chunks} delay={delay:g} ask={int(ask)}"


def expected_result(chunks: int) -> str:
    return "".join(f"[{i}/{chunks}]" for i in range(chunks))


class SoakAgent(Agent):
    name = "soak"
    description = "Streams a few artifact chunks slowly; may ask for input first."

    async def run(self, ctx: TaskContext) -> None:
        asks = [m for m in ctx.history if m.role == Role.USER]
        first = asks[0].text if asks else ctx.text
        match = _SPEC.fullmatch(first.strip())
        if match is None:
            await ctx.fail(f"not a soak spec: {first[:60]!r}")
            return
        chunks, delay, ask = int(match[1]), float(match[2]), match[3] == "1"
        await ctx.working("started")
        if ask and len(asks) == 1:
            await asyncio.sleep(delay)
            await ctx.require_input("send anything to go on")
            return
        artifact_id: str | None = None
        for i in range(chunks):
            await asyncio.sleep(delay)
            chunk = f"[{i}/{chunks}]"
            artifact_id = await ctx.artifact(
                chunk,
                artifact_id=artifact_id,
                name="result",
                append=artifact_id is not None,
                last_chunk=i == chunks - 1,
            )
        await ctx.complete("done")


agent = SoakAgent()
