"""``a2ad serve --workers N`` on SQLite: throughput with one process and with two, and
what crosses between the two (a cancel, a subscriber's events).

    .venv/bin/python bench/serve_workers.py              # about 4 minutes on 2 cores
    .venv/bin/python bench/serve_workers.py --quick      # under a minute, rough figures

Throughput: ``a2ad serve --workers 1`` and ``--workers 2`` run side by side on SQLite files
of their own, unpinned (two processes need both cores), with the load generator on the
same two cores. The workloads (``send``: blocking SendMessage to the echo agent;
``get``: GetTask on random ids of tasks sent before) run in short windows that
alternate between the servers, so a noisy machine disturbs both alike; each figure
is the median over the windows. Server CPU is summed over the parent and its
children (``/proc``), per request; beside it, the cores the server and the load
generator kept busy (CPU seconds per second): on 2 cores, what is left for a
second process.

Across processes (``--workers 2`` only): connections to each process, told apart by
which process holds the server's end (``/proc/net/tcp`` and ``/proc/<pid>/fd``).
``cancel``: SendStreamingMessage ``sleep:30`` on process A, CancelTask on process B;
the time from sending the cancel until B answers, and until A's stream delivers the
canceled event (which takes B's signal to A, and A reading the log). ``subscribe``:
a ticker task on A (an artifact every ``--tick-ms``) streamed on A and subscribed to
on B; for each event, how much later B's subscriber got it than A's stream. Each is
p50/p99 over ``--trials`` (cancel) or that many events (subscribe), and beside it the
same done on a second connection to A, interleaved: what the crossing itself costs,
apart from what a busy machine adds to any request.

It prints tables, then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import (  # a sibling script, found by the path above
    Conn,
    Server,
    SseSink,
    connect,
    free_port,
    is_result,
    post,
    rpc,
    send_body,
    task_id_of,
)

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
perf = time.perf_counter
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Group(Server):
    """``a2ad serve --workers N``: unpinned, its CPU summed over its processes."""

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    async def wait_ready(self, timeout: float = 60.0) -> None:
        # The port takes connections from the start, but nothing answers them
        # until the processes serve: the banner says when they all do.
        end = perf() + timeout
        while "Press Ctrl-C to stop" not in Path(self.log.name).read_text(errors="replace"):
            assert self.proc is not None
            if self.proc.poll() is not None or perf() > end:
                raise RuntimeError(f"{self.name} did not start:\n{self.log_tail()}")
            await asyncio.sleep(0.1)
        await super().wait_ready(max(1.0, end - perf()))

    def processes(self) -> list[int]:
        """The parent and its children."""
        with open(f"/proc/{self.pid}/task/{self.pid}/children") as f:
            return [self.pid, *(int(p) for p in f.read().split())]

    def cpu(self) -> float:
        total = 0
        for pid in self.processes():
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except FileNotFoundError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / CLK_TCK


def start(workers: int, folder: Path, env: dict[str, str]) -> Group:
    port = free_port()
    argv = [
        str(Path(sys.executable).parent / "a2ad"),  # the venv's, as bench/README.md runs it
        "serve",
        "--workers",
        str(workers),
        "--store",
        f"sqlite:///{folder}/w{workers}.db",
        "--agent",
        "ticker_agent:TickerAgent",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    server = Group(f"workers-{workers}", argv, port, env)
    server.start()
    return server


# --------------------------------------------------------------------------- throughput


async def window(server: Group, make: Any, concurrency: int, seconds: float) -> dict[str, float]:
    conns = [await connect(server.port) for _ in range(concurrency)]
    latencies: list[float] = []
    errors = 0

    async def worker(conn: Conn, end: float) -> None:
        nonlocal errors
        while (t0 := perf()) < end:
            status, body = await conn.request(make(server.port))
            if status == 200 and is_result(body):
                latencies.append(perf() - t0)
            else:
                errors += 1

    try:
        cpu0, gen0, t0 = server.cpu(), time.process_time(), perf()
        await asyncio.gather(*(worker(c, t0 + seconds) for c in conns))
        elapsed, gen = perf() - t0, time.process_time() - gen0
        await asyncio.sleep(0.05)
        cpu = server.cpu() - cpu0
    finally:
        for c in conns:
            c.close()
    latencies.sort()
    done = len(latencies)
    return {
        "per_s": done / elapsed,
        "p50_ms": latencies[done // 2] * 1000 if done else 0.0,
        "p99_ms": latencies[min(done - 1, int(done * 0.99))] * 1000 if done else 0.0,
        "cpu_ms_per_op": cpu / done * 1000 if done else 0.0,
        "server_cores": cpu / elapsed,  # how many cores the server kept busy
        "generator_cores": gen / elapsed,
        "errors": errors,
    }


async def throughput(
    servers: list[Group], args: argparse.Namespace
) -> dict[str, dict[str, dict[str, float]]]:
    ids: dict[str, list[str]] = {}
    for server in servers:  # tasks for get to read
        conn = await connect(server.port)
        try:
            found = []
            for _ in range(200):
                _, body = await conn.request(post(server.port, send_body("hello")))
                found.append(task_id_of(body))
            ids[server.name] = found
        finally:
            conn.close()

    def send(port: int) -> bytes:
        return post(port, send_body("hello"))

    results: dict[str, dict[str, dict[str, float]]] = {}
    for workload in [w for w in ("send", "get") if w in args.workloads]:
        rounds: dict[str, list[dict[str, float]]] = {s.name: [] for s in servers}
        for r in range(args.rounds):
            order = servers[r % len(servers) :] + servers[: r % len(servers)]
            for server in order:
                if workload == "send":
                    make = send
                else:
                    known = ids[server.name]

                    def make(port: int, known: list[str] = known) -> bytes:
                        return post(port, rpc("GetTask", {"id": random.choice(known)}))

                await window(server, make, args.concurrency, args.warm)
                rounds[server.name].append(
                    await window(server, make, args.concurrency, args.seconds)
                )
        results[workload] = {
            name: {k: statistics.median(w[k] for w in got) for k in got[0]}
            for name, got in rounds.items()
        }
    return results


# --------------------------------------------------------------------------- across processes


def holder(conn: Conn, pids: list[int]) -> int:
    """The pid of the process holding the server's end of ``conn``."""
    assert conn.transport is not None
    ours = conn.transport.get_extra_info("sockname")[1]
    theirs = conn.transport.get_extra_info("peername")[1]
    inode = None
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            # The server's end: its local port the server's, its remote port ours
            # (not a closed socket of the same ports, whose inode is 0).
            local, remote = (int(f.split(":")[1], 16) for f in fields[1:3])
            if (local, remote) == (theirs, ours) and fields[9] != "0":
                inode = fields[9]
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    raise RuntimeError(f"no process holds the connection from port {ours}")


async def connections(server: Group) -> tuple[Conn, Conn, Conn]:
    """Two connections to one child (A) and one to the other (B)."""
    children = server.processes()[1:]
    reached: dict[int, list[Conn]] = {}
    spare = []
    while len(reached) < 2 or max(len(c) for c in reached.values()) < 2:
        conn = await connect(server.port)
        await conn.request(post(server.port, rpc("GetTask", {"id": "none"})))
        got = reached.setdefault(holder(conn, children), [])
        (got if len(got) < 2 else spare).append(conn)
    (a, a2), (b, *more) = sorted(reached.values(), key=len, reverse=True)
    for conn in [*spare, *more]:
        conn.close()
    return a, a2, b


def quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    n = len(values)
    return {
        "n": n,
        "p50_ms": values[n // 2] * 1000,
        "p99_ms": values[min(n - 1, int(n * 0.99))] * 1000,
        "max_ms": values[-1] * 1000,
    }


async def cancel_trials(server: Group, trials: int) -> dict[str, dict[str, float]]:
    """Each trial a task streamed on A, canceled on B, or (alternately, for
    comparison) on another connection to A."""
    times: dict[str, list[float]] = {
        "answered": [],
        "stream_ended": [],
        "local_answered": [],
        "local_stream_ended": [],
    }
    a, a2, b = await connections(server)
    try:
        for trial in range(2 * trials):
            via, where = (b, "") if trial % 2 == 0 else (a2, "local_")
            sink = SseSink()
            a.sink = sink
            stream = a.request(
                post(
                    server.port,
                    send_body("sleep:30 cancel me", method="SendStreamingMessage"),
                    stream=True,
                )
            )
            await sink.first
            task_id = json.loads(sink.events[0][1].split(b"data:", 1)[1])["result"]["task"]["id"]
            t0 = perf()
            _, body = await via.request(post(server.port, rpc("CancelTask", {"id": task_id})))
            times[f"{where}answered"].append(perf() - t0)
            assert b"TASK_STATE_CANCELED" in body, body
            await sink.final
            times[f"{where}stream_ended"].append(sink.events[-1][0] - t0)
            await stream
            a.sink = None
    finally:
        for conn in (a, a2, b):
            conn.close()
    return {name: quantiles(values) for name, values in times.items()}


_ID = re.compile(rb"^id: ?(\d+)", re.MULTILINE)


async def subscribe_lag(server: Group, events: int, tick_ms: float) -> dict[str, dict[str, float]]:
    """A ticker task streamed on A, subscribed to on B and on another connection to A."""
    a, a2, b = await connections(server)
    try:
        here, local, there = SseSink(), SseSink(), SseSink()
        a.sink, a2.sink, b.sink = here, local, there
        streamed = a.request(
            post(
                server.port,
                send_body(f"tick {events} {tick_ms}", method="SendStreamingMessage"),
                stream=True,
            )
        )
        await here.first
        task_id = json.loads(here.events[0][1].split(b"data:", 1)[1])["result"]["task"]["id"]
        subscribe = post(server.port, rpc("SubscribeToTask", {"id": task_id}), stream=True)
        await asyncio.gather(streamed, a2.request(subscribe), b.request(subscribe))
    finally:
        for conn in (a, a2, b):
            conn.close()

    def by_id(sink: SseSink) -> dict[int, float]:
        return {int(m.group(1)): t for t, e in sink.events if (m := _ID.search(e))}

    seen_here = by_id(here)
    figures = {}
    for name, sink in (("other_process", there), ("same_process", local)):
        seen = by_id(sink)
        first = min(seen)  # the subscription's head: the task as it stood
        lags = [seen[i] - seen_here[i] for i in seen_here if i > first and i in seen]
        missing = [i for i in seen_here if i > first and i not in seen]
        figures[name] = {**quantiles(lags), "missing": len(missing)}
    return figures


# --------------------------------------------------------------------------- main


def table(title: str, rows: list[tuple[str, ...]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows[1:]:
        print("| " + " | ".join(row) + " |")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    paths = [str(PEERS)] + ([str(args.a2ad_src)] if args.a2ad_src else [])
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    report: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory(prefix="a2ad-workers-") as folder:
        servers = [start(n, Path(folder), env) for n in (1, 2)]
        try:
            await asyncio.gather(*(s.wait_ready(timeout=120) for s in servers))
            report["throughput"] = await throughput(servers, args)
            two = servers[1]
            if "cancel" in args.workloads:
                report["cancel"] = await cancel_trials(two, args.trials)
            if "subscribe" in args.workloads:
                report["subscribe"] = await subscribe_lag(two, args.trials, args.tick_ms)
        finally:
            for s in servers:
                s.stop()
    rows = [
        (
            "workload",
            "--workers",
            "req/s",
            "p50 ms",
            "p99 ms",
            "server CPU ms/req",
            "cores: server + generator",
            "errors",
        )
    ]
    for workload, by_server in report["throughput"].items():
        for name, f in by_server.items():
            rows.append(
                (
                    f"{workload} c={args.concurrency}",
                    name.split("-")[1],
                    f"{f['per_s']:,.0f}",
                    f"{f['p50_ms']:.1f}",
                    f"{f['p99_ms']:.1f}",
                    f"{f['cpu_ms_per_op']:.2f}",
                    f"{f['server_cores']:.2f} + {f['generator_cores']:.2f}",
                    f"{f['errors']:.0f}",
                )
            )
    if len(rows) > 1:
        table("Throughput (median of the windows)", rows)
    rows = [("across the two processes", "n", "p50 ms", "p99 ms", "max ms")]
    crossed = []
    if "cancel" in report:
        cancel = report["cancel"]
        crossed.append(("cancel on B: answered", cancel["answered"]))
        crossed.append(("cancel on B: A's stream ended", cancel["stream_ended"]))
        crossed.append(("(cancel on A: answered)", cancel["local_answered"]))
        crossed.append(("(cancel on A: A's stream ended)", cancel["local_stream_ended"]))
    if "subscribe" in report:
        lag = report["subscribe"]
        crossed.append(("subscriber on B behind A's stream", lag["other_process"]))
        crossed.append(("(subscriber on A behind A's stream)", lag["same_process"]))
    for label, f in crossed:
        rows.append(
            (
                label,
                f"{f['n']:.0f}",
                f"{f['p50_ms']:.2f}",
                f"{f['p99_ms']:.2f}",
                f"{f['max_ms']:.1f}",
            )
        )
    if crossed:
        table("Across processes (--workers 2)", rows)
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short windows, few trials")
    p.add_argument("--rounds", type=int, help="windows per server and workload (5; quick 2)")
    p.add_argument("--seconds", type=float, help="length of a window (5; quick 1)")
    p.add_argument("--warm", type=float, help="unrecorded warm-up window (1; quick 0.2)")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument(
        "--workloads", default="send,get,cancel,subscribe", help="comma-separated subset"
    )
    p.add_argument("--trials", type=int, help="cancels, and subscribed events (1000; quick 100)")
    p.add_argument("--tick-ms", type=float, default=10.0, help="the ticker's pace")
    p.add_argument("--a2ad-src", type=Path, help="run a2ad from this src/ (PYTHONPATH)")
    args = p.parse_args()
    defaults = {
        "rounds": (2, 5),
        "seconds": (1.0, 5.0),
        "warm": (0.2, 1.0),
        "trials": (100, 1000),
    }
    for key, (quick, full) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    args.workloads = args.workloads.split(",")
    t0 = perf()
    report = asyncio.run(run(args))
    report["seconds"] = round(perf() - t0, 1)
    print(f"\ntotal {report['seconds']} s")
    print(json.dumps(report, separators=(",", ":")))


if __name__ == "__main__":
    main()
