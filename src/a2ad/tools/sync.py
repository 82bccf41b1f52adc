"""The task tools as plain blocking functions, for agent frameworks that take
Python callables as tools (``Agent(tools=[list_tasks, cancel_overdue_tasks])``).

Such frameworks read the signature and the docstring: the summary line
describes the tool, each ``Args:`` line one parameter, and the annotations give
the JSON types. So this module does not use ``from __future__ import
annotations``: the annotations must be real types (``int``, not ``"int"``) for
frameworks that compare them with ``is int``. Every function returns a dict of
plain values, with an ``error`` key when the call failed (see ``operations``).

Each call runs on its own event loop, so these must not be called from inside a
running loop (an async agent, or the a2ad server itself, would block on its own
request): use the ``a``-prefixed coroutines there.
"""

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from .operations import (
    DEFAULT_LIMIT,
    DEFAULT_STALE_AFTER,
    acancel_overdue_tasks,
    acancel_task,
    aget_task,
    alist_tasks,
)

__all__ = ["cancel_overdue_tasks", "cancel_task", "get_task", "list_tasks"]


def _blocking(
    name: str, work: Callable[..., Coroutine[Any, Any, dict[str, Any]]], **arguments: Any
) -> dict[str, Any]:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work(**arguments))
    raise RuntimeError(
        f"a2ad.tools.{name}() blocks, and was called inside a running event loop; "
        f"use `await a2ad.tools.a{name}(...)` there"
    )


def list_tasks(
    state: str | None = None,
    context_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    stale_after: str = DEFAULT_STALE_AFTER,
    server_url: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """List tasks on an A2A server, newest first, each as a short summary.

    Each summary has the task's id, state, contextId, updated (time of its last
    status change), request (the first words it was asked) and, for an active
    task that is past its deadline or has not changed for longer than
    stale_after, overdue (why).

    Args:
        state: "active" (submitted, working, input-required, auth-required), "all", or one state.
        context_id: Only tasks of this conversation (contextId); omit for all.
        limit: How many tasks at most, 1 to 100 (default 20).
        stale_after: Mark active tasks quiet for this long as overdue, e.g. "10m" or "off".
        server_url: The A2A server's base URL; omit for $A2AD_URL or http://127.0.0.1:8000.
        agent: Of a server of several agents, the one whose tasks (at server_url/agents/NAME/).

    Returns:
        {"server", "tasks": [summary, ...], "more": true if more tasks match},
        or {"error": "what went wrong and what to do"}.
    """
    return _blocking(
        "list_tasks",
        alist_tasks,
        state=state,
        context_id=context_id,
        limit=limit,
        stale_after=stale_after,
        server_url=server_url,
        agent=agent,
    )


def get_task(
    task_id: str, server_url: str | None = None, agent: str | None = None
) -> dict[str, Any]:
    """Show one task on an A2A server: its summary, newest messages and artifacts.

    Args:
        task_id: The task's id, as list_tasks shows it.
        server_url: The A2A server's base URL; omit for $A2AD_URL or http://127.0.0.1:8000.
        agent: Of a server of several agents, the one whose tasks (at server_url/agents/NAME/).

    Returns:
        {"server", "task": {..., "history": [...], "artifacts": [...]}},
        or {"error": "what went wrong and what to do"}.
    """
    return _blocking("get_task", aget_task, task_id=task_id, server_url=server_url, agent=agent)


def cancel_task(
    task_id: str, server_url: str | None = None, agent: str | None = None
) -> dict[str, Any]:
    """Cancel one active task on an A2A server; its work stops.

    Args:
        task_id: The id of the task to cancel, as list_tasks shows it.
        server_url: The A2A server's base URL; omit for $A2AD_URL or http://127.0.0.1:8000.
        agent: Of a server of several agents, the one whose tasks (at server_url/agents/NAME/).

    Returns:
        {"server", "canceled": true, "task": summary after the cancel},
        or {"error": ...} (for instance when the task has already ended).
    """
    return _blocking(
        "cancel_task", acancel_task, task_id=task_id, server_url=server_url, agent=agent
    )


def cancel_overdue_tasks(
    stale_after: str = DEFAULT_STALE_AFTER,
    dry_run: bool = False,
    server_url: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Find the overdue tasks on an A2A server and cancel them (or only list them).

    A task is overdue when it is active (submitted, working, input-required or
    auth-required) and past its deadline, or has had no status change for
    longer than stale_after.

    Args:
        stale_after: How long without a status change makes an active task overdue, e.g. "10m".
        dry_run: true to only report what is overdue, canceling nothing.
        server_url: The A2A server's base URL; omit for $A2AD_URL or http://127.0.0.1:8000.
        agent: Of a server of several agents, the one whose tasks (at server_url/agents/NAME/).

    Returns:
        {"server", "staleAfter", "dryRun", "foundCount", "found": [summary with overdue],
        "canceledCount", "canceled": [{"id", "state"}], "failedCount", "failed": [{"id", "error"}]}
        (no canceled/failed on a dry run), or {"error": "what went wrong and what to do"}.
    """
    return _blocking(
        "cancel_overdue_tasks",
        acancel_overdue_tasks,
        stale_after=stale_after,
        dry_run=dry_run,
        server_url=server_url,
        agent=agent,
    )
