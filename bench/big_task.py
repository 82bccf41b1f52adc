"""What a large task costs: a follow-up's appends as the task grows, and reads of
other tasks while a large one is appended to. In-process, on the stores' own API
(the engine's writer makes the same two calls per follow-up).

    .venv/bin/python bench/big_task.py                       # memory and sqlite
    .venv/bin/python bench/big_task.py --stores postgresql   # A2AD_BENCH_POSTGRES

Two parts, per store:

- **follow-up by size**: a task with ``--earlier`` messages before it (each
  ``--message-kib`` KiB of text; the task keeps its newest 1,000, the default
  bound, the rest counted as dropped), then ``--followups`` follow-ups, each the
  two appends a follow-up makes (the user's message with ``working``, then the
  agent's answer with ``input-required``); prints the median time of one.
- **others during a big task**: one task fed ``--big`` follow-ups of
  ``--big-mib`` MiB each, while a reader gets a small task in a loop; prints the
  follow-ups' median and last times and the reads' p50/p99.

Then the process's peak RSS. Each store runs in a process of its own (peak RSS
is the process's). ``postgresql`` uses the server at A2AD_BENCH_POSTGRES
(default postgresql://postgres@127.0.0.1:5432/postgres), in a schema made for
the run and dropped after. It prints a table, then one JSON line per store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from msgspec import UNSET

from a2ad import MemoryStore, Message, Role, SqliteStore, TextPart
from a2ad.protocol.model import Task, TaskState, TaskStatus, TaskStatusUpdateEvent, new_id
from a2ad.store.base import TaskStore

POSTGRES = os.environ.get("A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
KEPT = 1000  # the default history bound


def message(role: Role, size: int, task_id: str) -> Message:
    return Message(message_id=new_id(), role=role, parts=[TextPart("x" * size)], task_id=task_id)


def status(task_id: str, state: TaskState, answer: Message | None = None) -> TaskStatusUpdateEvent:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    body = (
        TaskStatus(state=state, timestamp=stamp, message=answer)
        if answer
        else TaskStatus(state=state, timestamp=stamp)
    )
    return TaskStatusUpdateEvent(task_id=task_id, context_id="ctx", status=body)


async def new_task(store: TaskStore, earlier: int, size: int) -> tuple[str, int]:
    task_id = new_id()
    kept = min(earlier, KEPT)
    history = [message(Role.USER if i % 2 else Role.AGENT, size, task_id) for i in range(kept)]
    metadata: dict[str, Any] = (
        {"a2ad": {"historyDropped": earlier - kept}} if earlier > kept else {}
    )
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    task = Task(
        id=task_id,
        context_id="ctx",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, timestamp=stamp),
        history=history,
        metadata=metadata or UNSET,
    )
    stored = await store.create(task)
    return task_id, stored.seq


async def follow_up(store: TaskStore, task_id: str, seq: int, size: int) -> int:
    """The two appends of one follow-up; the task's seq after them."""
    stored = await store.append(
        task_id,
        seq,
        [status(task_id, TaskState.WORKING)],
        user_message=message(Role.USER, size, task_id),
    )
    answer = message(Role.AGENT, size, task_id)
    stored = await store.append(
        task_id, stored.seq, [status(task_id, TaskState.INPUT_REQUIRED, answer)]
    )
    return stored.seq


async def by_size(store: TaskStore, args: argparse.Namespace) -> dict[str, float]:
    size = args.message_kib * 1024
    medians = {}
    for earlier in args.earlier:
        task_id, seq = await new_task(store, earlier, size)
        times = []
        for _ in range(args.followups):
            started = time.perf_counter()
            seq = await follow_up(store, task_id, seq, size)
            times.append(time.perf_counter() - started)
        medians[str(earlier)] = statistics.median(times) * 1000
    return medians


async def others(store: TaskStore, args: argparse.Namespace) -> dict[str, float]:
    small_id, _ = await new_task(store, 1, 100)
    big_id, seq = await new_task(store, 1, 100)
    size = args.big_mib * 1024 * 1024
    reads: list[float] = []
    done = asyncio.Event()

    async def reader() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await store.get(small_id)
            reads.append(time.perf_counter() - started)
            await asyncio.sleep(0.001)

    task = asyncio.create_task(reader())
    times = []
    try:
        for _ in range(args.big):
            started = time.perf_counter()
            seq = await follow_up(store, big_id, seq, size)
            times.append(time.perf_counter() - started)
            await asyncio.sleep(0)  # as between two requests: the memory store never waits
    finally:
        done.set()
        await task
    reads.sort()
    return {
        "followup_median_ms": statistics.median(times) * 1000,
        "followup_last_ms": times[-1] * 1000,
        "get_small_p50_ms": reads[len(reads) // 2] * 1000,
        "get_small_p99_ms": reads[min(len(reads) - 1, int(len(reads) * 0.99))] * 1000,
        "gets": len(reads),
    }


@asynccontextmanager
async def open_store(name: str, folder: str) -> AsyncIterator[TaskStore]:
    if name == "memory":
        yield MemoryStore(max_tasks=100)
    elif name == "sqlite":
        async with SqliteStore(os.path.join(folder, "big.db")) as store:
            yield store
    elif name == "postgresql":
        import asyncpg  # type: ignore[import-untyped]

        from a2ad.store.postgres import PostgresStore

        schema = f"a2ad_bench_{uuid.uuid4().hex[:12]}"
        admin = await asyncpg.connect(POSTGRES)
        await admin.execute(f"CREATE SCHEMA {schema}")
        try:
            separator = "&" if "?" in POSTGRES else "?"
            async with PostgresStore(f"{POSTGRES}{separator}search_path={schema}") as store:
                yield store
        finally:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")
            await admin.close()
    else:
        raise SystemExit(f"unknown store {name!r}: memory, sqlite or postgresql")


async def one_store(name: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        async with open_store(name, folder) as store:
            sizes = await by_size(store, args)
            during = await others(store, args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"store": name, "followup_ms": sizes, **during, "peak_rss_mib": round(peak)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument(
        "--earlier", default="1,100,10000", type=lambda s: [int(x) for x in s.split(",")]
    )
    parser.add_argument("--message-kib", type=int, default=4)
    parser.add_argument("--followups", type=int, default=20)
    parser.add_argument("--big", type=int, default=30)
    parser.add_argument("--big-mib", type=int, default=1)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one_store(args.one, args))))
        return
    for name in args.stores.split(","):
        argv = [a for a in sys.argv[1:] if not a.startswith("--stores")]
        if "--stores" in sys.argv:
            i = sys.argv.index("--stores")
            argv = sys.argv[1:i] + sys.argv[i + 2 :]
        out = subprocess.run(
            [sys.executable, __file__, *argv, "--one", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        sizes = "  ".join(f"{k} earlier: {v:.2f} ms" for k, v in result["followup_ms"].items())
        print(f"{name}: follow-up at {sizes}")
        print(
            f"{name}: {args.big} follow-ups of {args.big_mib} MiB: median "
            f"{result['followup_median_ms']:.1f} ms, last {result['followup_last_ms']:.1f} ms; "
            f"get of a small task meanwhile p50 {result['get_small_p50_ms']:.2f} ms, "
            f"p99 {result['get_small_p99_ms']:.2f} ms ({result['gets']} gets); "
            f"peak RSS {result['peak_rss_mib']} MiB"
        )
        print(json.dumps(result))


if __name__ == "__main__":
    main()
