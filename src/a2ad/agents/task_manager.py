"""The task-manager agent: manages tasks on A2A servers as a request in plain
language asks ("List all active A2A tasks and cancel any that are overdue").

An LLM behind any OpenAI-compatible endpoint chooses the calls among the task
tools (``a2ad.tools``); the agent runs them, shows each call and a one-line
result as a working message in the task's history, feeds the results back, and
ends with the model's final answer as the artifact. Rounds, calls per round and
result sizes are bounded. Without an endpoint or a model, or when the endpoint
fails, the task fails with a one-line reason saying what to set or check.

Serve it with ``a2ad serve --agent a2ad.agents.task_manager`` (its ``agent``),
configured by the environment, read when a task runs:

- ``A2AD_MANAGED_URLS``: comma-separated base URLs of the servers it may manage
  (default ``$A2AD_URL``, else http://127.0.0.1:8000); ``A2AD_TOKEN`` for them;
- ``OPENAI_BASE_URL`` (default https://api.openai.com/v1), ``OPENAI_API_KEY``,
  and ``A2AD_MODEL`` for the LLM.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from ..agent import Agent, AgentSkill, TaskContext
from ..tools import ENV_TOKEN, acall_tool, bound_tools
from ..tools.operations import resolve_url
from .llm import ChatClient, LLMError, LLMSettings, ToolCall

__all__ = ["ENV_MANAGED_URLS", "TaskManagerAgent", "agent"]

log = logging.getLogger("a2ad.task_manager")

ENV_MANAGED_URLS = "A2AD_MANAGED_URLS"
MAX_ROUNDS = 8
MAX_CALLS_PER_ROUND = 8
MAX_RESULT_CHARS = 12_000  # of one tool result sent back to the model
MAX_REQUEST_CHARS = 8_000
MAX_ANSWER_CHARS = 20_000
SHOWN_ARGUMENT_CHARS = 80

SYSTEM_PROMPT = """\
You manage tasks on A2A (Agent2Agent protocol) servers, using the tools you are given.
Servers you may use (server_url): {servers}. The first is the default.
A task is active while submitted, working, input-required or auth-required. It is overdue \
when it is active and past its deadline, or has had no status change for longer than \
stale_after (default 10m).
Find things out with the tools; never guess task ids or states. Cancel only what the \
request asks you to cancel. When done, answer in plain text: what you found and what you \
did, naming the task ids, and any error a tool reported."""


class TaskManagerAgent(Agent):
    """``TaskManagerAgent(model=..., servers=[...])``; what is not given is read
    from the environment when a task runs (see the module docstring)."""

    name = "task-manager"
    description = (
        "Manages tasks on A2A servers as you ask in plain language: lists them, explains "
        "them, and cancels the ones you name or the overdue ones, using an LLM to choose "
        "the calls."
    )
    skills = (
        AgentSkill(
            id="manage-tasks",
            name="Manage A2A tasks",
            description="Lists, inspects and cancels tasks on the A2A servers it manages.",
            tags=["a2a", "tasks", "operations"],
            examples=[
                "List all active A2A tasks and cancel any that are overdue",
                "Which tasks are waiting for input?",
                "Cancel task 0190f1c2-...",
            ],
        ),
    )

    def __init__(
        self,
        *,
        model: str | None = None,
        servers: Sequence[str] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        token: str | None = None,
        max_rounds: int = MAX_ROUNDS,
        timeout: float = 120.0,
    ) -> None:
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
        self.model = model
        self.servers = [s.rstrip("/") for s in servers] if servers else None
        self.base_url = base_url
        self._api_key = api_key
        self.token = token
        self.max_rounds = max_rounds
        self.timeout = timeout

    def managed_servers(self) -> list[str]:
        """The servers given, else ``$A2AD_MANAGED_URLS``, else ``$A2AD_URL`` or the default."""
        if self.servers:
            return self.servers
        listed = [u.strip().rstrip("/") for u in os.environ.get(ENV_MANAGED_URLS, "").split(",")]
        return [u for u in listed if u] or [resolve_url()]

    async def run(self, ctx: TaskContext) -> None:
        try:
            settings = LLMSettings.resolve(
                model=self.model, base_url=self.base_url, api_key=self._api_key
            )
        except LLMError as exc:
            await ctx.fail(str(exc))
            return
        servers = self.managed_servers()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT.format(servers=", ".join(servers))},
            {"role": "user", "content": ctx.text[:MAX_REQUEST_CHARS]},
        ]
        tools = bound_tools(servers)
        async with ChatClient(settings, timeout=self.timeout) as llm:
            for _ in range(self.max_rounds):
                try:
                    reply = await llm.chat(messages, tools)
                except LLMError as exc:
                    log.warning("LLM call failed: %s", exc, extra={"task_id": ctx.task_id})
                    await ctx.fail(str(exc))
                    return
                if not reply.tool_calls:
                    await self._finish(ctx, reply.content)
                    return
                if reply.content.strip():
                    await ctx.working(reply.content.strip()[:MAX_RESULT_CHARS])
                messages.append(reply.as_message())
                for i, call in enumerate(reply.tool_calls):
                    result = await self._execute(ctx, call, servers, over=i >= MAX_CALLS_PER_ROUND)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        await ctx.fail(
            f"the model still wanted tools after {self.max_rounds} rounds, with no final "
            "answer; ask for less at once"
        )

    async def _finish(self, ctx: TaskContext, answer: str) -> None:
        answer = answer.strip()
        if not answer:
            await ctx.fail("the model answered with no text and no tool calls")
            return
        await ctx.artifact(answer[:MAX_ANSWER_CHARS], name="result")
        await ctx.complete()

    async def _execute(
        self, ctx: TaskContext, call: ToolCall, servers: list[str], *, over: bool
    ) -> str:
        """Run one call, showing it and its outcome; returns the result as JSON text."""
        await ctx.working(f"calling {call.name}({_shown_arguments(call.arguments)})")
        if over:
            result: dict[str, Any] = {
                "error": f"at most {MAX_CALLS_PER_ROUND} tool calls per turn; make this one later"
            }
        else:
            token = self.token if self.token is not None else os.environ.get(ENV_TOKEN)
            result = await acall_tool(
                call.name, call.arguments, servers=servers, token=token, keep={ctx.task_id}
            )
        await ctx.working(f"{call.name}: {_outcome(call.name, result)}")
        text = json.dumps(result)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + " …(cut: ask for fewer tasks)"
        return text


def _shown_arguments(arguments: str) -> str:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return _cut(arguments)
    return ", ".join(f"{k}={_cut(json.dumps(v))}" for k, v in parsed.items() if v is not None)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_ARGUMENT_CHARS else text[: SHOWN_ARGUMENT_CHARS - 1] + "…"


def _outcome(name: str, result: dict[str, Any]) -> str:
    """One line on what a tool call did, for the task's history."""
    if "error" in result:
        return f"error: {result['error']}"
    if name == "list_tasks":
        tasks = result["tasks"]
        overdue = sum(1 for t in tasks if "overdue" in t)
        line = f"{len(tasks)} task(s)" + (", more on the server" if result["more"] else "")
        return line + (f", {overdue} overdue" if overdue else "")
    if name == "get_task":
        return f"{result['task']['id']} is {result['task']['state']}"
    if name == "cancel_task":
        return f"{result['task']['id']} is now {result['task']['state']}"
    if result["dryRun"]:
        return f"{result['foundCount']} overdue (dry run: none canceled)"
    return (
        f"{result['foundCount']} overdue, {result['canceledCount']} canceled, "
        f"{result['failedCount']} failed"
    )


agent = TaskManagerAgent()
