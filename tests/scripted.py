"""A test agent whose behaviour is chosen by the first word of the message text.

echo <text>      artifact <text>, complete      (anything unknown does this too)
input <q>        ask for input; the follow-up's text is echoed, then complete
auth             ask for auth
reply <text>     answer with a single Message (no task)
fail / reject    end that way with a message
raise            raise an exception
chunks <n>       one artifact streamed in n chunks, then complete
parts            one artifact per part kind (text, data, raw file, url file)
hang             record when it starts and is cancelled; sleeps forever
late             complete, then keep emitting (must be dropped; each call's result kept)
nothing          return without emitting anything
"""

from __future__ import annotations

import asyncio
import threading
import time

from a2ad import Agent, DataPart, FilePart, TaskContext, TextPart


class ScriptedAgent(Agent):
    name = "scripted"
    description = "Test agent driven by the first word of the message."

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[str, float] = {}
        self.cancelled: dict[str, float] = {}
        self.late_results: list[bool | str] = []

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if ctx.history and len(ctx.history) > 1:  # a follow-up turn
            await ctx.artifact(f"got: {ctx.text}", name="answer")
            await ctx.complete()
            return
        if word == "reply":
            await ctx.reply(rest or "hi")
            return
        if word == "nothing":
            return
        await ctx.working("on it")
        if word == "input":
            await ctx.require_input(rest or "which one?")
        elif word == "auth":
            await ctx.require_auth("please sign in")
        elif word == "fail":
            await ctx.fail("it broke")
        elif word == "reject":
            await ctx.reject("won't do that")
        elif word == "raise":
            raise RuntimeError("secret internal detail")
        elif word == "chunks":
            count = int(rest or "3")
            for i in range(count):
                await ctx.artifact(
                    f"c{i}", artifact_id="stream", append=i > 0, last_chunk=i == count - 1
                )
            await ctx.complete()
        elif word == "parts":
            await ctx.artifact("plain text", name="text")
            await ctx.artifact(DataPart({"n": 1, "xs": [1, 2]}), name="data")
            await ctx.artifact(
                FilePart(
                    raw=b"\x00\x01bytes", filename="b.bin", media_type="application/octet-stream"
                ),
                name="raw",
            )
            await ctx.artifact(
                FilePart(
                    url="https://example.com/f.pdf", filename="f.pdf", media_type="application/pdf"
                ),
                name="url",
            )
            await ctx.artifact([TextPart("a"), TextPart("b")], name="multi")
            await ctx.complete("done")
        elif word == "hang":
            with self.lock:
                self.started[ctx.task_id] = time.monotonic()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                with self.lock:
                    self.cancelled[ctx.task_id] = time.monotonic()
                raise
        elif word == "late":
            await ctx.complete("first")
            self.late_results.append(await ctx.working("again"))
            self.late_results.append(await ctx.artifact("too late", name="late"))
            self.late_results.append(await ctx.fail("too late"))
        else:
            await ctx.artifact(rest or ctx.text, name="echo")
            await ctx.complete()
