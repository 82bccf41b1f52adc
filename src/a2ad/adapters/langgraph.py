"""A compiled LangGraph graph served by a2ad: ``a2ad serve --agent pkg.module:graph``.

The graph's state must hold its conversation under ``messages`` (``MessagesState``,
or any state with an ``add_messages`` channel of that name). Each turn runs the
graph once, with ``astream(..., stream_mode=["messages", "updates"])``:

- **input**: the task's history as LangChain messages (the user's as
  ``HumanMessage``, the agent's as ``AIMessage``, each with its A2A message id as
  its id, text parts only, internal parts left out), under ``messages``;
- **answer**: the text of every AI message the graph streams (a chat model's
  tokens, or a whole message a node returns) is sent as the chunks of one
  artifact, ``answer``, the first creating it and the others appended; when the
  run ends, an empty last chunk closes it. Text a model writes before it calls
  a tool is part of the answer too: it is what the model said to the user;
- **tool calls and results** (an AI message's ``tool_calls``, a
  ``ToolMessage``) are recorded as working updates of internal data parts,
  ``{"name", "args", "id"}`` and ``{"name", "response", "id"}``;
- **usage**: each AI message's ``usage_metadata`` is reported with
  ``ctx.usage`` under the model its ``response_metadata`` names;
- **interrupt()** (human in the loop) pauses the task at input-required with the
  interrupt's value as the question. With a checkpointer compiled in, the graph
  runs on the thread named by the task id, and the follow-up resumes it with
  ``Command(resume=<the user's text>)``; without one, the follow-up runs the
  graph again on the whole history.

A cancel interrupts the run with ``asyncio.CancelledError`` and closes the
graph's stream, which cancels the nodes in flight. A model's HTTP error (an
``openai`` API error, as LangChain's OpenAI models raise) fails the task with a
message naming it and its status; other exceptions fail it as any agent's do.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel
from langgraph.types import Command

from ..agent import Agent, TaskContext
from ..protocol.internal import is_internal
from ..protocol.model import DataPart, Message, Part, Role, TextPart
from .model_errors import model_error

__all__ = ["GraphAgent"]

_DEFAULT_NAME = "LangGraph"  # what LangGraph names a graph given no name


class GraphAgent(Agent):
    """``graph`` (a compiled LangGraph graph) served as an agent, as the module
    docstring says; ``name`` and ``description`` fill the card (default: the
    graph's own name, else "graph"). TypeError if ``graph`` is not compiled."""

    def __init__(self, graph: Pregel[Any, Any], *, name: str = "", description: str = "") -> None:
        if not isinstance(graph, Pregel):
            raise TypeError(
                f"{type(graph).__name__} is not a compiled LangGraph graph: "
                "call .compile() on the StateGraph"
            )
        self.graph = graph
        own = graph.name if graph.name != _DEFAULT_NAME else ""
        self.name = name or own or "graph"
        self.description = description or f"The {self.name} agent (a LangGraph graph)."
        self._resumable = isinstance(graph.checkpointer, BaseCheckpointSaver)

    async def run(self, ctx: TaskContext) -> None:
        config: RunnableConfig = {}
        if self._resumable:
            config = {"configurable": {"thread_id": ctx.task_id}}
        graph_input = await self._input(ctx, config)
        turn = _Turn(ctx)
        stream: Any = self.graph.astream(graph_input, config, stream_mode=["messages", "updates"])
        try:
            async with contextlib.aclosing(stream):  # a cancel closes the graph's run
                async for mode, event in stream:
                    if mode == "messages":
                        await turn.token(event[0])
                    else:
                        await turn.update(event)
        except Exception as exc:
            reason = model_error(exc)
            if reason is None:
                raise
            await ctx.fail(reason)
            return
        await turn.end()

    async def _input(self, ctx: TaskContext, config: RunnableConfig) -> Any:
        if self._resumable and len(ctx.history) > 1:
            state = await self.graph.aget_state(config)
            if state.interrupts:  # the question this message answers
                return Command(resume=ctx.text)
        return {"messages": _conversation(ctx.history)}


class _Turn:
    """What one run of the graph streams, as calls on the TaskContext."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.artifact_id: str | None = None
        self.interrupts: list[Any] = []

    async def token(self, message: BaseMessage) -> None:
        if not isinstance(message, AIMessage):  # the user's, a tool's: not the answer
            return
        text = _text(message.content)
        if not text:
            return
        sent = await self.ctx.artifact(
            TextPart(text),
            artifact_id=self.artifact_id,
            name="answer",
            append=self.artifact_id is not None,
        )
        if sent is not False:
            self.artifact_id = sent

    async def update(self, event: dict[str, Any]) -> None:
        for node, update in event.items():
            if node == "__interrupt__":
                self.interrupts.extend(update)
                continue
            steps: list[Part] = []
            for message in _messages(update):
                if isinstance(message, AIMessage):
                    steps += [
                        DataPart({"name": c["name"], "args": c["args"], "id": c.get("id") or ""})
                        for c in message.tool_calls
                    ]
                    await self._usage(message)
                elif isinstance(message, ToolMessage):
                    response = {"name": message.name or "", "response": _jsonable(message.content)}
                    steps.append(DataPart({**response, "id": message.tool_call_id}))
            if steps:
                await self.ctx.working(self.ctx.internal(steps))

    async def _usage(self, message: AIMessage) -> None:
        usage = message.usage_metadata
        if not usage:
            return
        model = message.response_metadata.get("model_name") or ""
        await self.ctx.usage(
            prompt_tokens=usage.get("input_tokens", 0),
            completion_tokens=usage.get("output_tokens", 0),
            total_tokens=usage.get("total_tokens"),
            model=model if isinstance(model, str) else "",
        )

    async def end(self) -> None:
        if self.artifact_id is not None:
            # Which chunk is the last is known only once the run has ended.
            await self.ctx.artifact(
                TextPart(""), artifact_id=self.artifact_id, append=True, last_chunk=True
            )
        if self.interrupts:
            await self.ctx.require_input([_question(i.value) for i in self.interrupts])


def _conversation(history: Iterable[Message]) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for message in history:
        text = "\n".join(
            p.text for p in message.parts if isinstance(p.text, str) and not is_internal(p)
        )
        if not text:
            continue
        kind = HumanMessage if message.role is Role.USER else AIMessage
        messages.append(kind(content=text, id=message.message_id))
    return messages


def _messages(update: Any) -> list[Any]:
    """The messages a node's update adds (a node may return None, or no messages)."""
    if not isinstance(update, dict):
        return []
    found = update.get("messages")
    if found is None:
        return []
    return list(found) if isinstance(found, list | tuple) else [found]


def _text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or block.get("type") == "text"
    )


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _question(value: Any) -> Part:
    if isinstance(value, str):
        return TextPart(value)
    if isinstance(value, dict) and _jsonable(value) is value:
        return DataPart(value)
    return TextPart(str(value))
