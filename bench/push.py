"""Push-notification delivery: throughput, and lag from an event being stored to
its webhook receiving it.

    .venv/bin/python bench/push.py                   # memory and SQLite, about a minute
    .venv/bin/python bench/push.py --stores sqlite --tasks 2000 --rates 50,200
    .venv/bin/python bench/push.py --stores postgresql   # a schema per run on --postgres

The engine runs in this process over a fresh store (PostgreSQL: a schema of its
own on ``--postgres``, default A2AD_BENCH_POSTGRES or the local server, dropped
at the end), with push delivery started
(``allow_private_webhooks``: the receiver is on loopback) and an agent that
emits ``--chunks`` artifact chunks between working and completed. Every message
names a webhook (1.0: each event's StreamResponse), so each task makes
``chunks + 3`` deliveries (the task, working, the chunks, completed). The
receiver is a separate process (uvicorn + httptools, one worker) that records
when each request arrived; the engine's bus records when each event was stored
(``publish`` runs right after the store's write). Both read ``time.time()``.

Two runs per store:

- **burst**: ``--tasks`` messages sent by ``--senders`` concurrent senders as
  fast as they go; deliveries/s from the first send to the last delivery, and
  the lag (queueing included: deliveries wait behind the sends).
- **steady**: messages at each of ``--rates`` tasks/s for ``--seconds``; the lag
  at a rate the server keeps up with.

Prints a table, then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from a2ad import Agent, MemoryStore, Message, Role, SqliteStore, TaskContext, TextPart
from a2ad.engine import LocalBus
from a2ad.engine.build import build_engine
from a2ad.engine.bus import Published
from a2ad.engine.config import EngineConfig
from a2ad.engine.push import PushPolicy
from a2ad.protocol.model import (
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
    new_id,
)
from a2ad.store.base import TaskStore, Webhook


class Chunks(Agent):
    name = "chunks"
    description = "Emits a fixed number of artifact chunks, then completes."

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working()
        for i in range(self.chunks):
            await ctx.artifact(
                f"c{i}", artifact_id="a", append=i > 0, last_chunk=i == self.chunks - 1
            )


class StampingBus(LocalBus):
    """The in-process bus, noting when each event was stored (publish follows the
    store's write at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.stored: dict[tuple[str, int], float] = {}

    def publish(self, task_id: str, item: Published) -> None:
        self.stored[task_id, item.seq] = time.time()
        super().publish(task_id, item)


# --- the receiver (a separate process) ---


class _Event(msgspec.Struct):
    task_id: str = msgspec.field(name="taskId", default="")


class _Body(msgspec.Struct):
    task: dict[str, Any] | None = None
    status_update: _Event | None = msgspec.field(name="statusUpdate", default=None)
    artifact_update: _Event | None = msgspec.field(name="artifactUpdate", default=None)


def receiver_main(port: int) -> None:
    import uvicorn

    arrived: list[tuple[str, int, float]] = []
    decode = msgspec.json.Decoder(_Body).decode

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        now = time.time()
        out = b""
        if scope["method"] == "POST":
            headers = dict(scope["headers"])
            parsed = decode(body)
            event = parsed.status_update or parsed.artifact_update
            task_id = parsed.task["id"] if parsed.task is not None else event.task_id  # type: ignore[union-attr]
            arrived.append((task_id, int(headers[b"x-a2ad-event-id"]), now))
        else:  # GET: what arrived so far (and forget it)
            out = msgspec.json.encode(arrived)
            arrived.clear()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": out})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http="httptools",
        loop="uvloop",
        lifespan="off",
        interface="asgi3",
        access_log=False,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_receiver() -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--receiver", str(port)])
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return proc, port
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the receiver did not start") from None
            time.sleep(0.05)


def arrivals(port: int) -> list[tuple[str, int, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
        return [tuple(x) for x in json.loads(r.read())]  # type: ignore[misc]


# --- one run ---


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run(
    store: TaskStore,
    port: int,
    *,
    chunks: int,
    sends: Callable[[Callable[[], Any]], Any],
    hooked: bool = True,
) -> dict[str, float]:
    """One run; without ``hooked``, the same messages name no webhook (the
    baseline of what the rest costs), and only sends/s and CPU are measured."""
    bus = StampingBus()
    engine = build_engine(
        Chunks(chunks),
        store,
        EngineConfig(allow_private_webhooks=True, push_policy=PushPolicy()),
        bus=bus,
    )
    await engine.start()
    url = f"http://127.0.0.1:{port}/hook"
    config = SendMessageConfiguration(
        task_push_notification_config=TaskPushNotificationConfig(url=url)
    )
    webhooks = (Webhook(TaskPushNotificationConfig(url=url), "1.0"),) if hooked else ()
    task_ids: list[str] = []

    async def send_one() -> None:
        message = Message(message_id=new_id(), role=Role.USER, parts=[TextPart("go")])
        request = SendMessageRequest(message=message, configuration=config if hooked else UNSET)
        task = await engine.send(request, webhooks=webhooks)
        task_ids.append(task.id)  # type: ignore[union-attr]

    arrivals(port)  # forget anything earlier
    started, cpu0 = time.time(), cpu()
    await sends(send_one)
    sent = time.time()
    expected = len(task_ids) * (chunks + 3) if hooked else 0
    got: list[tuple[str, int, float]] = []
    deadline = time.monotonic() + 120
    while len(got) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        got += arrivals(port)
    used = cpu() - cpu0  # delivering included; the polling above costs next to nothing
    await engine.aclose()
    figures = {
        "tasks": len(task_ids),
        "sends_per_s": len(task_ids) / (sent - started),
        "cpu_us_per_task": used / len(task_ids) * 1e6,
    }
    if not hooked:
        return figures
    lags = [(at - bus.stored[task_id, seq]) * 1000 for task_id, seq, at in got if seq > 0]
    last = max(at for _, _, at in got)
    return {
        **figures,
        "deliveries": len(got),
        "missing": expected - len({(t, s) for t, s, _ in got}),
        "deliveries_per_s": len(got) / (last - started),
        "lag_ms_p50": statistics.median(lags),
        "lag_ms_p99": percentile(lags, 0.99),
        "lag_ms_max": max(lags),
    }


def burst(tasks: int, senders: int) -> Callable[[Callable[[], Any]], Any]:
    async def sends(send_one: Callable[[], Any]) -> None:
        async def sender(n: int) -> None:
            for _ in range(n):
                await send_one()

        share = [tasks // senders + (i < tasks % senders) for i in range(senders)]
        await asyncio.gather(*(sender(n) for n in share))

    return sends


def steady(rate: float, seconds: float) -> Callable[[Callable[[], Any]], Any]:
    async def sends(send_one: Callable[[], Any]) -> None:
        running: set[asyncio.Task[Any]] = set()
        t0 = time.monotonic()
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            job = asyncio.ensure_future(send_one())
            running.add(job)
            job.add_done_callback(running.discard)
        await asyncio.gather(*running)

    return sends


POSTGRES = os.environ.get("A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
_schemas: list[str] = []  # made for the runs, dropped at the end


def make_store(name: str, folder: Path, run_name: str, postgres: str = POSTGRES) -> TaskStore:
    if name == "memory":
        return MemoryStore(max_tasks=10**7)
    if name == "postgresql":
        from a2ad.store.postgres import PostgresStore

        schema = f"a2ad_push_{os.getpid()}_{len(_schemas)}"
        asyncio.run(pg_admin(postgres, f"CREATE SCHEMA {schema}"))
        _schemas.append(schema)
        separator = "&" if "?" in postgres else "?"
        return PostgresStore(f"{postgres}{separator}search_path={schema}")
    return SqliteStore(folder / f"{run_name}.db")


async def pg_admin(server: str, *statements: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(server)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stores", default="memory,sqlite", help="of memory, sqlite, postgresql")
    parser.add_argument("--postgres", default=POSTGRES, help="the server for postgresql")
    parser.add_argument("--tasks", type=int, default=1000, help="messages in the burst run")
    parser.add_argument("--senders", type=int, default=32)
    parser.add_argument("--chunks", type=int, default=3, help="artifact chunks per task")
    parser.add_argument("--rates", default="50", help="tasks/s of the steady runs")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of a steady run")
    args = parser.parse_args()
    if args.receiver:
        receiver_main(args.receiver)
        return
    proc, port = start_receiver()
    results: dict[str, dict[str, dict[str, float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="a2ad-push-bench-") as folder:
            for store_name in args.stores.split(","):
                runs = {"burst": burst(args.tasks, args.senders)}
                for rate in args.rates.split(","):
                    runs[f"steady-{rate}/s"] = steady(float(rate), args.seconds)
                store = make_store(store_name, Path(folder), "baseline", args.postgres)
                base = asyncio.run(
                    run(store, port, chunks=args.chunks, sends=runs["burst"], hooked=False)
                )
                results.setdefault(store_name, {})["burst without webhooks"] = base
                for run_name, sends in runs.items():
                    store = make_store(
                        store_name, Path(folder), run_name.replace("/", ""), args.postgres
                    )
                    figures = asyncio.run(run(store, port, chunks=args.chunks, sends=sends))
                    if run_name == "burst":
                        extra = figures["cpu_us_per_task"] - base["cpu_us_per_task"]
                        figures["cpu_us_per_delivery"] = extra / (args.chunks + 3)
                    results[store_name][run_name] = figures
                for run_name, figures in results[store_name].items():
                    print(
                        f"{store_name:7} {run_name:22} "
                        + ", ".join(
                            f"{k} {v:,.1f}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in figures.items()
                        ),
                        flush=True,
                    )
    finally:
        proc.terminate()
        proc.wait(10)
        if _schemas:
            drops = [f"DROP SCHEMA IF EXISTS {schema} CASCADE" for schema in _schemas]
            asyncio.run(pg_admin(args.postgres, *drops))
    print(
        json.dumps(
            {
                "bench": "push",
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "chunks": args.chunks,
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
