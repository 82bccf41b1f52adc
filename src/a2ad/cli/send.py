"""``a2ad send TEXT``: send a message, and print the answer, or stream the task's events."""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer
from rich.text import Text

from ..client import DEFAULT_URL
from ..protocol.model import Message, Task
from .output import (
    Timeline,
    console_for,
    fail,
    follow,
    indented,
    parts_text,
    print_json,
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
    duration_flag,
    exit_for,
    left_running,
    session,
)

__all__ = ["send"]


def send(
    text: Annotated[str, typer.Argument(help="The message to send.")],
    context: Annotated[
        str | None, typer.Option("--context", help="Continue this context (conversation).")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="Continue this task, e.g. answer its question.")
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream", help="Show status changes and artifacts as they come.")
    ] = False,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Return the task at once; don't wait for it.")
    ] = False,
    timeout: Annotated[
        str, typer.Option("--timeout", help="How long to wait for the answer (e.g. 90s, 10m).")
    ] = "10m",
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send a message to the agent and print its answer."""
    target = Target(url, token, a2a_version, agent, binding)
    if stream and no_wait:
        fail("--stream and --no-wait don't go together; pick one", code=2)
    seconds = duration_flag(timeout, "--timeout")
    if seconds <= 0:
        fail("--timeout must be more than 0", code=2)
    if stream:
        timeline = Timeline(as_json=as_json)

        def stopped() -> str:
            return left_running(timeline.task_id or task, "stopped streaming")

        with session(target, task_id=task, timeout=seconds, interrupted=stopped) as s, timeline:
            s.run(follow(s.client.stream(text, context_id=context, task_id=task), timeline))
        raise typer.Exit(exit_for(timeline.state))
    with session(
        target,
        task_id=task,
        timeout=seconds,
        interrupted=lambda: left_running(task, "stopped waiting"),
    ) as s:
        answer = s.run(s.client.send(text, context_id=context, task_id=task, wait=not no_wait))
    if as_json:
        print_json(msgspec.to_builtins(answer))
    else:
        _show_answer(answer)
    raise typer.Exit(exit_for(answer.status.state) if isinstance(answer, Task) else 0)


def _show_answer(answer: Task | Message) -> None:
    out = console_for()
    if isinstance(answer, Message):
        out.print(parts_text(answer.parts), soft_wrap=True)
        return
    state = answer.status.state
    out.print(
        Text.assemble(
            f"task {answer.id} ",
            state_text(state),
            (f"  (context {answer.context_id})", "dim"),
        ),
        soft_wrap=True,
    )
    if note := status_text(answer):
        out.print(indented(note), soft_wrap=True)
    for artifact in answer.artifacts:
        out.print(parts_text(artifact.parts), soft_wrap=True)
    if state.interrupted:
        out.print(Text(f'answer with: a2ad send "…" --task {answer.id}', style="dim"))
    elif not state.terminal:
        out.print(Text(f"follow it with: a2ad tasks watch {answer.id}", style="dim"))
