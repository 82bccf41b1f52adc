"""What fronting costs: an A2A agent that runs elsewhere, called directly and through a2ad.

Starts an upstream A2A server (``a2ad serve`` with the built-in echo agent, tasks
in memory; with ``--targets`` naming ``sdk-*``, also the official SDK's echo
server, bench/peers/sdk_echo.py), then ``a2ad serve --agent
echo=a2a+http://127.0.0.1:UP/`` fronting it (each a2ad task turn a call upstream
through a2ad's client, streamed, since the upstream card says it streams), and
drives blocking SendMessage and SendStreamingMessage (read to its end) at each
``--concurrency`` with bench/load.py's HTTP client, in windows that alternate
between the targets:

- ``direct``: the upstream a2ad, called directly;
- ``fronted``: the a2ad fronting it, on the store users get by default (SQLite,
  a fresh file in the temporary folder, deleted at the end);
- ``fronted-memory``: the same on ``--store memory``, to tell the store's share
  from the relay's;
- ``sdk-direct``, ``sdk-fronted`` (not run by default): the same two with the
  official SDK's server upstream.

Every server is pinned to CPU 0 and the load generator to CPU 1, as load.py does
(``--upstream-cpu 1`` moves the upstream beside the generator instead). Around
each window the CPU time (``/proc/<pid>/stat``, utime + stime) of the fronting
process and of its upstream is read, and given per request. For each fronted
target: its rate over the direct one's (window by window, the median), its
p50 and p99 latency minus the direct ones (the added latency per request), and
the CPU a request costs the front. Last, a2ad's client alone, in this process:
``Client.stream`` and ``Client.send`` to the upstream one at a time (the call a
fronted turn makes, without the task around it), CPU time per call.

    .venv/bin/python bench/fronting.py                            # about 100 s
    .venv/bin/python bench/fronting.py --a2ad-commit HEAD         # a2ad from a commit
    .venv/bin/python bench/fronting.py --seconds 4 --rounds 5     # steadier
    .venv/bin/python bench/fronting.py --targets direct,fronted,sdk-direct,sdk-fronted
    .venv/bin/python bench/fronting.py --cprofile /tmp/front.prof # the fronting a2ad profiled

It prints a table per workload, a summary, then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # beside this script: its servers, HTTP client, windows and statistics
from load import CLK_TCK, RUN, VENV, Server, State, Window, perf

TARGETS = ("direct", "fronted", "fronted-memory", "sdk-direct", "sdk-fronted")
DEFAULT_TARGETS = TARGETS[:3]
WORKLOADS = ("send", "stream")
MEMORY = ["--store", "memory", "--max-tasks", "1000000"]  # nothing evicted in the run


class Front(Server):
    """An a2ad fronting ``upstream``. load.py's window reads ``db_cpu`` around
    each window where it reads a PostgreSQL server's backends; here it is the
    upstream process's CPU, read at the same moments as the front's own."""

    upstream: Server | None = None

    async def db_cpu(self) -> float | None:
        return self.upstream.cpu() if self.upstream is not None else None


def machine_busy() -> float:
    """Seconds all cores were busy since boot (steal included: not ours to use)."""
    with open("/proc/stat", "rb") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CLK_TCK


def a2ad_argv(serve: list[str], cprofile: str | None = None) -> list[str]:
    if cprofile is None:
        return [str(VENV / "a2ad"), "serve", *serve]
    # cProfile.run writes the file when main() returns (the server stopped by SIGINT).
    code = (
        "import cProfile, sys; from a2ad.cli import main; "
        f"sys.argv = ['a2ad', 'serve', *{serve!r}]; cProfile.run('main()', {cprofile!r})"
    )
    return [str(VENV / "python"), "-c", code]


PROCESSES: list[Server] = []  # every process started, stopped at the end (and at exit)


def stop_all() -> None:
    while PROCESSES:
        server = PROCESSES.pop()
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGINT)  # a graceful end: cProfile writes its file
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.proc.wait(20)
        server.stop()  # SIGTERM, then SIGKILL, if still running
    for db in Path(tempfile.gettempdir()).glob(f"a2ad-fronting-{RUN}-*.db"):
        load.remove_db(db)


atexit.register(stop_all)


async def start(server: Server, cpu: int) -> Server:
    PROCESSES.append(server)
    server.start()  # pinned to CPU 0 (load.py's Server)
    if cpu != 0 and server.proc is not None and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(server.proc.pid, {cpu})
    for _ in range(50):  # a connection reset while it starts: ask again
        try:
            await server.wait_ready()
            break
        except ConnectionError:
            await asyncio.sleep(0.2)
    else:
        raise RuntimeError(f"{server.name} kept resetting connections:\n{server.log_tail()}")
    return server


async def start_targets(args: argparse.Namespace) -> dict[str, Server]:
    """The servers each target drives, upstreams first (a front reads its upstream's
    card as it starts)."""
    env = dict(os.environ)
    if args.a2ad_src is not None:  # the SDK peer never imports a2ad: one env for all
        env["PYTHONPATH"] = f"{args.a2ad_src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    upstreams: dict[str, Server] = {}
    for kind in dict.fromkeys("sdk" if t.startswith("sdk") else "a2ad" for t in args.targets):
        port = load.free_port()
        if kind == "a2ad":
            argv = a2ad_argv([*MEMORY, "--port", str(port), "--log-level", "warning"])
        else:
            argv = [str(VENV / "python"), "bench/peers/sdk_echo.py", "--port", str(port)]
        upstreams[kind] = await start(
            Server(f"upstream-{kind}", argv, port, env), args.upstream_cpu
        )
    servers: dict[str, Server] = {}
    for name in args.targets:
        upstream = upstreams["sdk" if name.startswith("sdk") else "a2ad"]
        if name.endswith("direct"):
            servers[name] = upstream
            continue
        port = load.free_port()
        db = Path(tempfile.gettempdir()) / f"a2ad-fronting-{RUN}-{name}.db"
        store = MEMORY if name.endswith("-memory") else ["--store", f"sqlite:///{db}"]
        serve = [
            "--agent",
            f"echo=a2a+http://127.0.0.1:{upstream.port}/",
            *store,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        cprofile = args.cprofile if name == "fronted" else None
        front = Front(name, a2ad_argv(serve, cprofile), port, env)
        front.upstream = upstream
        servers[name] = await start(front, 0)
    return servers


async def window(server: Server, workload: load.Workload, seconds: float) -> Window:
    """load.py's window, and how busy the rest of the machine was meanwhile."""
    busy0 = machine_busy()
    w = await load.run_window(server, workload, State(), seconds)
    # Cores kept busy by anything but the front, its upstream and this generator;
    # kept where load.py keeps core 0's other work (its summary averages it).
    others = machine_busy() - busy0 - w.cpu - (w.db_cpu or 0.0) - w.gen_cpu
    w.core0_other = max(0.0, others)
    return w


def workloads(args: argparse.Namespace) -> list[load.Workload]:
    out: list[load.Workload] = []
    for kind in args.workloads:
        for c in args.concurrency:
            if kind == "send":
                out.append(load.Send(f"send-c{c}", c))
            elif kind == "stream":
                out.append(load.Stream(f"stream-c{c}", c))
    return out


def direct_of(name: str) -> str:
    return "sdk-direct" if name.startswith("sdk") else "direct"


def compare(rows: dict[str, dict[str, Any]], windows: dict[str, list[Window]]) -> None:
    """Each fronted target beside its direct one: rate ratio (median of the
    rounds' ratios), added p50/p99 latency, and CPU per request."""
    for name, row in rows.items():
        base = direct_of(name)
        if name == base:  # the upstream itself: its CPU is the upstream's
            row["front_cpu_us"], row["upstream_cpu_us"] = None, row["cpu_us"]
            continue
        row["front_cpu_us"], row["upstream_cpu_us"] = row["cpu_us"], row.get("db_cpu_us")
        if base not in rows:
            continue
        pairs = zip(windows[name], windows[base], strict=True)
        ratios = [a.rate / b.rate for a, b in pairs if a.rate and b.rate]
        row["x_rate"] = statistics.median(ratios) if ratios else float("nan")
        row["added_p50_ms"] = row["p50_ms"] - rows[base]["p50_ms"]
        row["added_p99_ms"] = row["p99_ms"] - rows[base]["p99_ms"]
        if "extra_p50_ms" in row and "extra_p50_ms" in rows[base]:
            row["added_first_event_ms"] = row["extra_p50_ms"] - rows[base]["extra_p50_ms"]
        # CPU per request of everything the caller's request made run (front + upstream).
        row["total_cpu_us"] = row["cpu_us"] + row["upstream_cpu_us"]
        row["x_cpu_total"] = row["total_cpu_us"] / rows[base]["cpu_us"]


def print_rows(name: str, rows: dict[str, dict[str, Any]], took: float) -> None:
    stream = name.startswith("stream")
    print(f"\n### {name} ({took:.0f} s)\n")
    header = ["target", "streams/s" if stream else "req/s", "p50 ms", "p99 ms"]
    if stream:
        header.append("first event p50 ms")
    header += [
        "front CPU µs/req",
        "upstream CPU µs/req",
        "× direct rate",
        "+ p50 ms",
        "+ p99 ms",
        "errors",
        "others busy",
    ]
    table = []
    for target, row in rows.items():
        line = [
            target,
            load.fmt(row["rate"], 0),
            load.fmt(row["p50_ms"], 2),
            load.fmt(row["p99_ms"], 2),
        ]
        if stream:
            line.append(load.fmt(row.get("extra_p50_ms"), 2))
        line += [
            load.fmt(row["front_cpu_us"], 0),
            load.fmt(row["upstream_cpu_us"], 0),
            load.fmt(row.get("x_rate"), 2),
            load.fmt(row.get("added_p50_ms"), 2),
            load.fmt(row.get("added_p99_ms"), 2),
            str(row["errors"]),
            f"{row['core0_other']:.0%}",
        ]
        table.append(line)
    load.print_table(header, table)
    print(
        "  others busy: the cores kept busy by anything but the front, its upstream and this "
        "generator, in cores"
    )
    for target, row in rows.items():
        if row.get("error_sample"):
            print(f"  {target}: first error: {row['error_sample']}")
        if row["gen_cpu"] > 0.8:
            print(
                f"  {target}: the load generator was {row['gen_cpu']:.0%} busy: it may be the limit"
            )


def print_summary(report: dict[str, Any]) -> None:
    print("\n### summary: each fronted target beside its upstream called directly\n")
    header = [
        "workload",
        "target",
        "direct req/s",
        "fronted req/s",
        "× rate",
        "direct p50 / p99 ms",
        "fronted p50 / p99 ms",
        "+ p50 ms",
        "front CPU µs/req",
        "upstream CPU µs/req (direct)",
    ]
    table = []
    for workload, rows in report["workloads"].items():
        for target, row in rows.items():
            if "x_rate" not in row:
                continue
            base = rows[direct_of(target)]
            table.append(
                [
                    workload,
                    target,
                    load.fmt(base["rate"], 0),
                    load.fmt(row["rate"], 0),
                    load.fmt(row["x_rate"], 2),
                    f"{base['p50_ms']:.2f} / {base['p99_ms']:.2f}",
                    f"{row['p50_ms']:.2f} / {row['p99_ms']:.2f}",
                    load.fmt(row["added_p50_ms"], 2),
                    load.fmt(row["front_cpu_us"], 0),
                    load.fmt(base["cpu_us"], 0),
                ]
            )
    if table:
        load.print_table(header, table)


async def client_phase(upstream: Server, calls: int, rounds: int = 3) -> dict[str, Any]:
    """a2ad's client alone, in this process (what a front does upstream each turn,
    without the task around it): ``calls`` streams read to their end, then as
    many blocking sends, one at a time, for ``rounds`` rounds; this process's
    CPU time per call (the median round), and the upstream's."""
    import a2ad
    from a2ad.client import Client

    runs: dict[str, list[dict[str, float]]] = {"stream": [], "send": []}
    async with Client(f"http://127.0.0.1:{upstream.port}") as client:
        await client.card()

        async def stream() -> None:
            async for _ in client.stream("hello"):
                pass

        async def send() -> None:
            await client.send("hello")

        for r in range(rounds + 1):  # the first round warms up: the connection, the decodes
            for name, call in (("stream", stream), ("send", send)):
                n = calls if r else min(100, calls)
                cpu0, up0, t0 = time.process_time(), upstream.cpu(), perf()
                for _ in range(n):
                    await call()
                took = perf() - t0
                if r:
                    runs[name].append(
                        {
                            "client_cpu_us": (time.process_time() - cpu0) / n * 1e6,
                            "upstream_cpu_us": (upstream.cpu() - up0) / n * 1e6,
                            "latency_us": took / n * 1e6,
                        }
                    )
    out: dict[str, Any] = {"a2ad": str(Path(a2ad.__file__).parent)}
    for name, rows in runs.items():
        out[name] = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        out[name]["client_cpu_us_rounds"] = [round(row["client_cpu_us"]) for row in rows]
    print(
        f"\n### a2ad's client alone (this process, {calls} calls each, one at a time, "
        f"median of {rounds} rounds)\n"
    )
    load.print_table(
        ["call", "client CPU µs/call", "(rounds)", "upstream CPU µs/call", "µs/call"],
        [
            [
                f"Client.{name}",
                load.fmt(out[name]["client_cpu_us"], 0),
                ", ".join(map(str, out[name]["client_cpu_us_rounds"])),
                load.fmt(out[name]["upstream_cpu_us"], 0),
                load.fmt(out[name]["latency_us"], 0),
            ]
            for name in runs
        ],
    )
    return out


def print_profile(path: str, top: int) -> None:
    for _ in range(100):  # the server writes it as it exits
        if Path(path).exists():
            break
        time.sleep(0.1)
    else:
        print(f"no profile at {path}")
        return
    stats = pstats.Stats(path)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "bench": "fronting",
        "commit": load.git("rev-parse", "--short", "HEAD"),
        "a2ad_from": args.a2ad_from,
        "src_dirty": bool(load.git("status", "--porcelain", "--", "src")),
        "machine": load.machine(),
        "loadavg_start": os.getloadavg(),
        "settings": {
            k: getattr(args, k)
            for k in ("targets", "workloads", "concurrency", "rounds", "seconds", "warm")
        }
        | {"upstream_cpu": args.upstream_cpu, "front_store": "sqlite (a2ad's default)"},
        "workloads": {},
    }
    print(
        f"a2ad fronting benchmark: {', '.join(args.targets)}; {args.rounds} rounds × "
        f"{args.seconds} s per workload and target; concurrency {args.concurrency}; "
        f"a2ad from {args.a2ad_from}"
    )
    t_run = perf()
    servers = await start_targets(args)
    up = {n: s.pid for n, s in servers.items()} | {
        s.upstream.name: s.upstream.pid
        for s in servers.values()
        if isinstance(s, Front) and s.upstream
    }
    print("servers up: " + ", ".join(f"{n} (pid {pid})" for n, pid in up.items()))
    for workload in workloads(args):
        t0 = perf()
        for s in servers.values():  # warm-up, not recorded: connections, the front's pool
            await window(s, workload, args.warm)
        windows: dict[str, list[Window]] = {name: [] for name in servers}
        names = list(servers)
        for r in range(args.rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                windows[name].append(await window(servers[name], workload, args.seconds))
        rows = {name: load.summarize(ws) for name, ws in windows.items()}
        compare(rows, windows)
        report["workloads"][workload.name] = rows
        print_rows(workload.name, rows, perf() - t0)
    if args.client_calls:
        upstream = next(
            (s.upstream for s in servers.values() if isinstance(s, Front) and s.upstream), None
        )
        if upstream is not None:
            report["client"] = await client_phase(upstream, args.client_calls)
    report["loadavg_end"] = os.getloadavg()
    report["seconds"] = round(perf() - t_run, 1)
    print_summary(report)
    print(
        f"load average at the start {report['loadavg_start'][0]:.2f}, "
        f"at the end {report['loadavg_end'][0]:.2f}; total {report['seconds']} s"
    )
    return report


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--targets",
        default=",".join(DEFAULT_TARGETS),
        help=f"comma-separated, of {', '.join(TARGETS)}",
    )
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="send, stream or both")
    p.add_argument("--concurrency", default="1,16", help="clients at once, comma-separated")
    p.add_argument("--rounds", type=int, default=3, help="windows per target and workload")
    p.add_argument("--seconds", type=float, default=2.0, help="length of a window")
    p.add_argument("--warm", type=float, default=0.5, help="unrecorded warm-up window")
    p.add_argument(
        "--upstream-cpu",
        type=int,
        default=0,
        help="the core the upstream is pinned to (0: beside the front; 1: beside the generator)",
    )
    p.add_argument(
        "--cprofile", metavar="FILE", help="run the fronted target's a2ad under cProfile"
    )
    p.add_argument(
        "--client-calls",
        type=int,
        default=500,
        help="calls of a2ad's client alone to the upstream, per kind and round (0: skip)",
    )
    p.add_argument("--top", type=int, default=30, help="functions --cprofile prints")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--a2ad-src", type=Path, help="run a2ad from this src/ (PYTHONPATH)")
    src.add_argument(
        "--a2ad-commit",
        metavar="REF",
        help="run a2ad from this commit (git archive into a temp dir), not the working tree",
    )
    args = p.parse_args()
    args.targets = [t for t in args.targets.split(",") if t]
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    for name in args.targets:
        if name not in TARGETS:
            p.error(f"unknown target {name!r}; pick from {', '.join(TARGETS)}")
    for name in args.workloads:
        if name not in WORKLOADS:
            p.error(f"unknown workload {name!r}; pick from {', '.join(WORKLOADS)}")
    if args.cprofile:
        if "fronted" not in args.targets:
            p.error("--cprofile profiles the fronted target: name it in --targets")
        args.cprofile = str(Path(args.cprofile).resolve())
        Path(args.cprofile).unlink(missing_ok=True)
    return args


def run() -> None:
    args = parse_args()
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    # A SIGTERM ends the run as Ctrl-C does: the servers are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report = None
    tmp = Path(tempfile.mkdtemp(prefix="a2ad-fronting-src-"))
    args.a2ad_from = "working tree (editable install)"
    try:
        if args.a2ad_commit:
            args.a2ad_src, sha = load.extract_src(args.a2ad_commit, tmp / "a2ad")
            args.a2ad_from = f"commit {sha} (git archive)"
        elif args.a2ad_src:
            args.a2ad_from = str(args.a2ad_src)
        if args.a2ad_src is not None:  # the client phase's a2ad, in this process
            args.a2ad_src = args.a2ad_src.resolve()
            sys.path.insert(0, str(args.a2ad_src))
        report = uvloop.run(main(args))
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, separators=(",", ":")))
    if args.cprofile:
        print_profile(args.cprofile, args.top)


if __name__ == "__main__":
    run()
