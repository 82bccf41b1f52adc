"""The task-manager agent: manages tasks on A2A servers as a request in plain
language asks ("List all active A2A tasks and cancel any that are overdue").

An LLM behind any OpenAI-compatible endpoint chooses the calls among the task
tools (``a2ad.tools``); the agent runs them, shows each call and a one-line
result as a working message in the task's history, feeds the results back, and
ends with the model's final answer as the artifact; it reports the tokens each
call used as the endpoint counted them (``ctx.usage``). Rounds, calls per round and
result sizes are bounded. Without an endpoint or a model, or when the endpoint
fails, the task fails with a one-line reason saying what to set or check.

Serve it with ``a2ad serve --agent a2ad.agents.task_manager``: its ``agent``
builds one from the settings the command read from the environment when it
started (see ``AgentSettings``):

- ``A2AD_MANAGED_URLS``: comma-separated base URLs of the servers it may manage
  (default: the server it runs on, ``$A2AD_URL`` if set); ``A2AD_TOKEN`` for them;
- ``OPENAI_BASE_URL`` (default https://api.openai.com/v1), ``OPENAI_API_KEY``,
  and ``A2AD_MODEL`` (or ``--model``) for the LLM.

Built in Python, it takes the same as constructor arguments and reads nothing
from the environment.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from ..agent import Agent, AgentSkill, TaskContext
from ..client.client import DEFAULT_URL
from ..tools import acall_tool, bound_tools
from ..wording import plural
from .llm import ChatClient, LLMError, LLMNotConfiguredError, LLMSettings, ToolCall
from .settings import AgentSettings

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
    """``TaskManagerAgent(model=..., servers=[...], base_url=..., api_key=...)``.
    ``servers`` are the base URLs it may manage (default http://127.0.0.1:8000),
    the first the default; ``token`` is sent to them. Without a model, or with
    neither ``base_url`` nor ``api_key``, it logs a warning when made (so at
    ``a2ad serve``'s start, whose banner repeats it; ``config_problem`` holds
    it) and its tasks fail saying what to set."""

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
        self.servers = [s.rstrip("/") for s in servers or [DEFAULT_URL]]
        self.base_url = base_url
        self._api_key = api_key
        self.token = token
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.config_problem: str | None = None
        try:
            LLMSettings.resolve(model=model, base_url=base_url, api_key=api_key)
        except LLMNotConfiguredError as exc:
            self.config_problem = str(exc)
            log.warning("the task manager can't answer until an LLM is configured: %s", exc)

    async def run(self, ctx: TaskContext) -> None:
        try:
            settings = LLMSettings.resolve(
                model=self.model, base_url=self.base_url, api_key=self._api_key
            )
        except LLMError as exc:
            await ctx.fail(str(exc))
            return
        servers = self.servers
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
                await reply.report_usage(ctx)
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
            f"the model still wanted tools after {plural(self.max_rounds, 'round')}, with no final "
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
            result = await acall_tool(
                call.name, call.arguments, servers=servers, token=self.token, keep={ctx.task_id}
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
        line = plural(len(tasks), "task") + (", more on the server" if result["more"] else "")
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


def agent(settings: AgentSettings) -> TaskManagerAgent:
    """The task manager as ``a2ad serve --agent a2ad.agents.task_manager`` serves it."""
    return TaskManagerAgent(
        model=settings.model,
        servers=settings.managed_urls or [settings.server_url],
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        token=settings.token,
    )
