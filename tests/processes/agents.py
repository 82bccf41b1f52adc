"""The agent the ``--workers`` tests serve (``--agent tests.processes.agents:ProcessAgent``).
Its first word chooses what it does; what happens inside a process is printed on
a line of its own ending in ``pid=<the process's pid>``, which the tests read from
the server's output (every process of a group writes to it). Times printed are
``time.monotonic()``, one clock for every process of the machine.

pid               complete with "pid <pid>": which process a connection reaches
hang              print "started <task>", sleep until cancelled, then print
                  "cancelled <task> <time>"
steps <n> <s>     n artifacts, one every s seconds, then complete
input             ask for input; the follow-up completes with "pid <pid> got <text>"
anything else     complete at once
"""

from __future__ import annotations

import asyncio
import os
import time

from a2ad import Agent, TaskContext


def say(line: str) -> None:
    print(f"{line} pid={os.getpid()}", flush=True)


class ProcessAgent(Agent):
    name = "processes"
    description = "Says its pid, hangs, steps, asks for input."

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if len(ctx.history) > 1:  # a follow-up
            await ctx.complete(f"pid {os.getpid()} got {ctx.text}")
        elif word == "pid":
            await ctx.complete(f"pid {os.getpid()}")
        elif word == "hang":
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
        elif word == "input":
            await ctx.require_input("what now?")
        else:
            await ctx.complete("done")
