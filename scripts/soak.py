"""Soak test with faults: mixed load on `a2ad serve` over SQLite while the server is
killed and restarted, then an audit of every task the server acknowledged.

    scripts/soak                         # about two minutes, 32 clients
    scripts/soak --out soak.json         # also write the summary as JSON

It starts `a2ad serve` (the checkout's src/, the agent in scripts/soak_agent.py) on a
fresh SQLite file and a free port, and runs ``--clients`` concurrent clients for
``--duration`` seconds. Each client, at random: sends a blocking message; sends one
with returnImmediately and polls GetTask until the turn ends; streams a message and
reads the stream to its end; subscribes to a running task; cancels a task; lists
tasks; answers a task waiting in input-required (blocking or streamed). Connection
errors and -32000 (shutting down) are retried until the request is answered.

Faults, at fixed points of the run: SIGKILL and restart (same file, same port);
SIGTERM with streams and blocking sends open (long tasks, started just before), then
restart once the process has exited; SIGKILL and restart again.

Checks, all of which must hold for exit status 0:

- lost: every task the server acknowledged (an answer carrying its id) is found.
- stuck: no task is submitted or working at the end, nor ``--settle`` seconds after
  any restart among the tasks the previous process had running.
- artifacts: every completed task has its whole streamed artifact.
- streams: every stream ended with its final event, except those open when the
  server was SIGKILLed (counted apart).
- errors: no answer other than the expected ones (a cancel of a finished task, a
  follow-up to a task no longer waiting, -32000 or no connection during a fault).

Exit status: 0 all checks hold, 1 a check failed, 2 the server did not start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import httpx
from soak_agent import expected_result, spec_text

from a2ad import (
    Client,
    ClientError,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2ad.protocol.errors import (
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent
T = TypeVar("T")
Item: TypeAlias = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

ACTIVE = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
RETRY_SECONDS = 0.25
RETRY_FOR = 90.0  # a request not answered within this, restarts included, is an error
STREAM_CAP = 120.0  # a stream still open after this is given up on
POLL_CAP = 60.0
FAULT_SLACK = 2.0  # connection errors this long after a restart still count as the fault's
OPS = {
    "send": 20,
    "send_and_poll": 15,
    "stream": 20,
    "subscribe": 10,
    "cancel": 5,
    "list": 10,
    "follow_up": 20,
}


def connection_error(exc: BaseException) -> bool:
    """The client could not reach the server or lost the connection (not a timeout).

    The client raises ``ClientError`` from None; the httpx error is its context."""
    cause = exc.__context__
    return (
        isinstance(exc, ClientError)
        and isinstance(cause, httpx.TransportError)
        and (
            isinstance(cause, httpx.ConnectTimeout) or not isinstance(cause, httpx.TimeoutException)
        )
    )


def ended_how(exc: Exception) -> str:
    """How a stream that had started ended in an error, in a few words."""
    if connection_error(exc):
        return f"connection lost ({type(exc.__context__).__name__})"
    if isinstance(exc, ClientError) and "ended the stream" in exc.message:
        return "closed before the task ended"  # a subscription, without reconnecting
    return f"{type(exc).__name__}: {str(exc)[:80]}"


def epoch(timestamp: Any) -> float | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def status_text(task: Task) -> str:
    message = task.status.message
    return message.text if isinstance(message, Message) else ""


@dataclass
class Spec:
    chunks: int
    delay: float
    ask: bool

    @property
    def text(self) -> str:
        return spec_text(self.chunks, self.delay, self.ask)


@dataclass
class Tracked:
    """A task the server acknowledged, as this script last saw it."""

    spec: Spec
    state: TaskState
    asks: bool  # its current turn may still pause for input
    cancel_acknowledged: bool = False


@dataclass
class Fault:
    kind: str  # "SIGKILL" or "SIGTERM"
    at: float  # run seconds when the signal was sent
    wall: float  # the same as epoch seconds, to compare with status timestamps
    streams_open: int
    exited_after: float | None = None  # seconds from the signal to the process's exit
    exit_code: int | None = None
    ready_at: float | None = None  # run seconds when the restarted server answered
    restarted_after: float | None = None  # seconds from the signal to that answer
    still_active_after_settle: int | None = None  # the old process's tasks, at ready + settle
    tasks_failed: int = 0  # tasks the server failed for this fault (orphaned or shut down)
    failed_within: float | None = None  # seconds from ready to the last of them


@dataclass
class StreamEnd:
    kind: str  # "stream" (a send's own stream) or "subscribe"
    start: float
    end: float
    final: bool
    how: str  # "final event", or how it ended without one


class Server:
    """`a2ad serve` generations on one SQLite file and one port."""

    def __init__(self, args: argparse.Namespace, workdir: Path, port: int) -> None:
        self.args = args
        self.workdir = workdir
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.db = workdir / "soak.db"
        self.proc: subprocess.Popen[bytes] | None = None
        self.logs: list[Path] = []

    def start(self) -> None:
        log = self.workdir / f"server-{len(self.logs)}.log"
        self.logs.append(log)
        path = os.pathsep.join(
            p for p in (str(ROOT / "src"), str(SCRIPTS), os.environ.get("PYTHONPATH")) if p
        )
        command = [
            sys.executable,
            "-m",
            "a2ad.cli",
            "serve",
            "--port",
            str(self.port),
            "--store",
            f"sqlite:///{self.db}",
            "--agent",
            "soak_agent",
            "--lease-seconds",
            str(self.args.lease_seconds),
            "--shutdown-grace",
            f"{self.args.shutdown_grace:g}s",
            "--log-level",
            "info",
        ]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
            )

    async def ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as http:
            while True:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise SetupError(f"a2ad serve exited with {self.proc.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    answer = await http.get(self.url + "/.well-known/agent-card.json")
                    if answer.status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise SetupError(f"a2ad serve did not answer within {timeout:g} s")
                await asyncio.sleep(0.05)

    async def stop(self, sig: int, timeout: float) -> int | None:
        """Send ``sig`` and wait for the exit; SIGKILL it after ``timeout``."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)
                return None
            await asyncio.sleep(0.02)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_counts(self) -> list[dict[str, int]]:
        counts = []
        for log in self.logs:
            text = log.read_text(errors="replace")
            counts.append(
                {
                    "lines": text.count("\n"),
                    "tracebacks": text.count("Traceback (most recent call last)"),
                    "asgi_exceptions": text.count("Exception in ASGI application"),
                }
            )
        return counts


class Soak:
    def __init__(self, args: argparse.Namespace, server: Server) -> None:
        self.args = args
        self.server = server
        self.start = time.monotonic()
        self.load_end = args.duration
        self.tasks: dict[str, Tracked] = {}
        self.active: set[str] = set()  # submitted or working, as last seen
        self.waiting: set[str] = set()  # input-required, nobody answering yet
        self.ops: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.expected: Counter[str] = Counter()
        self.unexpected: Counter[str] = Counter()
        self.samples: dict[str, str] = {}
        self.streams: list[StreamEnd] = []
        self.streams_open = 0
        self.faults: list[Fault] = []
        self.down = False  # between a fault's signal and the restarted server's answer

    def now(self) -> float:
        return time.monotonic() - self.start

    # --- what the clients saw ---

    def acknowledge(self, task: Task, spec: Spec) -> None:
        self.tasks[task.id] = Tracked(spec, task.status.state, asks=spec.ask)
        self.observe(task)

    def observe(self, item: Item) -> None:
        if isinstance(item, Task):
            task_id, state = item.id, item.status.state
        elif isinstance(item, TaskStatusUpdateEvent):
            task_id, state = item.task_id, item.status.state
        else:
            return
        tracked = self.tasks.get(task_id)
        if tracked is None or tracked.state.terminal:
            return  # a late view of a task that has ended changes nothing
        tracked.state = state
        self.active.discard(task_id)
        self.waiting.discard(task_id)
        if state in ACTIVE:
            self.active.add(task_id)
        elif state == TaskState.INPUT_REQUIRED:
            self.waiting.add(task_id)

    def forget(self, task_id: str) -> None:
        """The server says the task has ended: pick it no more for a subscribe or cancel."""
        self.active.discard(task_id)
        self.waiting.discard(task_id)

    def retried(self, op: str, exc: Exception) -> None:
        """Count a retry under the fault it happened in; outside one it is an error."""
        what = "-32000" if isinstance(exc, ServerBusyError) else "no connection"
        fault = self.faults[-1] if self.faults else None
        if fault is not None and (
            self.down or (fault.ready_at is not None and self.now() < fault.ready_at + FAULT_SLACK)
        ):
            self.retries[f"{what} ({fault.kind} at {fault.at:.0f} s)"] += 1
        else:
            self.retries[f"{what} (no fault)"] += 1
            self.error(op, exc)

    def error(self, op: str, exc: BaseException) -> None:
        key = f"{op}: {type(exc).__name__}"
        self.unexpected[key] += 1
        self.samples.setdefault(key, str(exc)[:300])

    # --- requests ---

    async def retrying(self, op: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` until it is answered: connection errors and -32000 are retried."""
        deadline = self.now() + RETRY_FOR
        while True:
            try:
                return await call()
            except ServerBusyError as exc:
                self.retried(op, exc)
                failure: Exception = exc
            except ClientError as exc:
                if not connection_error(exc):
                    raise
                self.retried(op, exc)
                failure = exc
            if self.now() > deadline:
                raise failure
            await asyncio.sleep(RETRY_SECONDS)

    def new_spec(self, rng: random.Random, *, ask: bool | None = None) -> Spec:
        if rng.random() < 0.08:
            return Spec(chunks=6, delay=1.0, ask=False)  # a long one: 6 s
        return Spec(
            chunks=rng.randint(2, 5),
            delay=round(rng.uniform(0.02, 0.4), 2),
            ask=rng.random() < 0.3 if ask is None else ask,
        )

    async def op_send(self, client: Client, rng: random.Random) -> None:
        await self.send_new(client, self.new_spec(rng))

    async def send_new(self, client: Client, spec: Spec) -> None:
        answer = await self.retrying("send", lambda: client.send(spec.text))
        assert isinstance(answer, Task)
        self.acknowledge(answer, spec)

    async def op_send_and_poll(self, client: Client, rng: random.Random) -> None:
        spec = self.new_spec(rng)
        answer = await self.retrying("send_and_poll", lambda: client.send(spec.text, wait=False))
        assert isinstance(answer, Task)
        self.acknowledge(answer, spec)
        task, since = answer, self.now()
        while task.status.state in ACTIVE:
            if self.now() - since > POLL_CAP:
                self.unexpected[f"poll: still {task.status.state.word} after {POLL_CAP:g} s"] += 1
                return
            await asyncio.sleep(rng.uniform(0.1, 0.4))
            task = await self.retrying("send_and_poll", lambda: client.get_task(answer.id))
            self.observe(task)

    async def op_stream(self, client: Client, rng: random.Random) -> None:
        spec = self.new_spec(rng)
        await self.read_stream("stream", lambda: client.stream(spec.text), spec=spec)

    async def op_subscribe(self, client: Client, rng: random.Random) -> None:
        # Only tasks whose turn ends them: a subscription stays open through input-required.
        candidates = [t for t in self.active if not self.tasks[t].asks]
        if not candidates:
            await self.op_stream(client, rng)
            return
        task_id = rng.choice(candidates)
        await self.read_stream(
            "subscribe", lambda: client.subscribe(task_id, reconnect=0), task_id=task_id
        )

    async def op_cancel(self, client: Client, rng: random.Random) -> None:
        candidates = list(self.active | self.waiting)
        if not candidates:
            await self.op_list(client, rng)
            return
        task_id = rng.choice(candidates)
        try:
            task = await self.retrying("cancel", lambda: client.cancel_task(task_id))
        except TaskNotCancelableError:
            self.expected["cancel: the task had ended"] += 1
            self.forget(task_id)
            return
        self.observe(task)
        if task.status.state == TaskState.CANCELED:
            self.tasks[task_id].cancel_acknowledged = True

    async def op_list(self, client: Client, rng: random.Random) -> None:
        state = rng.choice([None, TaskState.WORKING, TaskState.COMPLETED, TaskState.INPUT_REQUIRED])
        size = rng.choice([10, 50, 100])
        page = await self.retrying("list", lambda: client.list_page(state=state, page_size=size))
        for task in page.tasks:
            self.observe(task)

    async def op_follow_up(self, client: Client, rng: random.Random) -> None:
        if not self.waiting:
            spec = self.new_spec(rng, ask=True)
            await self.read_stream("stream", lambda: client.stream(spec.text), spec=spec)
            return
        task_id = rng.choice(list(self.waiting))
        self.waiting.discard(task_id)  # claimed: one answer per question
        tracked = self.tasks[task_id]
        try:
            if rng.random() < 0.5:
                answer = await self.retrying(
                    "follow_up", lambda: client.send("go", task_id=task_id)
                )
                tracked.asks = False
                self.observe(answer)
            else:
                await self.read_stream(
                    "stream", lambda: client.stream("go", task_id=task_id), task_id=task_id
                )
        except UnsupportedOperationError:
            self.expected["follow-up: the task was no longer waiting"] += 1

    async def read_stream(
        self,
        kind: str,
        open_stream: Callable[[], AsyncIterator[Item]],
        *,
        spec: Spec | None = None,
        task_id: str | None = None,
    ) -> None:
        """Read a stream to its end and record how it ended; retried while it has
        not started. With ``spec`` the stream's first item is a new task to
        acknowledge; ``task_id`` is the task subscribed to, or followed up."""
        deadline = self.now() + RETRY_FOR
        while True:
            last: Item | None = None
            start, how = self.now(), "final event"
            self.streams_open += 1
            try:
                async with asyncio.timeout(STREAM_CAP):
                    async for item in open_stream():
                        if last is None and spec is not None:
                            assert isinstance(item, Task)
                            self.acknowledge(item, spec)
                        if last is None and task_id is not None and kind == "stream":
                            self.tasks[task_id].asks = False  # the follow-up was taken
                        last = item
                        self.observe(item)
            except UnsupportedOperationError:
                if last is not None:
                    raise
                self.expected[f"{kind}: the task had ended or was not waiting"] += 1
                if task_id is not None:
                    self.forget(task_id)
                return
            except (ServerBusyError, ClientError) as exc:
                if last is not None:
                    how = ended_how(exc)
                else:
                    busy = isinstance(exc, ServerBusyError)
                    if not busy and not connection_error(exc):
                        raise
                    self.retried(kind, exc)
                    if self.now() > deadline:
                        raise
                    await asyncio.sleep(RETRY_SECONDS)
                    continue
            except TimeoutError:
                how = f"still open after {STREAM_CAP:g} s"
            finally:
                self.streams_open -= 1
            final = last is not None and self.is_final(last, kind)
            if not final and how == "final event":
                how = "closed without a final event"
            self.streams.append(StreamEnd(kind, start, self.now(), final, how))
            return

    @staticmethod
    def is_final(item: Item, kind: str) -> bool:
        if isinstance(item, Message):
            return True
        if isinstance(item, Task | TaskStatusUpdateEvent):
            state = item.status.state
            # A send's own stream also ends when the turn pauses for input.
            return state.terminal or (kind == "stream" and state.interrupted)
        return False

    async def client_loop(self, n: int) -> None:
        rng = random.Random(self.args.seed * 1000 + n)
        names, weights = list(OPS), list(OPS.values())
        async with Client(self.server.url, version="1.0", timeout=30.0) as client:
            while self.now() < self.load_end:
                op = rng.choices(names, weights)[0]
                self.ops[op] += 1
                try:
                    await getattr(self, f"op_{op}")(client, rng)
                except Exception as exc:
                    self.error(op, exc)

    # --- faults ---

    async def inject_faults(self) -> None:
        d = self.args.duration
        async with asyncio.TaskGroup() as group:
            for share, kind in ((0.22, "SIGKILL"), (0.5, "SIGTERM"), (0.78, "SIGKILL")):
                if kind == "SIGTERM":
                    await self.sleep_until(share * d - 1.5)
                    await self.open_long_work(group)
                await self.sleep_until(share * d)
                fault = await self.fault(kind)
                group.create_task(self.settle_check(fault))

    async def sleep_until(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - self.now()))

    async def open_long_work(self, group: asyncio.TaskGroup) -> None:
        """Streams and blocking sends of 6 s tasks, so that SIGTERM finds them open."""
        client = Client(self.server.url, version="1.0", timeout=30.0)
        spec = Spec(chunks=6, delay=1.0, ask=False)

        async def one(stream: bool) -> None:
            try:
                if stream:
                    await self.read_stream("stream", lambda: client.stream(spec.text), spec=spec)
                else:
                    await self.send_new(client, spec)
            except Exception as exc:
                self.error("long work at SIGTERM", exc)

        async def all_of_them() -> None:
            async with client:
                async with asyncio.TaskGroup() as inner:
                    for stream in (True, True, True, True, False, False):
                        inner.create_task(one(stream))

        group.create_task(all_of_them())

    async def fault(self, kind: str) -> Fault:
        fault = Fault(kind, at=self.now(), wall=time.time(), streams_open=self.streams_open)
        self.faults.append(fault)
        self.down = True
        code = await self.server.stop(
            signal.SIGKILL if kind == "SIGKILL" else signal.SIGTERM,
            timeout=self.args.shutdown_grace + 20,
        )
        fault.exited_after = self.now() - fault.at
        fault.exit_code = code
        self.server.start()
        await self.server.ready()
        self.down = False
        fault.ready_at = self.now()
        fault.restarted_after = fault.ready_at - fault.at
        return fault

    async def settle_check(self, fault: Fault) -> None:
        """``--settle`` seconds after the restart: the old process's tasks that still
        read submitted or working (status set before the signal) are stuck."""
        assert fault.ready_at is not None
        await self.sleep_until(fault.ready_at + self.args.settle)
        async with Client(self.server.url, version="1.0", timeout=30.0) as client:
            tasks = await self.in_store(client, ACTIVE)
        fault.still_active_after_settle = sum(
            1 for t in tasks if (epoch(t.status.timestamp) or 0.0) < fault.wall
        )

    async def in_store(self, client: Client, states: frozenset[TaskState]) -> list[Task]:
        """Every task in the store in one of ``states`` (ListTasks, page after page)."""

        async def listed(state: TaskState) -> list[Task]:
            return [
                t async for t in client.list_tasks(state=state, page_size=100, history_length=0)
            ]

        found: list[Task] = []
        for state in states:
            found += await self.retrying("audit", functools.partial(listed, state))
        return found

    # --- the audit ---

    async def audit(self) -> dict[str, Any]:
        lost, stuck, no_artifact, cancel_lost = [], [], [], []
        states: Counter[str] = Counter()
        gate = asyncio.Semaphore(16)

        async with Client(self.server.url, version="1.0", timeout=30.0) as client:

            async def check(task_id: str, tracked: Tracked) -> None:
                async with gate:
                    try:
                        task = await self.retrying(
                            "audit", lambda: client.get_task(task_id, history_length=0)
                        )
                    except TaskNotFoundError:
                        lost.append(task_id)
                        return
                state = task.status.state
                states[state.word] += 1
                if state in ACTIVE:
                    stuck.append(task_id)
                if state == TaskState.COMPLETED:
                    result = [a for a in task.artifacts if a.name == "result"]
                    text = "".join(
                        p.text for a in result for p in a.parts if isinstance(p.text, str)
                    )
                    if len(result) != 1 or text != expected_result(tracked.spec.chunks):
                        no_artifact.append(task_id)
                if tracked.cancel_acknowledged and state != TaskState.CANCELED:
                    cancel_lost.append(task_id)

            async with asyncio.TaskGroup() as group:
                for task_id, tracked in self.tasks.items():
                    group.create_task(check(task_id, tracked))
            active_in_store = await self.in_store(client, ACTIVE)
            failed = await self.in_store(client, frozenset({TaskState.FAILED}))

        self.attribute_failures(failed)
        return {
            "acknowledged": len(self.tasks),
            "lost": len(lost),
            "stuck_acknowledged": len(stuck),
            "stuck_in_store": len(active_in_store),
            "completed_without_artifact": len(no_artifact),
            "cancel_answered_but_not_kept": len(cancel_lost),
            "final_states": dict(sorted(states.items())),
            "examples": {
                "lost": lost[:5],
                "stuck": [t.id for t in active_in_store][:5],
                "completed_without_artifact": no_artifact[:5],
                "cancel_answered_but_not_kept": cancel_lost[:5],
            },
        }

    def attribute_failures(self, failed: list[Task]) -> None:
        """Count the tasks the server failed because it died (an orphan, failed by
        the next process) or shut down, for the last fault of that kind before."""
        for task in failed:
            text = status_text(task).lower()
            when = epoch(task.status.timestamp)
            if when is None:
                continue
            if "server stopped" in text:
                kind = "SIGKILL"
            elif "shut down" in text:
                kind = "SIGTERM"
            else:
                continue
            before = [f for f in self.faults if f.kind == kind and f.wall <= when]
            if not before:
                continue
            fault = before[-1]
            fault.tasks_failed += 1
            if fault.ready_at is not None:
                ready_wall = fault.wall + (fault.ready_at - fault.at)
                late = round(when - ready_wall, 2)
                if fault.failed_within is None or late > fault.failed_within:
                    fault.failed_within = late

    def stream_summary(self) -> dict[str, Any]:
        def during(s: StreamEnd, kind: str) -> bool:
            """The stream was open while the process was going down after ``kind``."""
            return any(
                f.kind == kind and s.start <= f.at + (f.exited_after or 0.0) and s.end >= f.at
                for f in self.faults
            )

        cut = [s for s in self.streams if not s.final]
        by_kill = [s for s in cut if during(s, "SIGKILL")]
        other = [s for s in cut if not during(s, "SIGKILL")]
        return {
            "total": len(self.streams),
            "subscribes": sum(1 for s in self.streams if s.kind == "subscribe"),
            "ended_with_final_event": len(self.streams) - len(cut),
            "cut_by_sigkill": len(by_kill),
            "ended_without_final_event": len(other),
            "of_which_during_sigterm": sum(1 for s in other if during(s, "SIGTERM")),
            "during_sigterm_ended_with_final_event": sum(
                1 for s in self.streams if s.final and during(s, "SIGTERM")
            ),
            "how_they_ended_without_final_event": dict(Counter(s.how for s in other).most_common()),
            "examples": [
                {"kind": s.kind, "start": round(s.start, 2), "end": round(s.end, 2), "how": s.how}
                for s in other[:20]
            ],
        }


def machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kb / 1024 / 1024:.1f} GiB"
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory": memory,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    return head + (" (src/ modified)" if git("status", "--porcelain", "src") else "")


class SetupError(Exception):
    """The server did not start, or did not come back after a fault."""


def first_setup_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            exc = first_setup_error(exc)
        if isinstance(exc, SetupError):
            return exc
    return group


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def checks(summary: dict[str, Any]) -> dict[str, bool]:
    tasks, streams = summary["tasks"], summary["streams"]
    after_restart = sum(f["still_active_after_settle"] or 0 for f in summary["faults"])
    return {
        "lost = 0": tasks["lost"] == 0,
        "stuck = 0 (at the end)": tasks["stuck_in_store"] == 0,
        f"stuck = 0 ({summary['config']['settle']:g} s after each restart)": after_restart == 0,
        "every completed task has its artifact": tasks["completed_without_artifact"] == 0,
        "every stream ended with a final event, but those cut by SIGKILL": (
            streams["ended_without_final_event"] == 0
        ),
        "no unexpected error": sum(summary["errors"]["unexpected"].values()) == 0,
    }


def table(summary: dict[str, Any]) -> str:
    """The summary as aligned rows (a value may take several lines), then the checks."""
    tasks, streams, settle = summary["tasks"], summary["streams"], summary["config"]["settle"]
    rows: list[tuple[str, str]] = [
        ("tasks acknowledged", str(tasks["acknowledged"])),
        ("  final states", ", ".join(f"{k} {v}" for k, v in tasks["final_states"].items())),
        ("  lost", str(tasks["lost"])),
        (
            "  stuck at the end",
            f"{tasks['stuck_in_store']} ({tasks['stuck_acknowledged']} acknowledged)",
        ),
        ("  completed without their artifact", str(tasks["completed_without_artifact"])),
        ("  canceled by an answer, not at the end", str(tasks["cancel_answered_but_not_kept"])),
        ("requests", ", ".join(f"{k} {v}" for k, v in summary["ops"].items())),
        ("  retried", "\n".join(f"{v} {k}" for k, v in summary["retries"].items()) or "none"),
        ("streams", f"{streams['total']} ({streams['subscribes']} subscribes)"),
        (
            "  ended with a final event",
            f"{streams['ended_with_final_event']} "
            f"({streams['during_sigterm_ended_with_final_event']} of them open while SIGTERM "
            "stopped the server)",
        ),
        ("  cut by a SIGKILL", str(streams["cut_by_sigkill"])),
        (
            "  ended without a final event",
            f"{streams['ended_without_final_event']} "
            f"({streams['of_which_during_sigterm']} of them open while SIGTERM stopped the server)",
        ),
    ]
    rows += [
        (f"    {how}", str(n)) for how, n in streams["how_they_ended_without_final_event"].items()
    ]
    for f in summary["faults"]:
        lines = [
            f"{f['streams_open']} streams open; the process exited {f['exited_after']:.1f} s "
            f"later (status {f['exit_code']}), answered again {f['restarted_after']:.1f} s later",
        ]
        if f["kind"] == "SIGKILL":
            last = "-" if f["failed_within"] is None else f"{f['failed_within']:.1f} s"
            lines.append(
                f"{f['tasks_failed']} tasks failed as orphans, the last {last} after the restart"
            )
        else:
            lines.append(f"{f['tasks_failed']} tasks failed as the server shut down")
        lines.append(
            f"{f['still_active_after_settle']} of its tasks still active "
            f"{settle:g} s after the restart"
        )
        rows.append((f"{f['kind']} at {f['at']:.0f} s", "\n".join(lines)))
    rows += [
        (
            f"server log {n}",
            f"{log['lines']} lines, {log['tracebacks']} tracebacks "
            f"({log['asgi_exceptions']} 'Exception in ASGI application')",
        )
        for n, log in enumerate(summary["server_logs"])
    ]
    rows += [(f"expected: {key}", str(n)) for key, n in summary["errors"]["expected"].items()]
    rows += [
        (f"UNEXPECTED {key}", f"{n}, e.g. {summary['errors']['samples'].get(key, '')}")
        for key, n in summary["errors"]["unexpected"].items()
    ]
    width = max(len(name) for name, _ in rows)
    config, host = summary["config"], summary["machine"]
    out = [
        f"a2ad soak, {summary['date']}, commit {summary['commit']}: {config['clients']} clients, "
        f"{config['duration']:g} s, --lease-seconds {config['lease_seconds']:g}; "
        f"{host['cpus']} CPUs, load {host['load_average_at_start'][0]}",
        "",
    ]
    for name, value in rows:
        first, *rest = value.split("\n")
        out.append(f"{name.ljust(width)}  {first}")
        out += [f"{'':{width}}  {line}" for line in rest]
    out.append("")
    out += [f"{'PASS' if ok else 'FAIL'}  {name}" for name, ok in summary["checks"].items()]
    return "\n".join(out)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    server = Server(args, workdir, args.port or free_port())
    started = datetime.now().astimezone()
    info = machine()
    server.start()
    try:
        await server.ready()
        soak = Soak(args, server)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(soak.inject_faults())
                for n in range(args.clients):
                    group.create_task(soak.client_loop(n))
        except BaseExceptionGroup as group_error:
            raise first_setup_error(group_error) from None
        load_seconds = soak.now()
        last_ready = max(f.ready_at or 0.0 for f in soak.faults)
        await soak.sleep_until(last_ready + args.settle)
        tasks = await soak.audit()
        server_logs = server.log_counts()
    finally:
        server.close()
    info["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    summary: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "command": "scripts/soak " + " ".join(sys.argv[1:]),
        "commit": commit(),
        "machine": info,
        "config": {
            "duration": args.duration,
            "clients": args.clients,
            "lease_seconds": args.lease_seconds,
            "shutdown_grace": args.shutdown_grace,
            "settle": args.settle,
            "seed": args.seed,
        },
        "load_seconds": round(load_seconds, 1),
        "tasks": tasks,
        "ops": dict(soak.ops.most_common()),
        "retries": dict(soak.retries),
        "streams": soak.stream_summary(),
        "faults": [
            {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(f).items()}
            for f in soak.faults
        ],
        "errors": {
            "expected": dict(soak.expected.most_common()),
            "unexpected": dict(soak.unexpected.most_common()),
            "samples": soak.samples,
        },
        "server_logs": server_logs,
    }
    summary["checks"] = checks(summary)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument(
        "--lease-seconds", type=float, default=15.0, help="passed to a2ad serve (its default: 15)"
    )
    parser.add_argument(
        "--shutdown-grace", type=float, default=10.0, help="passed to a2ad serve (its default: 10)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds after a restart by which the old process's tasks must have ended",
    )
    parser.add_argument("--port", type=int, default=0, help="the server's port (0: a free one)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the clients' choices")
    parser.add_argument("--out", type=Path, help="write the summary as JSON here")
    parser.add_argument(
        "--keep", type=Path, help="keep the SQLite file and server logs in this directory"
    )
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        workdir_cm: contextlib.AbstractContextManager[str] = contextlib.nullcontext(str(args.keep))
    else:
        workdir_cm = tempfile.TemporaryDirectory(prefix="a2ad-soak-")
    with workdir_cm as workdir:
        try:
            summary = asyncio.run(run(args, Path(workdir)))
        except SetupError as exc:
            print(f"soak: {exc}", file=sys.stderr)
            return 2
    print(table(summary))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if all(summary["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
