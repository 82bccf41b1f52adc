"""What each A2A operation asks of PostgreSQL: the statements (each one a round
trip) the engine's PostgresStore sends, by kind, and how long each kind took as
the client saw it (sending, the server's work, the answer).

    .venv/bin/python bench/pg_statements.py              # about 10 s
    .venv/bin/python bench/pg_statements.py --repeat 200

The engine and the echo agent run in-process over PostgresStore, in a schema of
their own on the server at A2AD_BENCH_POSTGRES (default
postgresql://postgres@127.0.0.1:5432/postgres), dropped after. Every pool
connection gets asyncpg's query logger. For each operation (a blocking send, a
get, a stream read to its end, a send with returnImmediately then its cancel, a
list by context) it runs ``--repeat`` times after a few untimed ones and prints
the statements per operation, and the CPU time an operation took in this
process and in its PostgreSQL backends (the time includes the few sleeps' idle
wake-ups, nothing else runs here). Unlike a throughput figure, the counts do not
move with the machine's load: they say how many round trips an operation costs.
The engine's upkeep round (lease renewal, about once a second) is stopped so
that it does not mix in.

``--compare-reset`` runs a second engine beside the first, in a schema of its own,
whose pool resets each connection given back the way asyncpg does by default
(``SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;``, one more
round trip) instead of the store's no-op; the two are measured in ``--rounds``
alternating rounds, and each figure is the median over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import statistics
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from a2ad import EchoAgent, Engine, Message, Role, TextPart
from a2ad.engine.build import build_engine
from a2ad.protocol.model import ListTasksRequest, SendMessageConfiguration, SendMessageRequest
from a2ad.protocol.model import new_id as make_id
from a2ad.protocol.requests import task_query
from a2ad.store.postgres import PostgresStore

LOG: list[tuple[str, float]] = []  # (statement kind, seconds) as they ran
MEASURED: list[Any] = [None]  # the store whose statements LOG takes (others run too)


def kind(query: str) -> str:
    """A statement's first words, enough to tell them apart."""
    words = query.split()
    if words[:2] == ["SELECT", "pg_advisory_unlock_all();"]:
        return "reset (asyncpg's, on release to the pool)"
    if "message_key" in query and words[0] == "(SELECT":
        return "find the message (idempotent send)"
    if words[:2] == ["SELECT", "total.n,"]:
        return "the listing (total and page)"
    if words[0] == "SELECT" and "FROM" in words:
        return "SELECT … FROM " + words[words.index("FROM") + 1].strip("(")
    return " ".join(words[:3])


class LoggingStore(PostgresStore):
    """PostgresStore, each pool connection logging its statements (the same
    pool, made the same way, plus the logger). ``asyncpg_reset``: the pool
    resets connections as asyncpg does by default, not as the store does."""

    asyncpg_reset = False

    async def _connect(self) -> Any:
        pool = await super()._connect()
        logger = log_statements(self)
        if self.asyncpg_reset:
            pool._reset = None  # asyncpg then runs Connection.reset(), its default
        # Connections made later (the pool grows) log too.
        pool._init = logger
        for holder in pool._holders:
            if holder._con is not None:
                await logger(holder._con)
        return pool


def log_statements(store: PostgresStore) -> Callable[[Any], Awaitable[None]]:
    """A pool's ``init``: the connection's statements go to LOG while ``store`` is measured."""

    def logged(q: Any) -> None:
        if MEASURED[0] is store:
            LOG.append((kind(q.query), q.elapsed))

    async def init(conn: Any) -> None:
        conn.add_query_logger(logged)

    return init


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def backends_cpu(admin: Any, name: str) -> float:
    """Seconds of CPU used by the backends of connections named ``name``."""
    total = 0.0
    for (pid,) in await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1", name
    ):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def message(text: str) -> Message:
    return Message(message_id=make_id(), role=Role.USER, parts=[TextPart(text)])


async def measure(
    engine: Engine, repeat: int, admin: Any, app_name: str
) -> dict[str, dict[str, Any]]:
    done = await engine.send(SendMessageRequest(message=message("hello")))
    context = done.context_id
    task_id = done.id

    async def send() -> None:
        await engine.send(SendMessageRequest(message=message("hello")))

    async def get() -> None:
        await engine.get_task(task_id)

    async def stream() -> None:
        events = await engine.stream(SendMessageRequest(message=message("hello")))
        while await events.next(5) is not None:
            pass

    cancel_ids: list[str] = []

    async def started() -> None:
        task = await engine.send(
            SendMessageRequest(
                message=message("sleep:30 cancel me"),
                configuration=SendMessageConfiguration(return_immediately=True),
            )
        )
        cancel_ids.append(task.id)

    async def cancel() -> None:
        await engine.cancel(cancel_ids.pop())

    async def list_() -> None:
        await engine.list_tasks(task_query(ListTasksRequest(page_size=50, context_id=context)))

    operations: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("send (blocking, echo)", send),
        ("get", get),
        ("stream, read to its end", stream),
        ("send with returnImmediately (a sleeping task)", started),
        ("cancel of that task", cancel),
        ("list by context", list_),
    ]
    out: dict[str, dict[str, Any]] = {}
    for name, operation in operations:
        if name.startswith("cancel"):
            for _ in range(repeat + 3 - len(cancel_ids)):
                await started()
        for _ in range(3):  # untimed: statements prepared, pool warm
            await operation()
        await asyncio.sleep(0.2)  # what they left running (the agent's last write) ends
        LOG.clear()
        db0, cpu0 = await backends_cpu(admin, app_name), own_cpu()
        for _ in range(repeat):
            await operation()
        await asyncio.sleep(0.2)
        cpu1, db1 = own_cpu(), await backends_cpu(admin, app_name)
        kinds: dict[str, list[float]] = collections.defaultdict(list)
        for what, seconds in LOG:
            kinds[what].append(seconds)
        out[name] = {
            "statements": len(LOG) / repeat,
            "cpu_us": (cpu1 - cpu0) / repeat * 1e6,
            "db_cpu_us": (db1 - db0) / repeat * 1e6,
            "kinds": {
                what: {"per_op": len(times) / repeat, "p50_ms": statistics.median(times) * 1000}
                for what, times in sorted(kinds.items(), key=lambda kv: -len(kv[1]))
            },
        }
    return out


VARIANTS = {"store's reset (none)": False, "asyncpg's default reset": True}


def median_of(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each operation's figures, the median over the rounds (the kinds: the last round's)."""
    out: dict[str, dict[str, Any]] = {}
    for name, last in rounds[-1].items():
        out[name] = {
            key: statistics.median(r[name][key] for r in rounds)
            for key in ("statements", "cpu_us", "db_cpu_us")
        }
        out[name]["kinds"] = last["kinds"]
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    admin = await asyncpg.connect(args.postgres)
    variants = list(VARIANTS.items()) if args.compare_reset else [next(iter(VARIANTS.items()))]
    if args.reverse:
        variants.reverse()
    engines: list[tuple[str, Engine, PostgresStore, str]] = []
    try:
        for n, (label, asyncpg_reset) in enumerate(variants):
            schema = f"a2ad_bench_statements_{os.getpid()}_{n}"
            await admin.execute(f"CREATE SCHEMA {schema}")
            separator = "&" if "?" in args.postgres else "?"
            store = LoggingStore(
                f"{args.postgres}{separator}search_path={schema}&application_name={schema}"
            )
            store.asyncpg_reset = asyncpg_reset
            engine = build_engine(EchoAgent(), store)
            engines.append((label, engine, store, schema))
            await engine.start()
            # No upkeep round in the counts (its lease renewal, once a second, is
            # no operation's): its loop is stopped; shutdown stops the rest.
            upkeep = getattr(engine, "_upkeep_loop", None)
            if upkeep is not None:
                upkeep.cancel()
        rounds: dict[str, list[dict[str, dict[str, Any]]]] = {e[0]: [] for e in engines}
        for r in range(args.rounds if args.compare_reset else 1):
            for label, engine, store, schema in engines[r % 2 :] + engines[: r % 2]:
                MEASURED[0] = store
                rounds[label].append(await measure(engine, args.repeat, admin, schema))
        return {label: median_of(done) for label, done in rounds.items()}
    finally:
        for _, engine, store, schema in engines:
            await engine.shutdown(graceful=False)
            await store.aclose()
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="operations counted, of each kind")
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument(
        "--compare-reset",
        action="store_true",
        help="also measure a pool with asyncpg's default reset, in alternating rounds",
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds with --compare-reset")
    parser.add_argument(
        "--reverse", action="store_true", help="with --compare-reset, asyncpg's reset first"
    )
    args = parser.parse_args()
    report = asyncio.run(main(args))
    for label, operations in report.items():
        if len(report) > 1:
            print(f"== {label}")
        for name, row in operations.items():
            print(
                f"{name}: {row['statements']:.2f} statements; CPU per operation: this process"
                f" {row['cpu_us']:,.0f} µs, its PostgreSQL backends {row['db_cpu_us']:,.0f} µs"
            )
            for what, k in row["kinds"].items():
                print(f"  {k['per_op']:5.2f} × {what}  (p50 {k['p50_ms']:.2f} ms)")
    if len(report) == 1:
        report = {"operations": next(iter(report.values()))}
    print(json.dumps({"bench": "pg_statements", "repeat": args.repeat, **report}))


if __name__ == "__main__":
    run()
