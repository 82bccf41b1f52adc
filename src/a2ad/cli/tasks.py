"""``a2ad tasks list / get / watch / cancel / cancel-overdue``: the server's tasks."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
import typer
from rich.text import Text

from ..client import DEFAULT_URL, Client, ClientError
from ..client.overdue import (
    ACTIVE_STATES,
    Overdue,
    cancel_overdue,
    find_overdue,
    overdue_reason,
)
from ..durations import format_duration
from ..protocol.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol.model import Role, Task, TaskState, parse_state
from ..wording import plural
from .output import (
    STATE_STYLES,
    Column,
    Columns,
    Timeline,
    ago,
    changed_at,
    console_for,
    fail,
    follow,
    indented,
    parts_text,
    print_json,
    print_table,
    request_text,
    state_text,
    status_text,
)
from .remote import (
    AgentOption,
    BindingOption,
    JsonOption,
    Target,
    TokenOption,
    UrlOption,
    VersionOption,
    exit_for,
    left_running,
    session,
    stale_flag,
    state_flag,
)

__all__ = ["tasks_app"]

tasks_app = typer.Typer(
    name="tasks",
    help="List, show, follow and cancel the server's tasks.",
    no_args_is_help=True,
)


@tasks_app.command("list")
def list_tasks(
    state: Annotated[
        str | None, typer.Option("--state", help="Only tasks in this state, e.g. working.")
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="Only tasks of this context.")
    ] = None,
    stale_after: Annotated[
        str | None,
        typer.Option(
            "--stale-after",
            help="Only active tasks with no status change for this long (e.g. 10m), "
            "or past their deadline; off: only those past their deadline.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")] = 20,
    every: Annotated[bool, typer.Option("--all", help="Page through every task.")] = False,
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """List tasks, newest first (with --stale-after: the longest quiet first)."""
    target = Target(url, token, a2a_version, agent, binding)
    wanted = state_flag(state) if state else None
    overdue = stale_after is not None
    stale = stale_flag(stale_after) if stale_after is not None else None
    if overdue and wanted is not None and wanted not in ACTIVE_STATES:
        active = ", ".join(s.word for s in ACTIVE_STATES)
        fail(f"--stale-after goes with an active --state ({active})", code=2)
    most = None if every else limit
    now = datetime.now(UTC)
    with session(target) as s:
        if not overdue:
            found, total = s.run(_collect(s.client, most, state=wanted, context_id=context))
            rows = [(t, "") for t in found]
        else:
            states = [wanted] if wanted else list(ACTIVE_STATES)
            quiet = s.run(_stale(s.client, states, context, stale, now))
            rows, total = quiet[:most], len(quiet)
    if as_json:
        print_json([msgspec.to_builtins(t) for t, _ in rows])
        return
    out = console_for()
    if not rows:
        out.print("no tasks" if not (state or context or stale_after) else "no matching tasks")
        return
    print_table(out, _task_table(rows, now, reasons=overdue))
    if total > len(rows):
        out.print(
            Text(f"{len(rows)} of {total} tasks; --all shows every one", style="dim"),
            soft_wrap=True,
        )


async def _collect(
    client: Client, most: int | None, *, state: TaskState | None, context_id: str | None
) -> tuple[list[Task], int]:
    """Up to ``most`` tasks (all if None), and how many the server says match.
    Full history is asked for: ``historyLength`` keeps the newest messages, and
    the table shows the first one the user sent."""
    tasks: list[Task] = []
    token, total = "", 0
    while True:
        size = 100 if most is None else min(100, most - len(tasks))
        page = await client.list_page(
            state=state, context_id=context_id, page_size=size, page_token=token
        )
        total = total or page.total_size
        tasks.extend(page.tasks)
        token = page.next_page_token
        if not token or (most is not None and len(tasks) >= most):
            return tasks[:most], max(total, len(tasks))


async def _stale(
    client: Client,
    states: Sequence[TaskState],
    context_id: str | None,
    stale_after: float | None,
    now: datetime,
) -> list[tuple[Task, str]]:
    """Every task in ``states`` that is overdue, the longest quiet first."""
    found: list[tuple[Task, str]] = []
    for state in states:
        async for task in client.list_tasks(state=state, context_id=context_id, page_size=100):
            reason = overdue_reason(task, now=now, stale_after=stale_after)
            if reason is not None:
                found.append((task, reason))
    found.sort(key=lambda row: row[0].status.timestamp or "")
    return found


def _task_table(rows: Sequence[tuple[Task, str]], now: datetime, *, reasons: bool) -> Columns:
    # With reasons the request is the first thing to leave a narrow terminal.
    columns = [Column("ID"), Column("STATE"), Column("CONTEXT", optional=True), Column("UPDATED")]
    columns.append(Column("REQUEST", optional=reasons))
    if reasons:
        columns.append(Column("REASON"))
    cells = []
    for task, reason in rows:
        row = [
            Text(task.id),
            state_text(task.status.state),
            Text(task.context_id),
            Text(ago(changed_at(task), now)),
            Text(request_text(task)),
        ]
        cells.append([*row, Text(reason)] if reasons else row)
    return columns, cells


@tasks_app.command("get")
def get_task(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The task's id.")],
    history: Annotated[
        int | None,
        typer.Option("--history", min=0, help="Show only the N newest messages."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one task: state, context, time, messages and artifacts."""
    target = Target(url, token, a2a_version, agent, binding)
    with session(target, task_id=task_id) as s:
        task = s.run(s.client.get_task(task_id, history_length=history))
    if as_json:
        print_json(msgspec.to_builtins(task))
    else:
        _show_task(task, datetime.now(UTC))


def _show_task(task: Task, now: datetime) -> None:
    out = console_for()
    facts: list[tuple[str, str | Text]] = [("state", state_text(task.status.state))]
    if note := status_text(task):
        facts.append(("status", note))
    facts.append(("context", task.context_id))
    changed = changed_at(task)
    if changed is not None:
        local = changed.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        facts.append(("updated", f"{local} ({ago(changed, now)})"))
    if isinstance(task.metadata, dict) and task.metadata:
        facts.append(("metadata", msgspec.json.encode(task.metadata).decode()))
    out.print(Text(f"task {task.id}", style="bold"))
    for key, value in facts:
        shown = value if isinstance(value, Text) else Text(_hang(value, 11))
        out.print(Text.assemble((f"  {key:<9}", "dim"), shown), soft_wrap=True)
    out.print(Text(f"\nhistory ({plural(len(task.history), 'message')})", style="bold"))
    for message in task.history:
        who = "user " if message.role is Role.USER else "agent"
        text = _hang(parts_text(message.parts), 9)
        out.print(Text.assemble((f"  {who}  ", "dim"), text), soft_wrap=True)
    out.print(Text(f"\nartifacts ({len(task.artifacts)})", style="bold"))
    for artifact in task.artifacts:
        title = artifact.name or artifact.artifact_id
        out.print(Text.assemble("  ", (title, "bold"), (f"  (id {artifact.artifact_id})", "dim")))
        out.print(indented(parts_text(artifact.parts), "    "), soft_wrap=True)


def _hang(text: str, indent: int) -> str:
    """Lines after the first indented to line up under it."""
    return text.replace("\n", "\n" + " " * indent)


@tasks_app.command("watch")
def watch_task(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The task's id.")],
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a task live until it ends. Ctrl-C stops watching, not the task."""
    target = Target(url, token, a2a_version, agent, binding)
    with session(
        target,
        task_id=task_id,
        interrupted=lambda: left_running(task_id, "stopped watching"),
    ) as s:
        # Ask once first: an ended task has nothing to follow, only a past to
        # show, and a server that is down fails here at once (subscribe would
        # retry its first connection).
        task = s.run(s.client.get_task(task_id, history_length=0))
        timeline = Timeline(as_json=as_json, replay=task.status.state.terminal)
        with timeline:
            if task.status.state.terminal:
                s.run(_replay(s.client, task, timeline))
            else:
                s.run(_watch(s.client, task_id, timeline))
    raise typer.Exit(exit_for(timeline.state))


async def _replay(client: Client, task: Task, timeline: Timeline) -> None:
    """An ended task's events from its first, where the server keeps them (a2ad
    does); else the task as it ended, its artifacts before its end."""
    try:
        events = [item async for item in client.subscribe(task.id, last_event_id=0)]
    except (A2AError, ClientError):
        # No event log (a finished task can't be subscribed to then), or a server
        # that refuses otherwise: the ended task is all there is to show.
        events = [task]
    if events and not isinstance(events[0], Task):
        timeline.header(task)
    for item in events:
        timeline.show(item)


async def _watch(client: Client, task_id: str, timeline: Timeline) -> None:
    try:
        await follow(client.subscribe(task_id), timeline)
    except UnsupportedOperationError:
        task = await client.get_task(task_id, history_length=0)
        if not task.status.state.terminal:
            raise  # the server can't stream
        timeline.show(task)  # it ended between the two calls


@tasks_app.command("cancel")
def cancel_tasks(
    task_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="The tasks' ids.")],
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel tasks; one line per task. Exits 1 if any was not canceled."""
    target = Target(url, token, a2a_version, agent, binding)
    with session(target) as s:
        results = [s.run(_cancel_one(s.client, task_id)) for task_id in task_ids]
    if as_json:
        print_json(results)
    else:
        out = console_for()
        for result in results:
            if result["ok"]:
                outcome = Text(result["state"], style=_word_style(result["state"]))
            else:
                outcome = Text(result["error"], style="red")
            out.print(Text.assemble(result["taskId"], "  ", outcome), soft_wrap=True)
    raise typer.Exit(0 if all(r["ok"] for r in results) else 1)


async def _cancel_one(client: Client, task_id: str) -> dict[str, Any]:
    """{taskId, ok, state, error}: state is the task's state afterwards, if known."""
    state: str | None = None
    try:
        after = await client.cancel_task(task_id)
    except TaskNotFoundError:
        error = "not found"
    except TaskNotCancelableError as exc:
        state = exc.metadata.get("state") or await _state_word(client, task_id)
        error = f"already {state}" if state else exc.message
    except A2AError as exc:
        error = f"{exc.message} (A2A error {exc.code})"
    else:
        return {"taskId": task_id, "ok": True, "state": after.status.state.word, "error": None}
    return {"taskId": task_id, "ok": False, "state": state, "error": error}


async def _state_word(client: Client, task_id: str) -> str | None:
    try:
        return (await client.get_task(task_id, history_length=0)).status.state.word
    except A2AError:
        return None


def _word_style(word: str) -> str:
    try:
        return STATE_STYLES.get(parse_state(word), "")
    except ValueError:
        return ""


@tasks_app.command("cancel-overdue")
def cancel_overdue_tasks(
    stale_after: Annotated[
        str,
        typer.Option(
            "--stale-after",
            help="Overdue after this long with no status change; off: only past their deadline.",
        ),
    ] = "10m",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list the overdue tasks.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Don't ask before cancelling.")] = False,
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel active tasks past their deadline or quiet for longer than --stale-after."""
    target = Target(url, token, a2a_version, agent, binding)
    stale = stale_flag(stale_after)
    # Human output goes to stderr with --json, so stdout stays one JSON value.
    out = console_for(stderr=as_json)
    with session(target) as s:
        now = datetime.now(UTC)
        overdue = s.run(find_overdue(s.client, stale_after=stale, now=now))
        if not overdue:
            if as_json:
                print_json([])
            else:
                quiet = (
                    f" or quiet for more than {format_duration(stale)}" if stale is not None else ""
                )
                out.print(
                    f"no overdue tasks on {target.url} (none past its deadline{quiet})",
                    soft_wrap=True,
                )
            return
        if not as_json:
            print_table(out, _overdue_table(overdue, now))
        if dry_run:
            if as_json:
                print_json([_overdue_json(o) for o in overdue])
            else:
                out.print(f"dry run: {_count(overdue)} would be canceled", soft_wrap=True)
            return
        if not yes:
            if not sys.stdin.isatty():
                fail(
                    f"not cancelling {_count(overdue)} without confirmation: stdin is not "
                    "a terminal; pass --yes to cancel them, or --dry-run to only list them",
                    code=2,
                )
            if as_json:
                print_table(out, _overdue_table(overdue, now))
            if not typer.confirm(f"Cancel {_count(overdue)}?", err=as_json):
                fail("nothing canceled")
        outcomes = s.run(cancel_overdue(s.client, overdue))
    results = [
        {
            "taskId": o.task_id,
            "ok": o.ok,
            "state": o.state or None,
            "error": None if o.ok else o.detail,
            "reason": found.reason,
        }
        for o, found in zip(outcomes, overdue, strict=True)
    ]
    if as_json:
        print_json(results)
    else:
        print_table(out, _outcome_table(results))
        failed = sum(not r["ok"] for r in results)
        done = f"canceled {len(results) - failed} of {_count(overdue)}"
        out.print(done + (f"; {failed} failed" if failed else ""), soft_wrap=True)
    raise typer.Exit(1 if any(not r["ok"] for r in results) else 0)


def _count(overdue: Sequence[Overdue]) -> str:
    return plural(len(overdue), "overdue task")


def _overdue_json(found: Overdue) -> dict[str, Any]:
    task = found.task
    return {
        "taskId": task.id,
        "contextId": task.context_id,
        "state": task.status.state.word,
        "updated": task.status.timestamp or None,
        "reason": found.reason,
    }


def _overdue_table(overdue: Sequence[Overdue], now: datetime) -> Columns:
    columns = [
        Column("ID"),
        Column("STATE"),
        Column("CONTEXT", optional=True),
        Column("UPDATED"),
        Column("REASON"),
    ]
    cells = [
        [
            Text(task.id),
            state_text(task.status.state),
            Text(task.context_id),
            Text(ago(changed_at(task), now)),
            Text(reason),
        ]
        for task, reason in overdue
    ]
    return columns, cells


def _outcome_table(results: Sequence[dict[str, Any]]) -> Columns:
    cells = []
    for r in results:
        if r["ok"]:
            result = Text(r["state"] or "canceled", style=_word_style(r["state"] or ""))
        else:
            result = Text(f"failed: {r['error']}", style="red")
        cells.append([Text(r["taskId"]), result, Text(r["reason"])])
    return [Column("ID"), Column("RESULT"), Column("WHY OVERDUE")], cells
