"""Plain functions written the ways docs/agents.md shows, for the function adapter's tests.

The functions that block or wait record what happened to them in ``Probe``s, which
the tests (on another thread than the server's loop) wait on."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

from a2ad import DataPart, Message, Part, Role, TaskContext, TextPart
from a2ad.protocol.model import new_id


class Probe:
    """What a function did: started, stopped (returned or raised), and how."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.saw_cancel = False
        self.ctx_cancelled = False

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


async def shout(text: str) -> str:
    """Answers with the text in capitals."""
    return text.upper()


def count_words(text: str) -> dict[str, int]:
    """Counts words, on a worker thread (it is sync)."""
    return {"words": len(text.split())}


async def with_context(text: str, *, ctx: TaskContext) -> list[Part]:
    await ctx.working("thinking")
    return [TextPart(f"{text} in {ctx.task_id}"), DataPart({"turns": len(ctx.history)})]


def nothing() -> None:
    """Takes no parameter and returns nothing: the task completes empty."""


async def as_message(text: str) -> Message:
    return Message(message_id=new_id(), role=Role.AGENT, parts=[TextPart(f"re: {text}")])


async def tokens(text: str) -> AsyncIterator[str]:
    """Streams the words of the text back, one chunk each."""
    for word in text.split():
        await asyncio.sleep(0.01)
        yield word


async def broken(text: str) -> str:
    raise RuntimeError("secret detail")


def broken_sync(text: str) -> str:
    raise KeyError("secret detail")


async def bad_return(text: str) -> int:
    return 42


BLOCKING = Probe()


def blocking(text: str, *, ctx: TaskContext, cancelled: threading.Event) -> str:
    """Works in slices until done or canceled, checking the token between slices."""
    BLOCKING.started.set()
    try:
        for _ in range(2000):  # 20 s at most
            if cancelled.is_set():
                BLOCKING.saw_cancel = True
                BLOCKING.ctx_cancelled = ctx.cancelled
                return "too late"
            time.sleep(0.01)
        return "done"
    finally:
        BLOCKING.stopped.set()


STREAMING = Probe()
RELEASE = threading.Event()


async def slow_stream(text: str) -> AsyncIterator[str]:
    """Yields one chunk, then waits to be released (or canceled)."""
    STREAMING.started.set()
    try:
        yield "first"
        while not RELEASE.is_set():
            await asyncio.sleep(0.01)
        yield "second"
    except asyncio.CancelledError:
        STREAMING.saw_cancel = True
        raise
    finally:
        STREAMING.stopped.set()


async def run(ctx: TaskContext) -> None:
    """The TaskContext form: acts through ctx, as Agent.run does."""
    await ctx.require_input(f"more than {ctx.text!r}?")


def needs_more(text: str, limit: int) -> str:
    return text[:limit]


def sync_gen(text: str):  # type: ignore[no-untyped-def]
    yield text


async def credential_seen(text: str) -> str:
    """Whether the turn sees its caller's credential (a2ad.agent.caller_credential)."""
    from a2ad.agent import caller_credential

    return "kept" if caller_credential() else "none"
