"""The agent the multi-instance and ``--workers`` tests serve
(``--agent tests.multi.agents:MultiAgent``).
What it does is chosen by the message's first word; what happens inside the
process (a turn starting, the agent being cancelled) is printed on a line of its
own, which the test reads from the instance's output. The times printed are
``time.monotonic()``, one clock for every process on the machine (Linux).

hang              print "started <task>", sleep until cancelled, then
                  print "cancelled <task> <time>"
pid               complete with "pid <pid>": which process a connection reaches
steps <n> <s>     n artifacts, one every s seconds, then complete
busy <t> <s>      keep the event loop blocked s seconds at a time (time.sleep),
                  for t seconds in all, then complete: a slow instance
input             ask for input; the follow-up turn prints "turn <task> begin/end"
                  around a sleep of the seconds the follow-up's text gives (0 if
                  it gives none), then completes with "pid <pid> got <text>"
anything else     complete at once
"""

from __future__ import annotations

import asyncio
import os
import time

from a2ad import Agent, TaskContext


def say(line: str) -> None:
    print(f"{line} pid={os.getpid()}", flush=True)


class MultiAgent(Agent):
    name = "multi"
    description = "Hangs, steps, asks for input; prints what it does."

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if len(ctx.history) > 1:  # a follow-up
            say(f"turn {ctx.task_id} begin")
            seconds = ctx.text if ctx.text.replace(".", "", 1).isdigit() else "0"
            await asyncio.sleep(float(seconds))
            say(f"turn {ctx.task_id} end")
            await ctx.complete(f"pid {os.getpid()} got {ctx.text}")
            return
        if word == "pid":
            await ctx.complete(f"pid {os.getpid()}")
            return
        if word == "hang":
            await ctx.working("hanging")
            say(f"started {ctx.task_id}")
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                say(f"cancelled {ctx.task_id} {time.monotonic():.6f}")
                raise
        elif word == "steps":
            count, _, every = rest.partition(" ")
            await ctx.working("stepping")
            for i in range(int(count)):
                await asyncio.sleep(float(every or 0))
                await ctx.artifact(f"step {i}", name=f"step-{i}")
            await ctx.complete()
        elif word == "busy":
            total, _, chunk = rest.partition(" ")
            await ctx.working("busy")
            until = time.monotonic() + float(total)
            while time.monotonic() < until:
                time.sleep(float(chunk))  # blocks the whole instance, upkeep too
                await asyncio.sleep(0.05)
            await ctx.complete("done")
        elif word == "input":
            await ctx.require_input("how long?")
        else:
            await ctx.complete("done")
