"""ListTasks latency as the SQLite store grows.

For each size N, prefill a fresh SQLite file with N tasks, then time
``Engine.list_tasks`` (the real path: request -> checked query -> ListQuery -> SqliteStore's worker
thread -> SQL -> decode -> task_view) for a few typical requests, and beside it
the two statements a filtered list runs, alone on a separate connection: the
COUNT(*) behind ``totalSize`` and the page SELECT.

    .venv/bin/python bench/list_scale.py --sizes 1000,100000,1000000 --explain

The data: 1% of the tasks in one "hot" context, the rest over N/10 contexts;
86% completed, 5% working, 4% failed, 3% input-required, 2% canceled; status
timestamps spread over 30 days; each task one user message in its history and
one text artifact. Prefill lets SqliteStore create the schema, then bulk-inserts
rows encoded as the store encodes them (msgspec JSON of the Task, the same
indexed columns, the task_count trigger left to count) on a second connection,
and checks through SqliteStore.get and Engine.list_tasks that the store reads
them back as generated. The store never runs ANALYZE and neither does this.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from a2ad import EchoAgent, Engine, SqliteStore
from a2ad.engine.access import Access
from a2ad.protocol.model import (
    Artifact,
    ListTasksRequest,
    Message,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
    parse_state,
)
from a2ad.protocol.requests import task_query
from a2ad.store.sqlite import _list_sql  # the exact statements the store runs

ANYONE = Access()  # what a server without auth lists for every caller

SEED = 20260501
HOT_SHARE = 0.01
STATE_MIX = (
    (TaskState.COMPLETED, 86),
    (TaskState.WORKING, 5),
    (TaskState.FAILED, 4),
    (TaskState.INPUT_REQUIRED, 3),
    (TaskState.CANCELED, 2),
)
END_MS = int(datetime(2026, 5, 1, tzinfo=UTC).timestamp() * 1000)
SPAN_MS = 30 * 86_400_000  # one month of status timestamps
AFTER_MS = END_MS - 86_400_000  # statusTimestampAfter: the last day
PAGE = 50
DEEP = 20  # the deep page is the 20th
CHUNK = 20_000
WORDS = (
    "summarize the quarterly report translate this paragraph into French check the "
    "invoice totals draft a reply to the customer list open tickets for project "
    "analyze this data and plot the trend find flights to Lisbon next week"
).split()

_INSERT = """INSERT INTO tasks (id, context_id, state, status_ts, seq, evict_class,
    evict_order, lease_owner, lease_expires, deadline, body)
    VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, NULL, ?)"""


def stamp(ms: int) -> str:
    """ProtoJSON timestamp text, as the engine writes it (UTC, milliseconds, Z)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Expected(NamedTuple):
    """What the store should answer, known from generation."""

    n: int
    hot: str
    totals: dict[str, int]  # scenario name -> totalSize
    newest: list[str]  # ids of the unfiltered first page
    samples: list[Task]  # a few tasks to read back whole


# --- prefill ---


def generate(n: int) -> tuple[list[tuple[int, str, str, TaskState]], str]:
    """(timestamp ms, task id, context id, state) per task, oldest first."""
    rng = random.Random(SEED + n)
    hot = new_id(rng)
    contexts = [new_id(rng) for _ in range(max(10, n // 10))]
    states = rng.choices([s for s, _ in STATE_MIX], [w for _, w in STATE_MIX], k=n)
    start = END_MS - SPAN_MS
    metas = [
        (
            start + rng.randrange(SPAN_MS),
            new_id(rng),
            hot if rng.random() < HOT_SHARE else rng.choice(contexts),
            states[i],
        )
        for i in range(n)
    ]
    # The list order (the timestamp text sorts as the milliseconds do); inserted oldest first.
    metas.sort(key=lambda m: (m[0], m[1]))
    return metas, hot


def build_task(rng: random.Random, ts_ms: int, task_id: str, ctx: str, state: TaskState) -> Task:
    text = " ".join(rng.choices(WORDS, k=rng.randint(4, 16)))
    user = Message(
        message_id=new_id(rng),
        role=Role.USER,
        parts=[TextPart(text)],
        context_id=ctx,
        task_id=task_id,
    )
    return Task(
        id=task_id,
        context_id=ctx,
        status=TaskStatus(state=state, timestamp=stamp(ts_ms)),
        artifacts=[Artifact(artifact_id=new_id(rng), name="echo", parts=[TextPart(text)])],
        history=[user],
    )


def rows(
    metas: list[tuple[int, str, str, TaskState]], sample_at: set[int], samples: list[Task]
) -> Iterator[tuple[Any, ...]]:
    """Rows in the store's layout, with the columns its _create would write; the
    tasks at ``sample_at`` are also put in ``samples``."""
    rng = random.Random(SEED)
    encode = msgspec.json.Encoder().encode
    for i, (ts_ms, task_id, ctx, state) in enumerate(metas):
        task = build_task(rng, ts_ms, task_id, ctx, state)
        if i in sample_at:
            samples.append(task)
        if state.terminal:
            evict_class: int | None = 0
        elif state.interrupted:
            evict_class = 1
        else:
            evict_class = None
        in_flight = state in (TaskState.SUBMITTED, TaskState.WORKING)
        yield (
            task_id,
            ctx,
            state.value,
            task.status.timestamp,
            evict_class,
            ts_ms * 1_000_000 + i if evict_class is not None else None,
            "bench-prefill" if in_flight else None,  # a lease that ran out long ago
            ts_ms / 1000 + 15 if in_flight else None,
            encode(task),
        )


async def create_schema(path: Path) -> None:
    store = SqliteStore(path)
    await store.open()
    await store.aclose()


def prefill(path: Path, n: int) -> Expected:
    asyncio.run(create_schema(path))
    metas, hot = generate(n)
    rng = random.Random(SEED + 1)
    sample_at = set(rng.sample(range(n), min(20, n)))
    samples: list[Task] = []
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")  # one bulk load; the store puts WAL back
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -1000000")
        conn.execute("BEGIN")
        it = rows(metas, sample_at, samples)
        while chunk := [row for _, row in zip(range(CHUNK), it, strict=False)]:
            conn.executemany(_INSERT, chunk)
        conn.execute("COMMIT")
        (counted,) = conn.execute("SELECT n FROM task_count").fetchone()
        assert counted == n, (counted, n)
    finally:
        conn.close()
    totals = {
        "first page": n,
        "context": sum(m[2] == hot for m in metas),
        "working": sum(m[3] is TaskState.WORKING for m in metas),
        "completed": sum(m[3] is TaskState.COMPLETED for m in metas),
        "context+working": sum(m[2] == hot and m[3] is TaskState.WORKING for m in metas),
        "deep page": n,
        "updated after": sum(m[0] >= AFTER_MS for m in metas),
    }
    return Expected(n, hot, totals, [m[1] for m in reversed(metas[-PAGE:])], samples)


def expected_from_file(path: Path) -> Expected:
    """For a kept file: what to check it against, read from its columns."""
    conn = sqlite3.connect(path)
    try:
        (n,) = conn.execute("SELECT count(*) FROM tasks").fetchone()
        (hot,) = conn.execute(
            "SELECT context_id FROM tasks GROUP BY context_id ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        one = "SELECT count(*) FROM tasks WHERE "
        w, c = TaskState.WORKING.value, TaskState.COMPLETED.value
        totals = {
            "first page": n,
            "context": conn.execute(one + "context_id = ?", (hot,)).fetchone()[0],
            "working": conn.execute(one + "state = ?", (w,)).fetchone()[0],
            "completed": conn.execute(one + "state = ?", (c,)).fetchone()[0],
            "context+working": conn.execute(
                one + "context_id = ? AND state = ?", (hot, w)
            ).fetchone()[0],
            "deep page": n,
            "updated after": conn.execute(one + "status_ts >= ?", (stamp(AFTER_MS),)).fetchone()[0],
        }
        newest = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM tasks ORDER BY status_ts DESC, id DESC LIMIT ?", (PAGE,)
            )
        ]
    finally:
        conn.close()
    return Expected(n, hot, totals, newest, [])


# --- measuring ---


class Scenario(NamedTuple):
    name: str
    request: ListTasksRequest


def scenarios(hot: str, deep_token: str) -> list[Scenario]:
    return [
        Scenario("first page", ListTasksRequest(page_size=PAGE)),
        Scenario("context", ListTasksRequest(page_size=PAGE, context_id=hot)),
        Scenario("working", ListTasksRequest(page_size=PAGE, status="working")),
        Scenario("completed", ListTasksRequest(page_size=PAGE, status="completed")),
        Scenario(
            "context+working", ListTasksRequest(page_size=PAGE, context_id=hot, status="working")
        ),
        Scenario("deep page", ListTasksRequest(page_size=PAGE, page_token=deep_token)),
        Scenario(
            "updated after",
            ListTasksRequest(page_size=PAGE, status_timestamp_after=stamp(AFTER_MS)),
        ),
    ]


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {
        "p50_ms": round(rank(0.50), 3),
        "p99_ms": round(rank(0.99), 3),
        "mean_ms": round(sum(ordered) / len(ordered) * 1000, 3),
    }


def statements(request: ListTasksRequest) -> tuple[str, str, dict[str, Any]]:
    """The count and page SQL the store runs for ``request``, with its parameters
    (as in sqlite.py's _list: no filter means the task_count row, not COUNT(*))."""
    state = parse_state(request.status).value if request.status else None
    after = stamp(AFTER_MS) if request.status_timestamp_after else ""
    cursor = None
    if request.page_token:
        padded = request.page_token + "=" * (-len(request.page_token) % 4)
        cursor = tuple(json.loads(base64.urlsafe_b64decode(padded)))
    # As a server without auth lists: the anonymous caller's tasks (tenant "",
    # principal "": every task here).
    count_sql, page_sql = _list_sql(
        True,
        True,
        bool(request.context_id),
        state is not None,
        bool(after),
        False,
        cursor is not None,
    )
    if not (request.context_id or after):
        count_sql = (
            "SELECT coalesce(sum(n), 0) FROM owner_count WHERE tenant = :tenant"
            " AND principal = :principal" + (" AND state = :state" if state else "")
        )
    params: dict[str, Any] = {
        "tenant": "",
        "principal": "",
        "context": request.context_id,
        "state": state,
        "after": after,
        "overdue": "",
        "limit": request.page_size + 1,
    }
    if cursor is not None:
        params["cursor_ts"], params["cursor_id"] = cursor
    return count_sql, page_sql, params


def time_sql(conn: sqlite3.Connection, sql: str, params: dict[str, Any], repeat: int) -> float:
    """p50 of one statement alone, fetched whole, in ms."""
    for _ in range(3):
        conn.execute(sql, params).fetchall()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        conn.execute(sql, params).fetchall()
        times.append(time.perf_counter() - t0)
    return summary(times)["p50_ms"]


def plan(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> str:
    rows_ = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return "; ".join(r[3] for r in rows_)


async def measure(
    path: Path, exp: Expected, repeat: int, explain: bool
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    store = SqliteStore(path)
    engine = Engine(EchoAgent(), store)
    results: dict[str, dict[str, Any]] = {}
    plans: list[str] = []
    try:
        await store.open()
        # Sanity: the store reads the prefilled tasks back as generated.
        for task in exp.samples:
            stored = await store.get(task.id)
            assert stored is not None and stored.seq == 0 and stored.task == task, task.id
        first = await engine.list_tasks(task_query(ListTasksRequest(page_size=PAGE)), access=ANYONE)
        assert [t.id for t in first.tasks] == exp.newest[:PAGE]
        assert first.total_size == exp.n

        # The token of the deep page, and the cost of walking to it page by page.
        async def walk() -> str:
            token = ""
            for _ in range(DEEP - 1):
                page = await engine.list_tasks(
                    task_query(ListTasksRequest(page_size=PAGE, page_token=token)), access=ANYONE
                )
                token = page.next_page_token
                assert token, "fewer than DEEP pages"
            return token

        walks = []
        for _ in range(max(5, repeat // 20)):
            t0 = time.perf_counter()
            deep_token = await walk()
            walks.append(time.perf_counter() - t0)

        direct = sqlite3.connect(path)
        try:
            for sc in scenarios(exp.hot, deep_token):
                resp = await engine.list_tasks(task_query(sc.request), access=ANYONE)
                assert resp.total_size == exp.totals[sc.name], (
                    sc.name,
                    resp.total_size,
                    exp.totals[sc.name],
                )
                keys = [(t.status.timestamp, t.id) for t in resp.tasks]
                assert keys == sorted(keys, reverse=True)
                if sc.request.context_id:
                    assert all(t.context_id == exp.hot for t in resp.tasks)
                if sc.request.status:
                    state = parse_state(sc.request.status)
                    assert all(t.status.state is state for t in resp.tasks)
                for _ in range(5):  # warm up
                    await engine.list_tasks(task_query(sc.request), access=ANYONE)
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    await engine.list_tasks(task_query(sc.request), access=ANYONE)
                    times.append(time.perf_counter() - t0)
                count_sql, page_sql, params = statements(sc.request)
                results[sc.name] = {
                    "total": resp.total_size,
                    "tasks": len(resp.tasks),
                    **summary(times),
                    "count_sql_p50_ms": time_sql(direct, count_sql, params, repeat),
                    "page_sql_p50_ms": time_sql(direct, page_sql, params, repeat),
                }
                if explain:
                    plans.append(f"  {sc.name}: count: {plan(direct, count_sql, params)}")
                    plans.append(f"  {sc.name}: page:  {plan(direct, page_sql, params)}")
        finally:
            direct.close()
        results[f"walk {DEEP - 1} pages"] = {
            "total": exp.n,
            "tasks": PAGE * (DEEP - 1),
            **summary(walks),
            "count_sql_p50_ms": None,
            "page_sql_p50_ms": None,
        }
    finally:
        await store.aclose()
    return results, plans


def machine() -> dict[str, Any]:
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "ram_gb": round(mem_kb / 1024**2, 1),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000,1000000", help="comma-separated N")
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per request")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the files in DIR (tasks-N.db) and reuse one already there",
    )
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN QUERY PLAN")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    if min(sizes) < PAGE * DEEP:
        parser.error(f"every size must be at least {PAGE * DEEP} (page {DEEP} of {PAGE})")

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="a2ad-list-"))
    workdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"machine": machine(), "repeat": args.repeat, "sizes": {}}
    print(json.dumps(report["machine"]), file=sys.stderr)
    try:
        for n in sizes:
            path = workdir / f"tasks-{n}.db"
            if args.keep and path.exists():
                exp = expected_from_file(path)
                assert exp.n == n, f"{path} holds {exp.n} tasks, not {n}"
                prefill_s = None
                print(f"N={n}: reusing {path}", file=sys.stderr)
            else:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
                t0 = time.perf_counter()
                exp = prefill(path, n)
                prefill_s = round(time.perf_counter() - t0, 1)
                print(f"N={n}: prefilled in {prefill_s} s", file=sys.stderr)
            results, plans = asyncio.run(measure(path, exp, args.repeat, args.explain))
            size_mb = round(path.stat().st_size / 1e6, 1)
            report["sizes"][str(n)] = {"prefill_s": prefill_s, "db_mb": size_mb, "list": results}
            print(f"N={n}: measured ({size_mb} MB file)", file=sys.stderr)
            if plans:
                print(f"query plans at N={n}:")
                print("\n".join(plans))
            if not args.keep:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    header = (
        f"{'N':>9}  {'request':<16} {'totalSize':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'count ms':>9} {'page ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for n, entry in report["sizes"].items():
        for name, r in entry["list"].items():
            count = "" if r["count_sql_p50_ms"] is None else f"{r['count_sql_p50_ms']:.3f}"
            page = "" if r["page_sql_p50_ms"] is None else f"{r['page_sql_p50_ms']:.3f}"
            print(
                f"{int(n):>9}  {name:<16} {r['total']:>9} {r['p50_ms']:>8.3f} "
                f"{r['p99_ms']:>8.3f} {r['mean_ms']:>8.3f} {count:>9} {page:>8}"
            )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
