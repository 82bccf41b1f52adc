"""Send throughput with the agents apart from the front: ``a2ad serve --no-run``
plus ``a2ad worker`` beside one ``a2ad serve`` that runs the agent itself, both
on PostgreSQL, in one run.

    .venv/bin/python bench/workers.py                       # about 2 minutes
    .venv/bin/python bench/workers.py --seconds 5 --rounds 3 --concurrency 1,32

Each setup has a schema of its own on the server at A2AD_BENCH_POSTGRES
(default postgresql://postgres@127.0.0.1:5432/postgres), made for the run and
dropped after. Every a2ad process (the instance; the front and its worker) is
pinned to CPU 0 and the load generator to CPU 1 (bench/load.py's HTTP client:
keep-alive connections, one per concurrent sender), so that both setups have one
core for a2ad; PostgreSQL is not pinned. ``--worker-cpu 1`` moves the worker to
the generator's core instead, so that the front has one to itself. The workload
is a blocking SendMessage to the echo agent; windows of ``--seconds`` alternate
between the setups for ``--rounds`` rounds. For each setup and concurrency it
prints sends/s (the median window), latency p50/p99, and the CPU time a send
costs each a2ad process; then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (
    VENV,
    Server,
    connect,
    free_port,
    is_result,
    pct,
    pin,
    post,
    send_body,
)

SERVER = os.environ.get("A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
perf = time.perf_counter


class Setup:
    """The processes of one setup: the one that takes requests comes first."""

    def __init__(self, name: str, processes: list[Server]) -> None:
        self.name = name
        self.processes = processes

    @property
    def port(self) -> int:
        return self.processes[0].port

    def cpu(self) -> list[float]:
        return [p.cpu() for p in self.processes]


def store_url(schema: str) -> str:
    separator = "&" if "?" in SERVER else "?"
    return f"{SERVER}{separator}search_path={schema}"


def a2ad(*args: str) -> list[str]:
    return [str(VENV / "a2ad"), *args, "--log-level", "warning"]


async def wait_for_line(process: Server, text: str, timeout: float = 60.0) -> None:
    end = perf() + timeout
    while perf() < end:
        assert process.proc is not None
        if process.proc.poll() is not None:
            raise RuntimeError(f"{process.name} exited:\n{process.log_tail()}")
        if text in process.log_tail(200):
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{process.name} never printed {text!r}:\n{process.log_tail()}")


async def start(schemas: dict[str, str], key: Path, worker_cpu: int) -> list[Setup]:
    env = {**os.environ, "COLUMNS": "200"}
    common = ("--agent", "echo", "--secret-key-file", str(key))
    instance_port, front_port = free_port(), free_port()
    instance = Server(
        "instance",
        a2ad(
            "serve",
            "--port",
            str(instance_port),
            "--store",
            store_url(schemas["instance"]),
            *common,
        ),
        instance_port,
        env,
    )
    front = Server(
        "front",
        a2ad(
            "serve",
            "--no-run",
            "--port",
            str(front_port),
            "--store",
            store_url(schemas["workers"]),
            *common,
        ),
        front_port,
        env,
    )
    worker = Server(
        "worker",
        a2ad(
            "worker",
            "--store",
            store_url(schemas["workers"]),
            "--agent",
            "echo",
            "--concurrency",
            "64",
        ),
        0,
        env,
    )
    for process in (instance, front, worker):
        process.start()
    if worker_cpu != 0 and worker.proc is not None:  # load.py pins every server to CPU 0
        os.sched_setaffinity(worker.proc.pid, {worker_cpu})
    await instance.wait_ready()
    await front.wait_ready()
    await wait_for_line(worker, "a2ad worker running")
    return [Setup("one instance", [instance]), Setup("front + worker", [front, worker])]


async def window(setup: Setup, concurrency: int, seconds: float) -> dict[str, Any]:
    conns = [await connect(setup.port) for _ in range(concurrency)]
    latencies: list[float] = []
    errors = 0
    end = perf() + seconds

    async def sender(conn: Any) -> None:
        nonlocal errors
        while perf() < end:
            t0 = perf()
            status, body = await conn.request(post(setup.port, send_body("hello")))
            if status == 200 and is_result(body) and b"TASK_STATE_COMPLETED" in body:
                latencies.append(perf() - t0)
            else:
                errors += 1

    cpu0, t0 = setup.cpu(), perf()
    try:
        await asyncio.gather(*(sender(c) for c in conns))
    finally:
        for c in conns:
            c.close()
    elapsed = perf() - t0
    await asyncio.sleep(0.05)
    cpu = [after - before for after, before in zip(setup.cpu(), cpu0, strict=True)]
    return {
        "sends": len(latencies),
        "errors": errors,
        "elapsed": elapsed,
        "lat": latencies,
        "cpu": cpu,
    }


def summary(windows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    lat = sorted(x for w in windows for x in w["lat"])
    sends = sum(w["sends"] for w in windows)
    return {
        "sends_per_s": statistics.median(w["sends"] / w["elapsed"] for w in windows),
        "rates": [round(w["sends"] / w["elapsed"], 1) for w in windows],
        "errors": sum(w["errors"] for w in windows),
        "p50_ms": pct(lat, 50) * 1000,
        "p99_ms": pct(lat, 99) * 1000,
        "cpu_us_per_send": {
            name: sum(w["cpu"][i] for w in windows) / sends * 1e6 if sends else float("nan")
            for i, name in enumerate(names)
        },
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    pin_generator = pin(1)
    if pin_generator is not None:
        pin_generator()
    run = uuid.uuid4().hex[:8]
    schemas = {"instance": f"a2ad_bench_{run}_one", "workers": f"a2ad_bench_{run}_workers"}
    admin = await asyncpg.connect(SERVER)
    for schema in schemas.values():
        await admin.execute(f"CREATE SCHEMA {schema}")
    setups: list[Setup] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            setups = await start(schemas, Path(tmp) / "key", args.worker_cpu)
            concurrencies = [int(c) for c in args.concurrency.split(",")]
            for setup in setups:  # warm up: connections, caches, the JIT of nothing
                await window(setup, max(concurrencies), 2.0)
            report: dict[str, Any] = {}
            for c in concurrencies:
                windows: dict[str, list[dict[str, Any]]] = {s.name: [] for s in setups}
                for r in range(args.rounds):
                    order = setups if r % 2 == 0 else setups[::-1]
                    for setup in order:
                        windows[setup.name].append(await window(setup, c, args.seconds))
                report[str(c)] = {
                    s.name: summary(windows[s.name], [p.name for p in s.processes]) for s in setups
                }
            return report
    finally:
        for setup in setups:
            for process in setup.processes:
                process.stop()
        for schema in schemas.values():
            await admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await admin.close()


def print_report(report: dict[str, Any]) -> None:
    print("| concurrency | setup | sends/s | p50 ms | p99 ms | CPU a send (µs) | errors |")
    print("|---:|---|---:|---:|---:|---|---:|")
    for c, setups in report.items():
        for name, row in setups.items():
            cpu = ", ".join(f"{p} {v:,.0f}" for p, v in row["cpu_us_per_send"].items())
            print(
                f"| {c} | {name} | {row['sends_per_s']:,.0f} | {row['p50_ms']:.1f} | "
                f"{row['p99_ms']:.1f} | {cpu} | {row['errors']} |"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds a window lasts")
    parser.add_argument("--rounds", type=int, default=4, help="windows per setup and concurrency")
    parser.add_argument("--concurrency", default="1,32", help="comma-separated sender counts")
    parser.add_argument(
        "--worker-cpu",
        type=int,
        default=0,
        help="the CPU the worker is pinned to (1: the load generator's, not the front's)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    result = uvloop.run(main(parse_args()))
    print_report(result)
    print(json.dumps(result))
