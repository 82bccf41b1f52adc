"""ListTasks latency as the SQLite (or PostgreSQL) store grows.

For each size N, prefill a fresh SQLite file with N tasks, then time
``Engine.list_tasks`` (the real path: request -> checked query -> ListQuery -> SqliteStore's worker
thread -> SQL -> decode -> task_view) for a few typical requests, and beside it
the two statements a filtered list runs, alone on a separate connection: the
count behind ``totalSize`` and the page SELECT.

    .venv/bin/python bench/list_scale.py --sizes 1000,100000,1000000 --explain
    .venv/bin/python bench/list_scale.py --store postgresql --sizes 1000000 --explain

With ``--store postgresql`` the tasks go into a schema of their own on the server
at ``--postgres`` (default A2AD_BENCH_POSTGRES, else
postgresql://postgres@127.0.0.1:5432/postgres): PostgresStore creates its tables
there, the rows are loaded with COPY (the counting triggers off, the count rows
then filled as the triggers keep them), VACUUM ANALYZE runs once (what autovacuum
does after a bulk insert), and ``PostgresStore`` answers. The schema is dropped at
the end unless ``--keep-schema`` (then it is ``a2ad_list_N``, reused by the next
run). ``--explain`` prints EXPLAIN (ANALYZE, BUFFERS) of both statements.

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

from a2ad import EchoAgent, SqliteStore
from a2ad.engine.access import Access
from a2ad.engine.build import build_engine
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
from a2ad.store.base import ListQuery, TaskStore
from a2ad.store.sql import list_given, list_values
from a2ad.store.sqlite import _list_sql as sqlite_list_sql  # the statements the store runs

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


def totals_of(metas: list[tuple[int, str, str, TaskState]], hot: str) -> dict[str, int]:
    n = len(metas)
    return {
        "first page": n,
        "context": sum(m[2] == hot for m in metas),
        "working": sum(m[3] is TaskState.WORKING for m in metas),
        "completed": sum(m[3] is TaskState.COMPLETED for m in metas),
        "context+working": sum(m[2] == hot and m[3] is TaskState.WORKING for m in metas),
        "deep page": n,
        "updated after": sum(m[0] >= AFTER_MS for m in metas),
    }


def sample_positions(n: int) -> set[int]:
    return set(random.Random(SEED + 1).sample(range(n), min(20, n)))


# --- SQLite ---


async def create_schema(path: Path) -> None:
    store = SqliteStore(path)
    await store.open()
    await store.aclose()


def prefill(path: Path, n: int) -> Expected:
    asyncio.run(create_schema(path))
    metas, hot = generate(n)
    samples: list[Task] = []
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")  # one bulk load; the store puts WAL back
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -1000000")
        conn.execute("BEGIN")
        it = rows(metas, sample_positions(n), samples)
        while chunk := [row for _, row in zip(range(CHUNK), it, strict=False)]:
            conn.executemany(_INSERT, chunk)
        conn.execute("COMMIT")
        (counted,) = conn.execute("SELECT n FROM task_count").fetchone()
        assert counted == n, (counted, n)
    finally:
        conn.close()
    return Expected(n, hot, totals_of(metas, hot), [m[1] for m in reversed(metas[-PAGE:])], samples)


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


# --- PostgreSQL ---

_PG_COLUMNS = [
    "id",
    "context_id",
    "state",
    "status_ts",
    "seq",
    "evict_class",
    "evict_order",
    "lease_owner",
    "lease_expires",
    "deadline",
    "body",
]
# The count rows as the triggers (postgres_schema.py) keep them, filled once
# after a load made with the triggers off.
_PG_COUNTS = (
    """INSERT INTO task_count (slot, n)
        SELECT hashtext(context_id) & 15, count(*) FROM tasks GROUP BY 1""",
    """INSERT INTO owner_count (tenant, principal, agent, state, slot, n)
        SELECT tenant, principal, agent, state, hashtext(context_id) & 15, count(*) FROM tasks
        GROUP BY 1, 2, 3, 4, 5""",
    """INSERT INTO context_count (context_id, tenant, principal, agent, n)
        SELECT context_id, tenant, principal, agent, count(*) FROM tasks GROUP BY 1, 2, 3, 4""",
)


def schema_url(server: str, schema: str) -> str:
    separator = "&" if "?" in server else "?"
    return f"{server}{separator}search_path={schema}"


async def pg_prefill(server: str, schema: str, n: int) -> Expected:
    import asyncpg  # type: ignore[import-untyped]

    from a2ad.store.postgres import PostgresStore

    async with PostgresStore(schema_url(server, schema)):
        pass  # it creates its tables in the schema
    metas, hot = generate(n)
    samples: list[Task] = []
    conn = await asyncpg.connect(server, server_settings={"search_path": schema})
    try:
        async with conn.transaction():
            await conn.execute("ALTER TABLE tasks DISABLE TRIGGER USER")
            it = rows(metas, sample_positions(n), samples)
            while chunk := [
                (*row[:4], 0, *row[4:8], None, row[8])
                for _, row in zip(range(CHUNK), it, strict=False)
            ]:
                await conn.copy_records_to_table(
                    "tasks", records=chunk, columns=_PG_COLUMNS, schema_name=schema
                )
            await conn.execute("ALTER TABLE tasks ENABLE TRIGGER USER")
            for statement in _PG_COUNTS:
                await conn.execute(statement)
        await conn.execute("VACUUM ANALYZE tasks, task_count, owner_count, context_count")
        counted = await conn.fetchval("SELECT sum(n) FROM task_count")
        assert counted == n, (counted, n)
    finally:
        await conn.close()
    return Expected(n, hot, totals_of(metas, hot), [m[1] for m in reversed(metas[-PAGE:])], samples)


async def pg_expected(server: str, schema: str) -> Expected:
    """For a kept schema: what to check it against, read from its columns."""
    import asyncpg

    conn = await asyncpg.connect(server, server_settings={"search_path": schema})
    try:
        n = await conn.fetchval("SELECT count(*) FROM tasks")
        hot = await conn.fetchval(
            "SELECT context_id FROM tasks GROUP BY context_id ORDER BY count(*) DESC LIMIT 1"
        )
        one = "SELECT count(*) FROM tasks WHERE "
        w, c = TaskState.WORKING.value, TaskState.COMPLETED.value
        totals = {
            "first page": n,
            "context": await conn.fetchval(one + "context_id = $1", hot),
            "working": await conn.fetchval(one + "state = $1", w),
            "completed": await conn.fetchval(one + "state = $1", c),
            "context+working": await conn.fetchval(one + "context_id = $1 AND state = $2", hot, w),
            "deep page": n,
            "updated after": await conn.fetchval(one + "status_ts >= $1", stamp(AFTER_MS)),
        }
        newest = [
            r[0]
            for r in await conn.fetch(
                "SELECT id FROM tasks ORDER BY status_ts DESC, id DESC LIMIT $1", PAGE
            )
        ]
    finally:
        await conn.close()
    return Expected(n, hot, totals, newest, [])


async def pg_schema_exists(server: str, schema: str) -> bool:
    import asyncpg

    conn = await asyncpg.connect(server)
    try:
        found = await conn.fetchval(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1 AND EXISTS "
            "(SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'tasks')",
            schema,
        )
        return found is not None
    finally:
        await conn.close()


async def pg_admin(server: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(server)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


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


class Filters(NamedTuple):
    """A request's filters as the store sees them (as a server without auth
    lists: the anonymous caller's tasks, tenant "" and principal "": every task here)."""

    context: str
    state: str | None
    after: str
    cursor: tuple[str, str] | None

    @classmethod
    def of(cls, request: ListTasksRequest) -> Filters:
        cursor = None
        if request.page_token:
            padded = request.page_token + "=" * (-len(request.page_token) % 4)
            cursor = tuple(json.loads(base64.urlsafe_b64decode(padded)))
        return cls(
            request.context_id or "",
            parse_state(request.status).value if request.status else None,
            stamp(AFTER_MS) if request.status_timestamp_after else "",
            cursor,
        )

    def query(self, *, agent: str | None) -> ListQuery:
        """The store's query of these filters, for the anonymous caller."""
        return ListQuery(
            page_size=PAGE,
            tenant="",
            principal="",
            agent=agent,
            context_id=self.context,
            state=TaskState(self.state) if self.state is not None else None,
            updated_after=self.after,
            cursor=self.cursor,
        )


class SqliteDirect:
    """The store's two statements, run alone on a second SQLite connection."""

    page_label = "page"

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path)

    def statements(self, request: ListTasksRequest) -> tuple[str, list[Any], str, list[Any]]:
        """The count and page SQL the store runs for ``request``, each with its
        parameters (sqlite.py's _list)."""
        query = Filters.of(request).query(agent=None)
        count_sql, names, page_sql, page_names = sqlite_list_sql(
            list_given(query), query.cursor is not None
        )
        values = list_values(query)
        return (
            count_sql,
            [values[n] for n in names],
            page_sql,
            [values[n] for n in page_names],
        )

    async def time(self, request: ListTasksRequest, repeat: int) -> tuple[float, float]:
        count_sql, count_params, page_sql, params = self.statements(request)
        return self._time(count_sql, count_params, repeat), self._time(page_sql, params, repeat)

    def _time(self, sql: str, params: list[Any], repeat: int) -> float:
        """p50 of one statement alone, fetched whole, in ms."""
        for _ in range(3):
            self.conn.execute(sql, params).fetchall()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.conn.execute(sql, params).fetchall()
            times.append(time.perf_counter() - t0)
        return summary(times)["p50_ms"]

    async def plans(self, request: ListTasksRequest) -> tuple[str, str]:
        count_sql, count_params, page_sql, params = self.statements(request)
        return self._plan(count_sql, count_params), self._plan(page_sql, params)

    def _plan(self, sql: str, params: list[Any]) -> str:
        rows_ = self.conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        return "; ".join(r[3] for r in rows_)

    async def aclose(self) -> None:
        self.conn.close()


class PostgresDirect:
    """The store's listing statement, and the count in it, run alone on a
    connection of their own."""

    page_label = "statement"  # the whole statement: the count and the page

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @classmethod
    async def connect(cls, server: str, schema: str) -> PostgresDirect:
        import asyncpg

        return cls(await asyncpg.connect(server, server_settings={"search_path": schema}))

    @staticmethod
    def statements(request: ListTasksRequest) -> tuple[str, list[Any], str, list[Any]]:
        """The count the store's statement makes for ``request`` and the whole
        statement, each with its parameters."""
        from a2ad.store.postgres_list import _list_sql as pg_list_sql

        query = Filters.of(request).query(agent="")
        statement, names = pg_list_sql(list_given(query), query.cursor is not None)
        values = list_values(query)
        params = [values[name] for name in names]
        filters = [n for n in names if n not in ("cursor_ts", "cursor_id", "limit")]
        count_sql = statement.split(") AS total (n)")[0].split(" FROM (", 1)[1]
        return count_sql, params[: len(filters)], statement, params

    async def time(self, request: ListTasksRequest, repeat: int) -> tuple[float, float]:
        count_sql, count_params, sql, params = self.statements(request)
        return (
            await self._time(count_sql, count_params, repeat),
            await self._time(sql, params, repeat),
        )

    async def _time(self, sql: str, params: list[Any], repeat: int) -> float:
        for _ in range(3):
            await self.conn.fetch(sql, *params)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await self.conn.fetch(sql, *params)
            times.append(time.perf_counter() - t0)
        return summary(times)["p50_ms"]

    async def plans(self, request: ListTasksRequest) -> tuple[str, str]:
        count_sql, count_params, sql, params = self.statements(request)
        return (
            await self._plan(count_sql, count_params),
            await self._plan(sql, params),
        )

    async def _plan(self, sql: str, params: list[Any]) -> str:
        rows_ = await self.conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *params)
        return "\n      ".join(r[0] for r in rows_)

    async def aclose(self) -> None:
        await self.conn.close()


async def measure(
    store: TaskStore,
    direct: SqliteDirect | PostgresDirect,
    exp: Expected,
    repeat: int,
    explain: bool,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    engine = build_engine(EchoAgent(), store)
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
            count_ms, page_ms = await direct.time(sc.request, repeat)
            results[sc.name] = {
                "total": resp.total_size,
                "tasks": len(resp.tasks),
                **summary(times),
                "count_sql_p50_ms": count_ms,
                "page_sql_p50_ms": page_ms,
            }
            if explain:
                count_plan, page_plan = await direct.plans(sc.request)
                plans.append(f"  {sc.name}: count: {count_plan}")
                plans.append(f"  {sc.name}: {direct.page_label}:  {page_plan}")
        results[f"walk {DEEP - 1} pages"] = {
            "total": exp.n,
            "tasks": PAGE * (DEEP - 1),
            **summary(walks),
            "count_sql_p50_ms": None,
            "page_sql_p50_ms": None,
        }
    finally:
        await direct.aclose()
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


def run_sqlite(n: int, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
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
    results, plans = asyncio.run(
        measure(SqliteStore(path), SqliteDirect(path), exp, args.repeat, args.explain)
    )
    size_mb = round(path.stat().st_size / 1e6, 1)
    print(f"N={n}: measured ({size_mb} MB file)", file=sys.stderr)
    if plans:
        print(f"query plans at N={n}:")
        print("\n".join(plans))
    if not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return {"prefill_s": prefill_s, "db_mb": size_mb, "list": results}


async def run_postgres(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from a2ad.store.postgres import PostgresStore

    server = args.postgres
    schema = f"a2ad_list_{n}" if args.keep_schema else f"a2ad_list_{n}_{os.getpid()}"
    reuse = args.keep_schema and await pg_schema_exists(server, schema)
    try:
        if reuse:
            exp = await pg_expected(server, schema)
            assert exp.n == n, f"schema {schema} holds {exp.n} tasks, not {n}"
            prefill_s = None
            print(f"N={n}: reusing schema {schema}", file=sys.stderr)
        else:
            await pg_admin(server, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            await pg_admin(server, f"CREATE SCHEMA {schema}")
            t0 = time.perf_counter()
            exp = await pg_prefill(server, schema, n)
            prefill_s = round(time.perf_counter() - t0, 1)
            print(f"N={n}: prefilled schema {schema} in {prefill_s} s", file=sys.stderr)
        store = PostgresStore(schema_url(server, schema))
        direct = await PostgresDirect.connect(server, schema)
        size_mb = round(
            await direct.conn.fetchval("SELECT pg_total_relation_size('tasks')") / 1e6, 1
        )
        results, plans = await measure(store, direct, exp, args.repeat, args.explain)
        print(f"N={n}: measured (tasks table and indexes {size_mb} MB)", file=sys.stderr)
        if plans:
            print(f"query plans at N={n}:")
            print("\n".join(plans))
    finally:
        if not args.keep_schema:
            await pg_admin(server, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return {"prefill_s": prefill_s, "db_mb": size_mb, "list": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--sizes", default="1000,100000,1000000", help="comma-separated N")
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per request")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="SQLite: keep the files in DIR (tasks-N.db) and reuse one already there",
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="PostgreSQL: the server (a schema of its own is made there)",
    )
    parser.add_argument(
        "--keep-schema",
        action="store_true",
        help="PostgreSQL: keep the schema a2ad_list_N, and reuse one already there",
    )
    parser.add_argument("--explain", action="store_true", help="print the query plans")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    if min(sizes) < PAGE * DEEP:
        parser.error(f"every size must be at least {PAGE * DEEP} (page {DEEP} of {PAGE})")

    report: dict[str, Any] = {
        "machine": machine(),
        "store": args.store,
        "repeat": args.repeat,
        "sizes": {},
    }
    print(json.dumps(report["machine"]), file=sys.stderr)
    if args.store == "postgresql":
        for n in sizes:
            report["sizes"][str(n)] = asyncio.run(run_postgres(n, args))
    else:
        workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="a2ad-list-"))
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            for n in sizes:
                report["sizes"][str(n)] = run_sqlite(n, args, workdir)
        finally:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)

    header = (
        f"{'N':>9}  {'request':<16} {'totalSize':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'count ms':>9} {'page ms' if args.store == 'sqlite' else 'stmt ms':>8}"
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
