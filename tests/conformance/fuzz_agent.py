"""The agent the wire fuzzer's server runs: every kind of turn, none that raises or
blocks, so whatever the fuzzer sends, a request is answered promptly and nothing
an agent does puts a traceback in the server's log.

The first word of the text picks the turn: ``input`` asks for input, ``auth`` for
authentication, ``fail`` and ``reject`` end that way, ``reply`` answers with a
single Message, ``chunks`` streams one artifact in three chunks, ``hold-<token>``
works until cancelled (``HOLD``; the fuzzer never sends that word); anything else is
echoed as an artifact and the task completes.
"""

from __future__ import annotations

import asyncio

from a2ad import Agent, TaskContext

__all__ = ["HOLD", "FuzzAgent"]

HOLD = "hold-5b0d7c1e"


class FuzzAgent(Agent):
    name = "fuzz"
    description = "Every kind of turn, chosen by the first word of the message."

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if len(ctx.history) > 1:  # a follow-up turn
            await ctx.artifact(f"got: {ctx.text}")
            await ctx.complete()
            return
        if word == "reply":
            await ctx.reply(rest or "hi")
            return
        await ctx.working("on it")
        if word == HOLD:
            await asyncio.Event().wait()
        elif word == "input":
            await ctx.require_input(rest or "which one?")
        elif word == "auth":
            await ctx.require_auth("please sign in")
        elif word == "fail":
            await ctx.fail("it broke")
        elif word == "reject":
            await ctx.reject("won't do that")
        elif word == "chunks":
            for i in range(3):
                await ctx.artifact(f"c{i}", artifact_id="stream", append=i > 0, last_chunk=i == 2)
            await ctx.complete()
        else:
            await ctx.artifact(ctx.text, name="echo")
            await ctx.complete()
