"""How the ``a2ad`` client commands print: tables, task states in colour, a
task's events as a live timeline, JSON for scripts, and the one-line error."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

import msgspec
import typer
from msgspec import UNSET
from rich.console import Console
from rich.status import Status
from rich.text import Text

from ..client import StreamEvent
from ..durations import format_duration
from ..protocol.model import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    parse_timestamp,
)
from ..wording import plural
from .terminal import make_console

__all__ = [
    "STATE_STYLES",
    "Column",
    "Columns",
    "Timeline",
    "ago",
    "changed_at",
    "clock_text",
    "console_for",
    "fail",
    "follow",
    "indented",
    "part_text",
    "parts_text",
    "print_json",
    "print_json_line",
    "print_table",
    "request_text",
    "state_text",
    "status_text",
]

STATE_STYLES = {
    TaskState.SUBMITTED: "cyan",
    TaskState.WORKING: "blue",
    TaskState.INPUT_REQUIRED: "yellow",
    TaskState.AUTH_REQUIRED: "yellow",
    TaskState.COMPLETED: "green",
    TaskState.FAILED: "red",
    TaskState.REJECTED: "red",
    TaskState.CANCELED: "bright_black",
}


def console_for(*, stderr: bool = False) -> Console:
    """Where the client commands print: text as given (no markup), unwrapped
    when not on a terminal (terminal.py)."""
    return make_console(stderr=stderr, highlight=False, markup=False)


def print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
    sys.stdout.flush()


def print_json_line(item: StreamEvent) -> None:
    """One stream event as one line: the A2A 1.0 StreamResponse shape."""
    if isinstance(item, Task):
        wrapped = StreamResponse(task=item)
    elif isinstance(item, Message):
        wrapped = StreamResponse(message=item)
    elif isinstance(item, TaskStatusUpdateEvent):
        wrapped = StreamResponse(status_update=item)
    else:
        wrapped = StreamResponse(artifact_update=item)
    sys.stdout.write(msgspec.json.encode(wrapped).decode() + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Column:
    title: str
    optional: bool = False  # left out first when the terminal is too narrow


Columns = tuple[list[Column], list[list[Text]]]


def print_table(console: Console, table: Columns) -> None:
    """Columns two spaces apart, ids never cut: on a narrow terminal the optional
    columns go first, then the last column is shortened (to 10 at least)."""
    columns, rows = table
    widths = [
        max([len(c.title), *(len(row[i].plain) for row in rows)]) for i, c in enumerate(columns)
    ]
    keep = list(range(len(columns)))

    def total() -> int:
        return sum(widths[i] for i in keep) + 2 * (len(keep) - 1)

    for i, column in enumerate(columns):
        if column.optional and total() > console.width:
            keep.remove(i)
    last = keep[-1]
    widths[last] = max(10, min(widths[last], console.width - (total() - widths[last])))
    lines = [[Text(columns[i].title, style="bold") for i in range(len(columns))], *rows]
    for cells in lines:
        line = Text()
        for i in keep:
            cell = cells[i].copy()
            cell.truncate(widths[i], overflow="ellipsis", pad=i != last)
            line.append_text(cell)
            if i != last:
                line.append("  ")
        console.print(line, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
    console_for(stderr=True).print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    raise typer.Exit(code)


def state_text(state: TaskState) -> Text:
    return Text(state.word, style=STATE_STYLES.get(state, ""))


def part_text(part: Part) -> str:
    if isinstance(part.text, str):
        return part.text
    if part.data is not UNSET:
        return msgspec.json.encode(part.data).decode()
    name = part.filename or "file"
    kind = f", {part.media_type}" if part.media_type else ""
    if isinstance(part.raw, bytes):
        return f"[{name}{kind}, {plural(len(part.raw), 'byte')}]"
    return f"[{name}{kind}: {part.url}]"


def parts_text(parts: Sequence[Part]) -> str:
    return "\n".join(part_text(p) for p in parts)


def status_text(task: Task) -> str:
    message = task.status.message
    return parts_text(message.parts) if isinstance(message, Message) else ""


def request_text(task: Task, width: int = 60) -> str:
    """The first words of the task's first user message."""
    for message in task.history:
        if message.role is Role.USER:
            words = " ".join(parts_text(message.parts).split())
            return words if len(words) <= width else words[: width - 1] + "…"
    return ""


def changed_at(task: Task) -> datetime | None:
    stamp = task.status.timestamp
    return parse_timestamp(stamp) if isinstance(stamp, str) else None


def ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "-"
    seconds = (now - moment).total_seconds()
    return "just now" if seconds < 1 else f"{format_duration(seconds)} ago"


def clock_text(stamp: str | Any = UNSET) -> str:
    """A status timestamp (else now) as local wall-clock time."""
    moment = parse_timestamp(stamp) if isinstance(stamp, str) else None
    return (moment or datetime.now(UTC)).astimezone().strftime("%H:%M:%S")


def indented(text: str, indent: str = "  ") -> str:
    return "\n".join(indent + line for line in text.splitlines() or [""])


class Timeline:
    """Prints a task's events as they arrive: one line per status change and per
    artifact (streamed chunks continue their artifact's line), with a spinner on
    a terminal while nothing arrives. With ``as_json``, one JSON line per event.
    Either way it remembers the task and its last state.

    Each line starts with the time of its event: a status's timestamp, else (an
    artifact carries none) the time it arrived. With ``replay`` the events are
    history, not news: an artifact line gets its status's time (the last one
    before it), or none. An ended task shown whole lists its artifacts before
    the state it ended in, as they happened."""

    def __init__(self, *, as_json: bool, replay: bool = False) -> None:
        self.as_json = as_json
        self.replay = replay
        self.console = console_for()
        self.open_artifact: str | None = None  # the artifact whose line is still open
        self.spinner: Status | None = None
        if self.console.is_terminal and not as_json and not replay:
            self.spinner = self.console.status("waiting…")
        self.spinning = False
        self.task_id = ""
        self.state: TaskState | None = None
        self.last_stamp: str | None = None  # the newest status timestamp shown

    def __enter__(self) -> Timeline:
        self._spin(True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._spin(False)
        self._close_line()

    def show(self, item: StreamEvent) -> None:
        if isinstance(item, Task | TaskStatusUpdateEvent):
            self.state = item.status.state
            self.task_id = item.id if isinstance(item, Task) else item.task_id
        if self.as_json:
            print_json_line(item)
            return
        self._spin(False)
        if isinstance(item, Task):
            self._task(item)
        elif isinstance(item, Message):
            self._line(UNSET, Text("reply: ", style="bold"), parts_text(item.parts))
        elif isinstance(item, TaskStatusUpdateEvent):
            message = item.status.message
            note = parts_text(message.parts) if isinstance(message, Message) else ""
            self._line(
                item.status.timestamp, state_text(item.status.state), f"  {note}" if note else ""
            )
        else:
            self._artifact(item)
        if self.open_artifact is None:
            self._spin(True)

    def header(self, task: Task) -> None:
        """The task's id and context, on a line of their own (not in JSON)."""
        if not self.as_json:
            self._close_line()
            self.console.print(
                Text.assemble(f"task {task.id}", (f"  (context {task.context_id})", "dim")),
                soft_wrap=True,
            )

    def _task(self, task: Task) -> None:
        state = task.status.state
        if state.terminal:  # everything in it came before the end: the end goes last
            self.header(task)
            self._artifacts(task, None)  # when each came is not known
            note = status_text(task)
            self._line(task.status.timestamp, state_text(state), f"  {note}" if note else "")
            return
        self._line(
            task.status.timestamp,
            f"task {task.id} ",
            state_text(state),
            Text(f"  (context {task.context_id})", style="dim"),
        )
        if note := status_text(task):
            self.console.print(indented(note, " " * 10), soft_wrap=True)
        self._artifacts(task, UNSET)

    def _artifacts(self, task: Task, stamp: Any) -> None:
        for artifact in task.artifacts:
            name = artifact.name or artifact.artifact_id
            self._line(stamp, f"artifact {name}: {parts_text(artifact.parts)}")

    def _artifact(self, item: TaskArtifactUpdateEvent) -> None:
        artifact = item.artifact
        if not (item.append and self.open_artifact == artifact.artifact_id):
            name = artifact.name or artifact.artifact_id
            self._line(UNSET, f"artifact {name}: ", end="")
        self.console.print(parts_text(artifact.parts), end="", soft_wrap=True)
        self.open_artifact = artifact.artifact_id
        if item.last_chunk:
            self._close_line()

    def _line(self, stamp: str | Any, *pieces: str | Text, end: str = "\n") -> None:
        """``stamp``: a status timestamp; UNSET: when it arrived; None: unknown."""
        self._close_line()
        if isinstance(stamp, str) and stamp:
            self.last_stamp = stamp
        elif stamp is UNSET and self.replay:
            stamp = self.last_stamp
        clock = " " * 8 if stamp is None else clock_text(stamp)
        line = Text.assemble((clock + "  ", "dim"), *pieces)
        self.console.print(line, end=end, soft_wrap=True)

    def _close_line(self) -> None:
        if self.open_artifact is not None:
            self.console.print()
            self.open_artifact = None

    def _spin(self, on: bool) -> None:
        if self.spinner is not None and on != self.spinning:
            self.spinning = on
            if on:
                self.spinner.start()
            else:
                self.spinner.stop()


async def follow(events: AsyncIterator[StreamEvent], timeline: Timeline) -> None:
    async for item in events:
        timeline.show(item)
