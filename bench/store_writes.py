"""What a store costs per task, without HTTP: the engine and the echo agent over
MemoryStore, SqliteStore and PostgresStore, driven in-process by concurrent senders.

    .venv/bin/python bench/store_writes.py                  # memory and sqlite, 32 senders
    taskset -c 0 .venv/bin/python bench/store_writes.py --stores sqlite --senders 32
    taskset -c 0 .venv/bin/python bench/store_writes.py --stores memory,sqlite,postgresql
    taskset -c 0 .venv/bin/python bench/store_writes.py --stores postgresql-notify --sends 20

``sqlite-member`` is SQLite as one process of ``a2ad serve --workers`` has it
(store/sqlite_group.py): no filter of message keys (each send's key is looked up
on the file, and again inside the write); here the group has that one member, so
no signals are sent. ``postgresql`` uses the server at A2AD_BENCH_POSTGRES (default
postgresql://postgres@127.0.0.1:5432/postgres), in a schema of its own made for the
run and dropped after. After the sends, each sender reads ``--sends`` tasks back
with the store's ``get`` (gets/s).

``postgresql-notify`` prices the trigger that NOTIFYs the other instances of each
append: one engine on one schema, ``--windows`` pairs of windows of ``--sends``
per sender, one with the trigger enabled and one with it disabled (``ALTER TABLE
... DISABLE TRIGGER``), in alternating order; it reports each side's median sends/s
and CPU per send, and the median of the pairs' ratios (a shared, noisy machine
disturbs both sides of a pair alike).

For each store: a warm-up of 100 sends per sender, then ``--sends`` per sender,
timed; prints sends/s, process CPU (user + system) per send and, for SQLite, the
WAL pages written per send (with automatic checkpoints off while counting, so
the WAL holds every page written). Pin it to one core (taskset) to compare with
the load benchmark's pinned servers. The file lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from a2ad import EchoAgent, MemoryStore, Message, Role, SqliteStore, TextPart
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.protocol.model import SendMessageRequest, new_id
from a2ad.store.base import TaskStore
from a2ad.store.sqlite_group import SqliteGroup, claim_for_group


def request(i: int) -> SendMessageRequest:
    message = Message(
        message_id=new_id(), role=Role.USER, parts=[TextPart("hello")], context_id=f"ctx-{i % 100}"
    )
    return SendMessageRequest(message=message)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(store: TaskStore, senders: int, sends: int, quota: int = 0) -> dict[str, float]:
    engine = build_engine(EchoAgent(), store, EngineConfig(max_tasks_per_principal=quota))
    await engine.start()  # as a server does: it claims the store (the SQLite serving lock)

    async def sender(n: int) -> None:
        for i in range(n):
            await engine.send(request(i))

    await asyncio.gather(*(sender(100) for _ in range(senders)))
    cpu0, t0 = cpu(), time.perf_counter()
    await asyncio.gather(*(sender(sends) for _ in range(senders)))
    elapsed, used = time.perf_counter() - t0, cpu() - cpu0
    total = senders * sends
    ids = [task.id for task in await store.list_tasks(limit=1000)]

    async def getter(n: int, offset: int) -> None:
        for i in range(n):
            assert await store.get(ids[(offset + i) % len(ids)]) is not None

    t1 = time.perf_counter()
    await asyncio.gather(*(getter(sends, 31 * k) for k in range(senders)))
    got = time.perf_counter() - t1
    await engine.shutdown(graceful=False)
    return {
        "sends_per_s": total / elapsed,
        "cpu_us_per_send": used / total * 1e6,
        "gets_per_s": total / got,
    }


async def measure_notify(
    store: TaskStore, table: str, admin: Any, senders: int, sends: int, windows: int
) -> dict[str, float]:
    engine = build_engine(EchoAgent(), store)
    await engine.start()

    async def sender(n: int) -> None:
        for i in range(n):
            await engine.send(request(i))

    await asyncio.gather(*(sender(100) for _ in range(senders)))
    rates: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    for window in range(windows):
        for on in (True, False) if window % 2 == 0 else (False, True):
            await admin.execute(
                f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER tasks_signal"
            )
            cpu0, t0 = cpu(), time.perf_counter()
            await asyncio.gather(*(sender(sends) for _ in range(senders)))
            elapsed, used = time.perf_counter() - t0, cpu() - cpu0
            rates[on].append(senders * sends / elapsed)
            cpus[on].append(used / (senders * sends) * 1e6)
    await engine.shutdown(graceful=False)
    median = statistics.median
    return {
        "sends_per_s_notify": median(rates[True]),
        "sends_per_s_without": median(rates[False]),
        "ratio_median": median(a / b for a, b in zip(rates[True], rates[False], strict=True)),
        "cpu_us_per_send_notify": median(cpus[True]),
        "cpu_us_per_send_without": median(cpus[False]),
    }


async def run_postgres(senders: int, sends: int, quota: int, windows: int = 0) -> dict[str, float]:
    import asyncpg  # type: ignore[import-untyped]

    from a2ad.store.postgres import PostgresStore

    server = os.environ.get("A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
    schema = f"a2ad_bench_{os.getpid()}"
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in server else "?"
        store = PostgresStore(f"{server}{separator}search_path={schema}")
        try:
            if windows:
                return await measure_notify(
                    store, f"{schema}.tasks", admin, senders, sends, windows
                )
            return await measure(store, senders, sends, quota)
        finally:
            await store.aclose()
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


async def run_store(
    name: str, senders: int, sends: int, folder: Path, quota: int = 0, windows: int = 0
) -> dict[str, float]:
    if name == "memory":
        return await measure(MemoryStore(max_tasks=10**7), senders, sends, quota)
    if name == "postgresql":
        return await run_postgres(senders, sends, quota)
    if name == "postgresql-notify":
        return await run_postgres(senders, sends, quota, windows)
    path = folder / f"{name}.db"
    group = None
    if name == "sqlite-member":
        lock = claim_for_group(str(path))
        group = SqliteGroup(lock.fileno() if lock else None, str(folder), 0, 1)
    store = SqliteStore(path, group=group)
    await store.open()
    # Count WAL pages: no checkpoint may empty the WAL while we measure.
    await store._run(lambda conn: conn.execute("PRAGMA wal_autocheckpoint = 0"))
    wal = path.with_name(path.name + "-wal")
    before = wal.stat().st_size if wal.exists() else 0
    result = await measure(store, senders, sends, quota)
    pages = (wal.stat().st_size - before) / 4096
    result["wal_pages_per_send"] = pages / (senders * (sends + 100))
    await store.aclose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated")
    parser.add_argument("--senders", type=int, default=32)
    parser.add_argument("--sends", type=int, default=250, help="timed sends per sender")
    parser.add_argument(
        "--max-tasks-per-principal",
        type=int,
        default=0,
        help="the engine's in-flight quota (0: off); every send is the anonymous caller's",
    )
    parser.add_argument(
        "--windows", type=int, default=10, help="pairs of windows for postgresql-notify"
    )
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="a2ad-store-writes-") as folder:
        for name in args.stores.split(","):
            results[name] = asyncio.run(
                run_store(
                    name,
                    args.senders,
                    args.sends,
                    Path(folder),
                    args.max_tasks_per_principal,
                    args.windows,
                )
            )
            figures = ", ".join(f"{k} {v:,.1f}" for k, v in results[name].items())
            print(f"{name}: {figures}", flush=True)
    print(
        json.dumps(
            {
                "bench": "store_writes",
                "pid_cpus": sorted(os.sched_getaffinity(0)),
                "python": sys.version.split()[0],
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
