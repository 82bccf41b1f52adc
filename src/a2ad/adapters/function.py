"""A plain function as an agent: ``a2ad serve --agent pkg.module:func``.

How the function is called, read from its signature once, when it is wrapped:

- its first parameter is named ``ctx`` (or annotated ``TaskContext``): it gets the
  TaskContext and acts through it, as ``Agent.run`` does;
- otherwise its first parameter gets the user's text (``ctx.text``), and the
  keyword parameters it names among ``ctx`` (the TaskContext) and ``cancelled``
  (a ``threading.Event`` set when the task is canceled) are given too; any
  other parameter needs a default.

What it returns answers the task: nothing (None) lets the task complete; text, a
Part, a list of parts or a dict (one data part) becomes one artifact; a Message
is the reply (a single Message and no task, when nothing came before). An async
generator streams what it yields (text, a Part or parts) as the chunks of one
artifact; its end sends the last chunk.

A coroutine function or an async generator runs on the event loop, and a cancel
interrupts it with ``asyncio.CancelledError`` at its next ``await``. A blocking
(sync) function runs in a worker thread of the loop's default executor, so it
stops neither the server nor other tasks; a cancel ends the task at once, sets
the ``cancelled`` event (``ctx.cancelled`` turns True as well), and drops what
the function returns after that, so it should check the event and return. From
the thread it may read ``ctx`` (text, history, ids, metadata) but not call its
async methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..agent import Agent, TaskContext
from ..protocol.model import DataPart, Message, Part, TextPart

__all__ = ["FunctionAgent"]

_CONTEXT_NAMES = ("ctx",)
_KEYWORDS = ("ctx", "cancelled")  # what a function that takes text may also ask for
_CAN_BE_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class FunctionAgent(Agent):
    """``fn`` served as an agent, called as the module docstring says; ``name``
    and ``description`` fill the card (default: the function's name and its
    docstring). A signature that cannot be called that way
    raises TypeError here, naming the parameter."""

    def __init__(self, fn: Callable[..., Any], *, name: str = "", description: str = "") -> None:
        self._fn = fn
        self.name = name or getattr(fn, "__name__", "") or type(fn).__name__
        doc = (fn.__doc__ or "").strip()
        self.description = description or doc or f"The {self.name} agent."
        code: Any = fn
        if not inspect.isroutine(fn) and not isinstance(fn, functools.partial):
            code = type(fn).__call__  # an object with a __call__ method
        self._streams = inspect.isasyncgenfunction(code)
        self._blocks = not self._streams and not inspect.iscoroutinefunction(code)
        if inspect.isgeneratorfunction(code):
            raise TypeError(
                f"function agent {self.name!r} is a generator: make it an async generator "
                "(`async def` with `yield`) to stream chunks"
            )
        self._takes, self._keywords = _calling_convention(fn, self.name)

    async def run(self, ctx: TaskContext) -> None:
        cancelled = threading.Event()
        call = self._bind(ctx, cancelled)
        if self._streams:
            await _stream(ctx, call(), self.name)
            return
        try:
            result = await asyncio.to_thread(call) if self._blocks else await call()
        except asyncio.CancelledError:
            # A thread cannot be interrupted: tell the function, which returns when it
            # checks; its result is dropped, since the task has ended (to_thread).
            cancelled.set()
            raise
        await _answer(ctx, result, self.name)

    def _bind(self, ctx: TaskContext, cancelled: threading.Event) -> Callable[[], Any]:
        if self._takes == "ctx":
            return functools.partial(self._fn, ctx)
        given = {"ctx": ctx, "cancelled": cancelled}
        kwargs = {key: given[key] for key in self._keywords}
        args = (ctx.text,) if self._takes == "text" else ()
        return functools.partial(self._fn, *args, **kwargs)


def _calling_convention(fn: Callable[..., Any], name: str) -> tuple[str, tuple[str, ...]]:
    """What ``fn`` takes first ("ctx", "text" or "nothing"), and which of
    ``_KEYWORDS`` it takes after the text; TypeError if a parameter has no value."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): text only
        return "text", ()
    positional = [p for p in params if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    first = positional[0] if positional else None
    keywords: tuple[str, ...] = ()
    if first is not None and first.kind != first.VAR_POSITIONAL and _is_context(first):
        takes = "ctx"
    else:
        takes = "text" if first is not None else "nothing"
        keywords = tuple(
            p.name for p in params if p.name in _KEYWORDS and p.kind in _CAN_BE_KEYWORD
        )
    for p in params:
        if p is first or p.name in keywords or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            raise TypeError(
                f"function agent {name!r}: nothing to pass to its parameter {p.name!r}; a "
                "function agent takes the user's text first, then optionally `ctx` and "
                "`cancelled` as keywords (or the TaskContext alone, as `ctx`); give the "
                "others defaults"
            )
    return takes, keywords


def _is_context(param: inspect.Parameter) -> bool:
    annotation = param.annotation
    if annotation is TaskContext:
        return True
    if isinstance(annotation, str):  # `from __future__ import annotations`
        return annotation.rpartition(".")[2] == "TaskContext"
    return param.name in _CONTEXT_NAMES


async def _answer(ctx: TaskContext, result: Any, name: str) -> None:
    if result is None:
        return
    if isinstance(result, Message):
        await ctx.reply(result)
        return
    await ctx.artifact(_parts(result, name, "returned"))


async def _stream(ctx: TaskContext, chunks: AsyncIterator[Any], name: str) -> None:
    artifact_id: str | None = None
    async with contextlib.aclosing(chunks):  # type: ignore[type-var]
        async for chunk in chunks:
            sent = await ctx.artifact(
                _parts(chunk, name, "yielded"),
                artifact_id=artifact_id,
                append=artifact_id is not None,
            )
            if sent is False:  # the task has ended
                return
            artifact_id = sent
    if artifact_id is not None:
        # Which chunk is the last is known only once the generator has ended; holding
        # each chunk back until the next arrives would delay every one, so the last
        # chunk is an empty text part.
        await ctx.artifact(TextPart(""), artifact_id=artifact_id, append=True, last_chunk=True)


def _parts(value: Any, name: str, did: str) -> list[Part]:
    if isinstance(value, str):
        return [TextPart(value)]
    if isinstance(value, Part):
        return [value]
    if isinstance(value, dict):
        return [DataPart(value)]
    if isinstance(value, Sequence) and value and all(isinstance(p, Part) for p in value):
        return list(value)
    raise TypeError(
        f"function agent {name!r} {did} {type(value).__name__}: give text, a Part, a "
        "non-empty list of parts, a dict (a data part)"
        + (" or a Message" if did == "returned" else "")
    )
