"""A PraisonAI agent served by a2ad: ``a2ad serve --agent pkg.module:agent``.

Each turn runs on a copy of the ``praisonaiagents.Agent`` made with its own
``clone_for_channel()`` (same instructions, model, tools and settings; its own
chat history and locks), so that tasks running at once share no conversation.
The copy's history is the task's earlier messages (text parts only, internal
parts left out), and ``chat(<the user's text>)`` answers; its reply is one
artifact, ``answer``.

``chat`` is blocking: it runs in a worker thread, as a sync function agent does
(``adapters.function``). A cancel ends the task at once and sets the cancel
token that ``chat`` takes (``cancel_token``); the run itself stops at its next
tool call, which is refused, and what it returns after the cancel is dropped.

Each tool the agent runs is recorded, through a ``wrap_tool_call`` middleware
added to the copy, as working updates of internal data parts: ``{"name",
"args"}`` before it runs, ``{"name", "response"}`` (or ``"error"``) after.

Not carried over: PraisonAI's own streaming (``iter_stream``) hands its chunks
over only once the model has answered, and skips guardrails, so a2ad calls
``chat``; and PraisonAI keeps no token usage for an OpenAI-compatible endpoint
(its cost summary stays at zero), so none is reported. A reply of ``None``
(PraisonAI's answer when its model call failed, after its retries) fails the
task; an exception (a tool's, after PraisonAI's retries) fails it as any
agent's does.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from praisonaiagents import Agent as PraisonAIAgent  # type: ignore[import-untyped]
from praisonaiagents.hooks.middleware import wrap_tool_call  # type: ignore[import-untyped]

from ..agent import Agent, TaskContext
from ..protocol.internal import is_internal
from ..protocol.model import DataPart, Message, Part, Role, TextPart

__all__ = ["PraisonAgent"]

NO_ANSWER = "The PraisonAI agent gave no answer (its model call failed; see the server log)"


class PraisonAgent(Agent):
    """``agent`` (a ``praisonaiagents.Agent``) served as an agent, as the module
    docstring says; ``name`` and ``description`` fill the card (default: the
    agent's name and role). TypeError if ``agent`` is not a PraisonAI Agent."""

    def __init__(self, agent: PraisonAIAgent, *, name: str = "", description: str = "") -> None:
        if not isinstance(agent, PraisonAIAgent):
            raise TypeError(f"{type(agent).__name__} is not a praisonaiagents.Agent")
        self.agent = agent
        self.name = name or str(agent.name or "") or "praisonai"
        role = agent.role if isinstance(agent.role, str) else ""
        self.description = description or role or f"The {self.name} agent (PraisonAI)."

    async def run(self, ctx: TaskContext) -> None:
        cancelled = threading.Event()
        loop = asyncio.get_running_loop()

        def step(content: Part) -> None:  # on the worker thread
            if cancelled.is_set():
                return
            # Waits only until the update is queued (ctx.working does not wait for
            # the write), so the steps stay in order and the thread is not held.
            asyncio.run_coroutine_threadsafe(ctx.working(ctx.internal(content)), loop).result()

        def record(request: Any, call_next: Any) -> Any:
            if cancelled.is_set():
                raise InterruptedError("the task was canceled")
            step(DataPart({"name": request.tool_name, "args": dict(request.arguments)}))
            response = call_next(request)
            error = getattr(response, "error", None)
            outcome = (
                {"error": str(error)}
                if error
                else {"response": _jsonable(getattr(response, "result", response))}
            )
            step(DataPart({"name": request.tool_name, **outcome}))
            return response

        with warnings.catch_warnings():
            # clone_for_channel warns of a deprecated attribute it finds on every
            # agent it copies (its own default, not the user's doing).
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = self.agent.clone_for_channel()
        agent._hooks.append(
            wrap_tool_call(record)
        )  # the copy's middleware list, read at its first call
        agent.chat_history = _conversation(ctx.history[:-1])
        try:
            reply = await asyncio.to_thread(agent.chat, ctx.text, cancel_token=cancelled)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        if reply is None:
            await ctx.fail(NO_ANSWER)
            return
        await ctx.artifact(TextPart(str(reply)), name="answer")


def _conversation(history: Iterable[Message]) -> list[dict[str, str]]:
    turns = []
    for message in history:
        text = "\n".join(
            p.text for p in message.parts if isinstance(p.text, str) and not is_internal(p)
        )
        if text:
            role = "user" if message.role is Role.USER else "assistant"
            turns.append({"role": role, "content": text})
    return turns


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)
