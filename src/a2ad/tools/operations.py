"""The four task tools, async: what they ask the server and what they answer.

Each returns a dict of plain JSON values. A failure the caller can act on (the
server can't be reached, the task is unknown or already ended, an argument is
wrong) comes back as ``{"error": "...", "server": url}``, the text naming the
problem and what to do, rather than as an exception: the usual caller is an
LLM, which reads a return value and can correct itself, while an exception
ends its turn or is shown to it as a traceback. Bugs still raise.

The public coroutines take the server as ``server_url``, else ``$A2AD_URL``,
else http://127.0.0.1:8000, and the bearer token as ``token``, else
``$A2AD_TOKEN``: the defaults a script relies on. Each runs a ``…_on`` form that
takes a ``Remote`` and reads no environment; ``acall_tool`` (and so the
task-manager agent and the MCP server) uses those, with what it was given.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..client.client import DEFAULT_URL, Client, ClientError
from ..client.overdue import (
    ACTIVE_STATES,
    cancel_overdue,
    find_overdue,
    overdue_reason,
    parse_stale_after,
)
from ..durations import parse_duration
from ..protocol.errors import A2AError, TaskNotCancelableError, TaskNotFoundError
from ..protocol.model import Task, TaskState, parse_state
from .summary import task_detail, task_summary

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_STALE_AFTER",
    "ENV_TOKEN",
    "ENV_URL",
    "Remote",
    "acancel_overdue_tasks",
    "acancel_task",
    "aget_task",
    "alist_tasks",
    "cancel_overdue_tasks_on",
    "cancel_task_on",
    "get_task_on",
    "list_tasks_on",
]

ENV_URL = "A2AD_URL"
ENV_TOKEN = "A2AD_TOKEN"
DEFAULT_STALE_AFTER = "10m"
DEFAULT_LIMIT = 20
MAX_LIMIT = 100  # tasks per list_tasks answer: one server page, and a few kB of summaries
MAX_REPORTED = 100  # tasks named per list in a cancel_overdue_tasks answer
TIMEOUT = 30.0
_DEFAULT_STALE_SECONDS = parse_duration(DEFAULT_STALE_AFTER)

Result = dict[str, Any]


class _Refused(Exception):
    """A problem with the call itself, answered as ``{"error": ...}``."""


@dataclass(frozen=True)
class Remote:
    """The A2A server a tool call goes to (its base URL, no trailing slash), and
    the bearer token sent to it."""

    url: str
    token: str | None = field(default=None, repr=False)

    @classmethod
    def default(
        cls, server_url: str | None = None, token: str | None = None, agent: str | None = None
    ) -> Remote:
        """``server_url``, else ``$A2AD_URL``, else the local default (beneath it,
        ``/agents/<agent>`` for a named ``agent``); ``token``, else ``$A2AD_TOKEN``.
        The tool functions promise a script these defaults, so this is where the
        tools read the environment, and the only place."""
        url = (server_url or os.environ.get(ENV_URL) or DEFAULT_URL).rstrip("/")
        return cls(
            f"{url}/agents/{agent}" if agent else url,
            token if token is not None else (os.environ.get(ENV_TOKEN) or None),
        )


async def _call(remote: Remote, work: Callable[[Client, str], Awaitable[Result]]) -> Result:
    url = remote.url
    try:
        async with Client(url, token=remote.token, timeout=TIMEOUT) as client:
            result = await work(client, url)
    except _Refused as exc:
        return {"error": str(exc), "server": url}
    except ClientError as exc:
        return {"error": exc.message, "server": url}
    except A2AError as exc:
        return {"error": f"{url} answered: {exc.message} (code {exc.code})", "server": url}
    return {"server": url, **result}


def _stale_after(text: str | None) -> float | None:
    try:
        return parse_stale_after(text or "off")
    except ValueError as exc:
        raise _Refused(f"stale_after: {exc}") from None


def _states(state: str | None) -> list[TaskState | None]:
    """The states to list, one request each (None: every state)."""
    word = (state or "all").strip().lower()
    if word == "all":
        return [None]
    if word == "active":
        return list(ACTIVE_STATES)
    try:
        return [parse_state(word)]
    except ValueError as exc:
        raise _Refused(f"state: {exc}, or 'active' or 'all'") from None


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise _Refused(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    return limit


def _not_found(task_id: str, url: str) -> _Refused:
    return _Refused(
        f"{url} has no task {task_id!r}: the id may be mistyped, or the task was deleted; "
        "list_tasks shows the tasks it holds"
    )


async def alist_tasks(
    state: str | None = None,
    context_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    stale_after: str = DEFAULT_STALE_AFTER,
    server_url: str | None = None,
    agent: str | None = None,
    *,
    token: str | None = None,
) -> Result:
    """The async form of :func:`a2ad.tools.list_tasks` (same arguments, plus ``token``)."""
    remote = Remote.default(server_url, token, agent)
    return await list_tasks_on(remote, state, context_id, limit, stale_after)


async def aget_task(
    task_id: str,
    server_url: str | None = None,
    agent: str | None = None,
    *,
    token: str | None = None,
) -> Result:
    """The async form of :func:`a2ad.tools.get_task` (same arguments, plus ``token``)."""
    return await get_task_on(Remote.default(server_url, token, agent), task_id)


async def acancel_task(
    task_id: str,
    server_url: str | None = None,
    agent: str | None = None,
    *,
    token: str | None = None,
) -> Result:
    """The async form of :func:`a2ad.tools.cancel_task` (same arguments, plus ``token``)."""
    return await cancel_task_on(Remote.default(server_url, token, agent), task_id)


async def acancel_overdue_tasks(
    stale_after: str = DEFAULT_STALE_AFTER,
    dry_run: bool = False,
    server_url: str | None = None,
    agent: str | None = None,
    *,
    token: str | None = None,
    keep: Collection[str] = (),
) -> Result:
    """The async form of :func:`a2ad.tools.cancel_overdue_tasks` (same arguments,
    plus ``token``, and ``keep``: ids of tasks never to cancel, such as the
    caller's own)."""
    remote = Remote.default(server_url, token, agent)
    return await cancel_overdue_tasks_on(remote, stale_after, dry_run, keep=keep)


async def list_tasks_on(
    remote: Remote,
    state: str | None = None,
    context_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    stale_after: str = DEFAULT_STALE_AFTER,
) -> Result:
    async def work(client: Client, url: str) -> Result:
        states, size, stale = _states(state), _limit(limit), _stale_after(stale_after)
        tasks: list[Task] = []
        more = False
        for each in states:
            page = await client.list_page(context_id=context_id, state=each, page_size=size)
            tasks += page.tasks
            more = more or bool(page.next_page_token)
        # Several states are several newest-first lists: merge them.
        tasks.sort(key=lambda t: t.status.timestamp or "", reverse=True)
        now = datetime.now(UTC)
        return {
            "tasks": [
                task_summary(t, overdue_reason(t, now=now, stale_after=stale)) for t in tasks[:size]
            ],
            "more": more or len(tasks) > size,
        }

    return await _call(remote, work)


async def get_task_on(remote: Remote, task_id: str) -> Result:
    async def work(client: Client, url: str) -> Result:
        try:
            task = await client.get_task(task_id)
        except TaskNotFoundError:
            raise _not_found(task_id, url) from None
        reason = overdue_reason(task, now=datetime.now(UTC), stale_after=_DEFAULT_STALE_SECONDS)
        return {"task": task_detail(task, reason)}

    return await _call(remote, work)


async def cancel_task_on(remote: Remote, task_id: str) -> Result:
    async def work(client: Client, url: str) -> Result:
        try:
            after = await client.cancel_task(task_id)
        except TaskNotFoundError:
            raise _not_found(task_id, url) from None
        except TaskNotCancelableError:
            ended = await client.get_task(task_id, history_length=0)
            raise _Refused(
                f"task {task_id} can't be canceled: it already ended ({ended.status.state.word})"
            ) from None
        return {"canceled": after.status.state is TaskState.CANCELED, "task": task_summary(after)}

    return await _call(remote, work)


async def cancel_overdue_tasks_on(
    remote: Remote,
    stale_after: str = DEFAULT_STALE_AFTER,
    dry_run: bool = False,
    *,
    keep: Collection[str] = (),
) -> Result:
    async def work(client: Client, url: str) -> Result:
        stale = _stale_after(stale_after)
        found = [o for o in await find_overdue(client, stale_after=stale) if o.task.id not in keep]
        result: Result = {
            "staleAfter": stale_after,
            "dryRun": dry_run,
            "foundCount": len(found),
            "found": [task_summary(task, reason) for task, reason in found[:MAX_REPORTED]],
        }
        if dry_run:
            return result
        outcomes = await cancel_overdue(client, found)
        done = [{"id": o.task_id, "state": o.state} for o in outcomes if o.ok]
        failed = [{"id": o.task_id, "error": o.detail} for o in outcomes if not o.ok]
        result.update(
            canceledCount=len(done),
            canceled=done[:MAX_REPORTED],
            failedCount=len(failed),
            failed=failed[:MAX_REPORTED],
        )
        return result

    return await _call(remote, work)
