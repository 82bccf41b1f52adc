"""An agent that answers with an LLM behind any OpenAI-compatible endpoint,
through the ``openai`` package (the extra ``a2ad[llm]``).

The model's answer streams into one artifact, ``answer``, one chunk per piece
the endpoint sends (``append``, the last with ``lastChunk``). Tools are plain
Python functions (``llm_tools``): each call the model makes and its result are
working messages of internal data parts (``{"name", "id", "args"}``, then
``{"name", "id", "response"}`` or ``{"name", "id", "error"}``), and the model
is asked again until it answers in text, for at most ``max_rounds`` calls.
Each call's token usage is reported (``ctx.usage``, the task's
``metadata.a2ad.usage``). A follow-up task in the same ``contextId``, from the
same caller, is sent the earlier turns (``llm_memory``). A cancel closes the
HTTP request to the model at once. Endpoint failures fail the task with one
line that says what to check and never holds the API key.

``a2ad serve --agent a2ad.agents.llm_agent --model NAME`` serves one with no
tools, configured from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``--model``
(or ``A2AD_MODEL``); in Python, ``LLMAgent(model=..., tools=[fn, ...],
system=...)`` takes the same as arguments and reads nothing from the
environment.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, cast

from ..agent import Agent, AgentSkill, TaskContext
from ..protocol.model import DataPart, new_id
from ..protocol.usage import TokenCounts
from ..wording import plural
from .llm import (
    ENV_BASE_URL,
    ChatReply,
    LLMError,
    LLMNotConfiguredError,
    LLMSettings,
    ToolCall,
    status_message,
)
from .llm_memory import ConversationMemory
from .llm_tools import Tool, ToolError, tool
from .settings import AgentSettings

try:
    import openai
except ImportError as exc:  # the extra: most agents need no LLM client
    raise ImportError(
        f"a2ad.agents.llm_agent needs the openai package: pip install 'a2ad[llm]' ({exc})"
    ) from exc

__all__ = ["LLMAgent", "agent"]

log = logging.getLogger("a2ad.llm_agent")

MAX_ROUNDS = 8
MAX_CALLS_PER_ROUND = 8
MAX_RESULT_CHARS = 12_000  # of one tool result sent back to the model


class LLMAgent(Agent):
    """``LLMAgent(model=..., tools=[fn, ...], system=..., base_url=..., api_key=...)``.

    ``base_url`` defaults to OpenAI's; ``memory`` keeps the conversations
    (default ``ConversationMemory()``: 20 turns for each of 1000 contexts);
    ``timeout`` bounds each wait on the endpoint; ``max_retries`` is the openai
    client's (its default, 2, with backoff, for 429, 5xx and lost connections).
    Raises TypeError at once for a tool whose parameters can't be described.
    Without a model, or with neither ``base_url`` nor ``api_key``, it logs a
    warning when made (``config_problem`` says what to set) and fails its tasks
    with the same words."""

    name = "llm"
    description = "Answers with an LLM, streaming its words, calling its tools as it sees fit."
    skills = (
        AgentSkill(
            id="chat",
            name="Chat",
            description="Answers a message, remembering the earlier ones of the same context.",
            tags=["llm", "chat"],
        ),
    )

    def __init__(
        self,
        *,
        model: str | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        system: str = "",
        base_url: str | None = None,
        api_key: str | None = None,
        memory: ConversationMemory | None = None,
        max_rounds: int = MAX_ROUNDS,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
        self.tools = {t.name: t for t in map(tool, tools)}
        if len(self.tools) != len(tools):
            raise TypeError("two tools have the same name; the model calls them by name")
        self.system = system
        self.memory = memory if memory is not None else ConversationMemory()
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: openai.AsyncOpenAI | None = None  # from start() to stop()
        self.settings: LLMSettings | None = None
        self.config_problem: str | None = None
        try:
            self.settings = LLMSettings.resolve(model=model, base_url=base_url, api_key=api_key)
        except LLMNotConfiguredError as exc:
            self.config_problem = str(exc)
            log.warning("the LLM agent %r can't answer: %s", self.name, exc)

    async def run(self, ctx: TaskContext) -> None:
        if self.settings is None:
            await ctx.fail(self.config_problem)
            return
        earlier = self.memory.recall(ctx)
        if self.system:
            earlier.insert(0, {"role": "system", "content": self.system})
        turn: list[dict[str, Any]] = [{"role": "user", "content": ctx.text}]
        answer = _AnswerStream(ctx)
        specs = [t.spec() for t in self.tools.values()]
        async with contextlib.AsyncExitStack() as own:
            # The agent's client (start), or one for this task when not served.
            client = self._client
            if client is None:
                client = self._new_client()
                own.push_async_callback(client.close)
            for _ in range(self.max_rounds):
                try:
                    reply = await _complete(client, self.settings, [*earlier, *turn], specs, answer)
                except LLMError as exc:
                    log.warning("LLM call failed: %s", exc, extra={"task_id": ctx.task_id})
                    await ctx.fail(str(exc))
                    return
                await reply.report_usage(ctx)
                turn.append(reply.as_message())
                if not reply.tool_calls:
                    if not await answer.close():
                        await ctx.fail("the model answered with no text and no tool calls")
                        return
                    self.memory.remember(ctx, turn)
                    await ctx.complete()
                    return
                for i, call in enumerate(reply.tool_calls):
                    result = await self._call(ctx, call, over=i >= MAX_CALLS_PER_ROUND)
                    turn.append({"role": "tool", "tool_call_id": call.id, "content": result})
        await ctx.fail(
            f"the model still called tools after {plural(self.max_rounds, 'round')}, "
            "with no final answer"
        )

    def _new_client(self) -> openai.AsyncOpenAI:
        assert self.settings is not None
        return openai.AsyncOpenAI(
            api_key=self.settings.api_key or "none",  # the client insists on one
            base_url=self.settings.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    async def start(self) -> None:
        """One client, and its connections, for every task this agent runs."""
        if self.settings is not None and self._client is None:
            self._client = self._new_client()

    async def stop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _call(self, ctx: TaskContext, call: ToolCall, *, over: bool) -> str:
        """Run one call, recording it and its outcome; the outcome as JSON text for the model."""
        try:
            args: Any = json.loads(call.arguments or "{}")
        except ValueError:
            args = call.arguments
        record = {"name": call.name, "id": call.id}
        await ctx.working(ctx.internal(DataPart({**record, "args": args})))
        found = self.tools.get(call.name)
        try:
            if over:
                raise ToolError(f"at most {MAX_CALLS_PER_ROUND} tool calls at once; call it later")
            if found is None:
                names = ", ".join(self.tools) or "none"
                raise ToolError(f"there is no tool {call.name!r}; the tools are {names}")
            outcome: dict[str, Any] = {"response": await found.call(call.arguments)}
        except ToolError as exc:
            outcome = {"error": str(exc)}
        await ctx.working(ctx.internal(DataPart({**record, **outcome})))
        text = json.dumps(outcome.get("response", outcome))
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + " …(cut)"
        return text


class _AnswerStream:
    """The model's text as one artifact's chunks. Each piece is held until the
    next arrives, so that the last one can be sent with ``last_chunk``."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.artifact_id = new_id()
        self._held: str | None = None
        self._sent = False

    async def add(self, piece: str) -> None:
        if self._held is not None:
            await self._send(self._held, last=False)
        self._held = piece

    async def close(self) -> bool:
        """Send the last chunk; False when the model said nothing at all."""
        if self._held is None:
            return False
        await self._send(self._held, last=True)
        self._held = None
        return True

    async def _send(self, piece: str, *, last: bool) -> None:
        await self.ctx.artifact(
            piece, artifact_id=self.artifact_id, name="answer", append=self._sent, last_chunk=last
        )
        self._sent = True


async def _complete(
    client: openai.AsyncOpenAI,
    settings: LLMSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    answer: _AnswerStream,
) -> ChatReply:
    """One streamed completion: its text goes to ``answer`` as it comes."""
    where = settings.shown_url
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: TokenCounts | None = None
    model = settings.model
    chunks = 0
    try:
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        stream = await client.chat.completions.create(
            model=settings.model,
            messages=cast(Any, messages),  # plain dicts of the shapes the chat API takes
            stream=True,
            stream_options={"include_usage": True},
            **extra,
        )
        async with stream:
            async for chunk in stream:
                chunks += 1
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = _counts(chunk.usage)
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        await answer.add(delta.content)
                    for part in delta.tool_calls or ():
                        slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = slot["id"] or part.id or ""
                        if part.function is not None:
                            slot["name"] = slot["name"] or part.function.name or ""
                            slot["arguments"] += part.function.arguments or ""
    except openai.APIStatusError as exc:
        raise LLMError(status_message(settings, exc.status_code, _error_text(exc))) from None
    except openai.APITimeoutError:
        raise LLMError(f"the LLM at {where} gave no answer within {client.timeout} s") from None
    except openai.APIConnectionError:
        raise LLMError(
            f"can't reach the LLM at {where}; is {ENV_BASE_URL} right, and is the server running?"
        ) from None
    except (openai.OpenAIError, ValueError, LookupError, TypeError, AttributeError) as exc:
        raise LLMError(
            f"the LLM at {where} answered something that is not a chat-completion stream "
            f"({type(exc).__name__}); is it OpenAI-compatible?"
        ) from None
    if not chunks:
        raise LLMError(
            f"the LLM at {where} answered something that is not a chat-completion stream "
            "(no events); is it OpenAI-compatible?"
        )
    tool_calls = [
        ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"])
        for index, slot in sorted(calls.items())
    ]
    return ChatReply(content="".join(text), tool_calls=tool_calls, usage=usage, model=model)


def _counts(usage: Any) -> TokenCounts | None:
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    total = usage.total_tokens if usage.total_tokens is not None else None
    numbers = (prompt, completion, total if total is not None else 0)
    if any(type(n) is not int or n < 0 for n in numbers):
        return None  # not counts: nothing to report, and the answer is still good
    return TokenCounts(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total if total is not None else prompt + completion,
    )


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message")
    return body if isinstance(body, str) else ""


def agent(settings: AgentSettings) -> LLMAgent:
    """The LLM agent as ``a2ad serve --agent a2ad.agents.llm_agent`` serves it."""
    return LLMAgent(
        model=settings.model, base_url=settings.llm_base_url, api_key=settings.llm_api_key
    )
