"""One a2ad instance on PostgreSQL beside two (on two ports, one schema) and beside
``a2ad serve --workers 2``: how throughput scales on this machine, and where the
CPU goes.

    .venv/bin/python bench/scale.py                       # about 6 minutes on 2 cores
    .venv/bin/python bench/scale.py --sqlite              # also SQLite --workers 1 and 2
    .venv/bin/python bench/scale.py --quick               # under a minute, rough figures

Configurations, each on a schema of its own on the server at ``--postgres`` (default
``$A2AD_BENCH_POSTGRES``, else postgresql://postgres@127.0.0.1:5432/postgres),
dropped at the end:

- ``pg-1``: one ``a2ad serve``;
- ``pg-2``: two ``a2ad serve`` on two ports sharing the schema (and the key file);
  the load generator's connections alternate between the two ports (16 each at
  concurrency 32), as a load balancer spreading connections round robin would;
- ``pg-w2``: ``a2ad serve --workers 2`` (the kernel hands each connection to
  one of the two processes; the split is printed);
- with ``--sqlite``: ``sqlite-w1`` and ``sqlite-w2``, ``a2ad serve --workers 1``
  and ``2`` on a SQLite file each.

Nothing is pinned: the servers, PostgreSQL and the load generator (one process,
load.py's client) share the machine's cores, as they would on a 2-core host. The
workloads are load.py's: ``send`` (blocking SendMessage to the echo agent),
``get`` (GetTask of a random task among ``--prefill`` sent before through the
first instance) and ``stream`` (SendStreamingMessage read to its end), at
``--concurrency`` (32). Each workload runs ``--rounds`` windows of ``--seconds``
per configuration, the order rotating each round, so machine noise falls on
all alike; each window follows an unrecorded ``--warm``-up. Around each window
the script reads the CPU time of every a2ad process, of the configuration's
PostgreSQL backends (by ``application_name``), of the generator, and of the
whole machine (``/proc/stat``), and the load average. It prints, per
configuration: the median rate, p50/p99 latency, the cores each party kept busy
(CPU seconds per second of window; "rest" is everything else the machine ran:
other processes, interrupts), and the CPU per operation of a2ad and of
PostgreSQL. Then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import (  # siblings, found by the path above
    CLK_TCK,
    RUN,
    VENV,
    Conn,
    Database,
    Get,
    Send,
    Server,
    State,
    Stream,
    Window,
    Workload,
    connect,
    free_port,
    get,
    pct,
    prefill,
    remove_db,
)
from serve_workers import Group, holder

perf = time.perf_counter


def proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:  # ended meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy() -> float:
    """Seconds all cores were busy since boot (steal included: time not ours to use)."""
    with open("/proc/stat", "rb") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CLK_TCK


class Unpinned(Server):
    """One ``a2ad serve`` process, not pinned to a core (load.py pins its servers)."""

    start = Group.start


class Setup:
    """One configuration: its a2ad processes, the ports to spread connections
    over, and the schema whose backends are its PostgreSQL CPU."""

    def __init__(self, name: str, servers: list[Server], schema: str | None, db: Any) -> None:
        self.name = name
        self.servers = servers
        self.schema = schema
        self.database = db
        self.state = State()

    def pids(self) -> list[int]:
        pids: list[int] = []
        for server in self.servers:
            pids += server.processes() if isinstance(server, Group) else [server.pid]
        return pids

    def cpu(self) -> dict[int, float]:
        return {pid: proc_cpu(pid) for pid in self.pids()}

    async def db_cpu(self) -> float:
        if self.schema is None:
            return 0.0
        conn = await self.database.admin()
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1",
            f"{self.schema}%",  # the pools' connections, and each instance's LISTEN one
        )
        return sum(proc_cpu(pid) for (pid,) in rows)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def argv(store: list[str], port: int, workers: int | None) -> list[str]:
    extra = ["--workers", str(workers)] if workers else []
    return [
        str(VENV / "a2ad"),
        "serve",
        *store,
        *extra,
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]


async def start(name: str, args: argparse.Namespace, folder: Path) -> Setup:
    env = dict(os.environ)
    if args.a2ad_src:
        env["PYTHONPATH"] = f"{args.a2ad_src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    schema = None
    if name.startswith("pg"):
        schema = f"a2ad_scale_{RUN}_{name.replace('-', '_')}"
        url = await args.database.make_schema(schema)
        store = ["--store", url, "--secret-key-file", str(folder / f"{name}.key")]
    else:
        db = folder / f"{name}.db"
        remove_db(db)
        store = ["--store", f"sqlite:///{db}"]
    count = 2 if name == "pg-2" else 1
    workers = {"pg-w2": 2, "sqlite-w1": 1, "sqlite-w2": 2}.get(name)
    servers: list[Server] = []
    for n in range(count):
        port = free_port()
        cls = Group if workers else Unpinned
        server = cls(f"{name}-{n}", argv(store, port, workers), port, env)
        server.start()
        servers.append(server)
        if n == 0 and count > 1:  # the first makes the schema; the rest find it made
            await server.wait_ready()
    setup = Setup(name, servers, schema, args.database)
    try:
        await asyncio.gather(*(s.wait_ready() for s in servers))
    except BaseException:
        setup.stop()
        raise
    return setup


async def window(setup: Setup, workload: Workload, seconds: float) -> dict[str, Any]:
    servers = setup.servers
    conns: list[Conn] = []
    for i in range(workload.concurrency):
        conns.append(await connect(servers[i % len(servers)].port))
    split: dict[int, int] = {}
    if isinstance(servers[0], Group) and len(setup.pids()) > 2:
        # Which child the kernel gave each connection (it answers once asked).
        children = setup.pids()[1:]
        card = get(servers[0].port, "/.well-known/agent-card.json")
        await asyncio.gather(*(c.request(card) for c in conns))
        for c in conns:
            pid = holder(c, children)
            split[pid] = split.get(pid, 0) + 1
    w = Window(setup.name)
    gc.disable()
    try:
        load = os.getloadavg()[0]
        db0, cpu0, gen0, busy0 = (
            await setup.db_cpu(),
            setup.cpu(),
            time.process_time(),
            machine_busy(),
        )
        t0 = perf()
        end = t0 + seconds
        jobs = [
            asyncio.ensure_future(
                workload.worker(c, servers[i % len(servers)], setup.state, end, w)
            )
            for i, c in enumerate(conns)
        ]
        done, pending = await asyncio.wait(jobs, timeout=seconds + 30)
        for job in pending:
            job.cancel()
            w.fail("request still unanswered 30 s after the window")
        for job in done:
            if job.exception() is not None:
                w.fail(job.exception())
        w.elapsed = perf() - t0
        gen = time.process_time() - gen0
        await asyncio.sleep(0.05)  # what the last requests started ends
        cpu1, busy1, db1 = setup.cpu(), machine_busy(), await setup.db_cpu()
    finally:
        gc.enable()
        for c in conns:
            c.close()
    span = w.elapsed + 0.05
    a2ad = {pid: cpu1.get(pid, 0.0) - cpu0.get(pid, 0.0) for pid in cpu1}
    a2ad_total = sum(a2ad.values())
    db = db1 - db0
    busy = busy1 - busy0
    done_ops = w.ops + w.errors
    return {
        "rate": w.rate,
        "ops": w.ops,
        "errors": w.errors,
        "error_sample": w.error_sample,
        "lat": w.lat,
        "load1": load,
        "a2ad_cores": a2ad_total / span,
        "a2ad_cores_each": sorted((v / span for v in a2ad.values()), reverse=True),
        "db_cores": db / span,
        "gen_cores": gen / w.elapsed,
        "rest_cores": max(0.0, busy - a2ad_total - db - gen) / span,
        "busy_cores": busy / span,
        "a2ad_us": a2ad_total / done_ops * 1e6 if done_ops else float("nan"),
        "db_us": db / done_ops * 1e6 if done_ops else float("nan"),
        "split": sorted(split.values(), reverse=True),
    }


def summary(windows: list[dict[str, Any]]) -> dict[str, Any]:
    lat = sorted(x for w in windows for x in w["lat"])
    med = statistics.median
    out = {
        "rate": med(w["rate"] for w in windows),
        "rates": [round(w["rate"], 1) for w in windows],
        "errors": sum(w["errors"] for w in windows),
        "p50_ms": pct(lat, 50) * 1000,
        "p99_ms": pct(lat, 99) * 1000,
        "load1": [round(w["load1"], 2) for w in windows],
    }
    for key in ("a2ad_cores", "db_cores", "gen_cores", "rest_cores", "busy_cores"):
        out[key] = med(w[key] for w in windows)
    for key in ("a2ad_us", "db_us"):
        out[key] = med(w[key] for w in windows)
    out["a2ad_cores_each"] = [
        round(med(w["a2ad_cores_each"][i] for w in windows), 2)
        for i in range(min(len(w["a2ad_cores_each"]) for w in windows))
    ]
    splits = [w["split"] for w in windows if w["split"]]
    if splits:
        out["splits"] = splits
    sample = next((w["error_sample"] for w in windows if w["error_sample"]), "")
    if sample:
        out["error_sample"] = sample
    return out


def print_table(workload: str, rows: dict[str, dict[str, Any]]) -> None:
    print(
        f"\n{workload} (load average at the windows: "
        f"{min(min(r['load1']) for r in rows.values()):.1f}–"
        f"{max(max(r['load1']) for r in rows.values()):.1f})"
    )
    head = (
        f"{'':10} {'rate/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'a2ad':>5} {'each':>13} "
        f"{'pg':>5} {'gen':>5} {'rest':>5} {'busy':>5} {'a2ad µs':>8} {'pg µs':>6}"
    )
    print(head)
    for name, r in rows.items():
        each = "+".join(f"{c:.2f}" for c in r["a2ad_cores_each"] if c >= 0.005)
        print(
            f"{name:10} {r['rate']:8,.0f} {r['p50_ms']:7.1f} {r['p99_ms']:7.1f} "
            f"{r['a2ad_cores']:5.2f} {each:>13} {r['db_cores']:5.2f} {r['gen_cores']:5.2f} "
            f"{r['rest_cores']:5.2f} {r['busy_cores']:5.2f} {r['a2ad_us']:8,.0f} "
            f"{r['db_us']:6,.0f}" + (f"  errors {r['errors']}" if r["errors"] else "")
        )
        if "splits" in r:
            print(f"{'':10} connections per process: {r['splits'][0]}")
        if "error_sample" in r:
            print(f"{'':10} first error: {r['error_sample'][:200]}")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    args.database = Database(args.postgres)
    folder = Path(tempfile.mkdtemp(prefix=f"a2ad-scale-{RUN}-"))
    setups: list[Setup] = []
    report: dict[str, Any] = {"bench": "scale", "configs": args.configs, "workloads": {}}
    try:
        for name in args.configs:
            setups.append(await start(name, args, folder))
        for setup in setups:
            first = setup.servers[0]
            setup.state = await prefill(first, args.prefill)
        makers = {
            "send": lambda: Send("send-c32", args.concurrency),
            "get": lambda: Get("get-c32", args.concurrency),
            "stream": lambda: Stream("stream-c32", args.concurrency),
        }
        for name in args.workloads:
            workload = makers[name]()
            windows: dict[str, list[dict[str, Any]]] = {s.name: [] for s in setups}
            for r in range(args.rounds):
                order = setups[r % len(setups) :] + setups[: r % len(setups)]
                for setup in order:
                    await window(setup, workload, args.warm)
                    windows[setup.name].append(await window(setup, workload, args.seconds))
            rows = {n: summary(ws) for n, ws in windows.items()}
            print_table(f"{name} at concurrency {args.concurrency}", rows)
            report["workloads"][name] = rows
    finally:
        for setup in setups:
            setup.stop()
            if setup.schema is not None:
                await args.database.drop_schema(setup.schema)
        await args.database.aclose()
        for path in folder.iterdir():
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
    report["cores"] = os.cpu_count()
    return report


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite", action="store_true", help="also sqlite-w1 and sqlite-w2")
    parser.add_argument("--configs", help="comma-separated, e.g. pg-1,pg-2")
    parser.add_argument("--workloads", default="send,get,stream")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warm", type=float, default=1.0)
    parser.add_argument("--prefill", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="short windows: a smoke test")
    parser.add_argument("--a2ad-src", help="run a2ad from this src/ instead")
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    args = parser.parse_args()
    configs = ["pg-1", "pg-2", "pg-w2"] + (["sqlite-w1", "sqlite-w2"] if args.sqlite else [])
    args.configs = args.configs.split(",") if args.configs else configs
    args.workloads = args.workloads.split(",")
    if args.quick:
        args.rounds, args.seconds, args.warm, args.prefill = 2, 1.0, 0.2, 300
    report = asyncio.run(main(args))
    print(json.dumps(report, default=lambda v: None))


if __name__ == "__main__":
    run()
