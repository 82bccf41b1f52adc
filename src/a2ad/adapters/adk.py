"""A Google ADK agent served by a2ad: ``a2ad serve --agent pkg.module:root_agent``.

The agent (an ``LlmAgent``, or any ADK ``BaseAgent`` with its sub-agents) runs
unchanged, one ADK ``Runner.run_async`` per task, over an ADK session service
(``InMemorySessionService`` unless one is given). The session is keyed by the
task's context id and the caller's principal, so a follow-up message in the same
context continues the conversation, and two callers never share one.

The user's message goes to ADK as one user ``Content``: text parts as text, data
parts as their JSON text, files as inline data or file URIs. What the run yields
becomes calls on the TaskContext:

- the text of the model's responses is one artifact, ``answer``, sent chunk by
  chunk: as the model streams it (``partial`` events, with ``streaming=True``,
  ADK's SSE mode), else a whole response at a time; the first chunk creates it,
  the next are appended, and when the run ends an empty last chunk closes it.
  The whole response that ADK yields after its partial events repeats their
  text and is not sent again. Files a response holds are chunks too;
- function calls, function responses, code and code results (and thoughts) go
  into working status messages as data parts (text for a thought) marked with
  ADK's own metadata (``adk_type``, ``adk_thought``), which a2ad treats as
  internal (protocol/internal.py): stored and in history, hidden from callers
  other than operators;
- each model call's ``usage_metadata`` (on the whole response, not on partial
  events) is reported with ``ctx.usage``: prompt tokens, candidates tokens as
  completion tokens, ADK's total, under the model that answered;
- an exception in the run (ADK yields it as an event with an ``error_code``,
  then raises it) fails the task: a model call's HTTP error (``openai.APIError``,
  which LiteLLM's errors are; model_errors.py) naming the error class and status, any other
  exception naming its class, as with any agent (never the exception's text,
  which may quote a credential); an error event that the run does not raise
  after (the model stopped for ``MAX_TOKENS``, ``SAFETY``, ...) fails it with
  ADK's code and message.

A cancel interrupts the run at its current ``await`` (the model's HTTP request
is dropped) with ``asyncio.CancelledError``; ADK's generator is closed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent

# StreamingMode is imported where ADK's docs do, though the module doesn't re-export it.
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.genai import types

from ..agent import Agent, TaskContext
from ..protocol.model import DataPart, FilePart, Message, Part, TextPart
from .model_errors import model_error

__all__ = ["AdkAgent"]

ANONYMOUS_USER = "anonymous"  # the ADK user id of a caller with no principal


class AdkAgent(Agent):
    """``agent`` (a Google ADK ``BaseAgent``, usually an ``LlmAgent``) served as
    an agent, as the module docstring says. ``name`` and ``description`` fill the
    card (default: the ADK agent's own); ``session_service`` keeps the
    conversations (default: in memory, lost at restart); ``streaming=False`` asks
    the model for whole responses. TypeError if ``agent`` is not an ADK agent."""

    def __init__(
        self,
        agent: BaseAgent,
        *,
        name: str = "",
        description: str = "",
        session_service: BaseSessionService | None = None,
        streaming: bool = True,
    ) -> None:
        if not isinstance(agent, BaseAgent):
            raise TypeError(
                f"{type(agent).__name__} is not a Google ADK agent (google.adk.agents.BaseAgent)"
            )
        self.adk_agent = agent
        self.name = name or agent.name
        self.description = (
            description or agent.description or f"The {self.name} agent (a Google ADK agent)."
        )
        self.sessions = session_service or InMemorySessionService()
        self._runner = Runner(app_name=agent.name, agent=agent, session_service=self.sessions)
        mode = StreamingMode.SSE if streaming else StreamingMode.NONE
        self._config = RunConfig(streaming_mode=mode)
        self._model = _model_name(agent)
        _import_model_client()

    async def run(self, ctx: TaskContext) -> None:
        app, user = self._runner.app_name, ctx.request.caller.principal or ANONYMOUS_USER
        session = await self.sessions.get_session(
            app_name=app, user_id=user, session_id=ctx.context_id
        )
        if session is None:
            await self.sessions.create_session(
                app_name=app, user_id=user, session_id=ctx.context_id
            )
        events = self._runner.run_async(
            user_id=user,
            session_id=ctx.context_id,
            new_message=_content(ctx.message),
            run_config=self._config,
        )
        turn = _Turn(ctx, self._model)
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    if not await turn.take(event):
                        return
        except Exception as exc:
            reason = model_error(exc)
            if reason is None:
                raise
            await ctx.fail(reason)
            return
        if turn.error is not None:
            await ctx.fail(turn.error)
            return
        await turn.close_answer()


class _Turn:
    """What one run's events have done so far: the answer artifact, streamed."""

    def __init__(self, ctx: TaskContext, model: str) -> None:
        self.ctx = ctx
        self.model = model
        self.answer: str | None = None  # the artifact id, once its first chunk is sent
        self.streamed = False  # the current model response's text came as partial events
        self.error: str | None = None  # the failed task's message, if the run ends now

    async def take(self, event: Event) -> bool:
        """Act on ``event``; False once the task has ended (nothing more to do)."""
        if event.error_code:
            # An exception comes as this event first, then is raised: wait for it.
            detail = f": {event.error_message}" if event.error_message else ""
            self.error = f"The agent stopped: {event.error_code}{detail}"
            return True
        parts = list(event.content.parts or []) if event.content else []
        if event.partial:
            text = "".join(p.text for p in parts if p.text and not p.thought)
            if not text:
                return True  # a partial function call, or a thought: the whole one follows
            self.streamed = True
            return await self._add(TextPart(text))
        if event.usage_metadata is not None:
            await self._usage(event)
        answer: list[Part] = []
        steps: list[Part] = []
        for part in parts:
            _convert(part, answer, steps)
        if self.streamed:  # the whole response repeats the text streamed already
            self.streamed = False
            answer = [p for p in answer if p.kind != "text"]
        if answer and not await self._add(answer):
            return False
        return not steps or await self.ctx.working(steps)

    async def _add(self, parts: Part | list[Part]) -> bool:
        sent = await self.ctx.artifact(
            parts, artifact_id=self.answer, name="answer", append=self.answer is not None
        )
        if sent is False:
            return False
        self.answer = sent
        return True

    async def close_answer(self) -> None:
        # Which chunk is the last is known only once the run has ended.
        if self.answer is not None:
            await self.ctx.artifact(
                TextPart(""), artifact_id=self.answer, append=True, last_chunk=True
            )

    async def _usage(self, event: Event) -> None:
        usage = event.usage_metadata
        assert usage is not None
        prompt = usage.prompt_token_count or 0
        completion = usage.candidates_token_count or 0
        await self.ctx.usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=usage.total_token_count or prompt + completion,
            model=event.model_version or self.model,
        )


def _convert(part: types.Part, answer: list[Part], steps: list[Part]) -> None:
    """``part`` (ADK's) added to the answer's parts or to the internal steps."""
    for kind in ("function_call", "function_response", "executable_code", "code_execution_result"):
        value = getattr(part, kind)
        if value is not None:
            data = value.model_dump(mode="json", exclude_none=True)
            steps.append(DataPart(data, metadata={"adk_type": kind}))
            return
    if part.text is not None and part.thought:
        steps.append(TextPart(part.text, metadata={"adk_thought": True}))
    elif part.text:
        answer.append(TextPart(part.text))
    elif part.inline_data is not None and part.inline_data.data is not None:
        blob = part.inline_data
        answer.append(
            FilePart(
                raw=blob.data, filename=blob.display_name or "", media_type=blob.mime_type or ""
            )
        )
    elif part.file_data is not None and part.file_data.file_uri:
        ref = part.file_data
        answer.append(
            FilePart(
                url=ref.file_uri, filename=ref.display_name or "", media_type=ref.mime_type or ""
            )
        )


def _content(message: Message) -> types.Content:
    """The user's message as ADK's user Content."""
    parts: list[types.Part] = []
    for part in message.parts:
        if isinstance(part.text, str):
            parts.append(types.Part(text=part.text))
        elif part.kind == "data":
            parts.append(types.Part(text=json.dumps(part.data, ensure_ascii=False)))
        elif isinstance(part.raw, bytes):
            blob = types.Blob(
                data=part.raw,
                mime_type=part.media_type or "application/octet-stream",
                display_name=part.filename or None,
            )
            parts.append(types.Part(inline_data=blob))
        elif isinstance(part.url, str):
            ref = types.FileData(
                file_uri=part.url,
                mime_type=part.media_type or None,
                display_name=part.filename or None,
            )
            parts.append(types.Part(file_data=ref))
    return types.Content(role="user", parts=parts)


def _model_name(agent: BaseAgent) -> str:
    """The root agent's model, for usage an event does not name the model of."""
    if not isinstance(agent, LlmAgent):
        return ""
    model: Any = agent.model
    if isinstance(model, str):
        return model
    return str(getattr(model, "model", "") or "")


def _import_model_client() -> None:
    # ADK imports LiteLLM on the first model call, which blocks the event loop (every
    # task of the server) for seconds; an agent that uses LiteLlm pays it at load.
    if "google.adk.models.lite_llm" in sys.modules:
        importlib.import_module("litellm")
