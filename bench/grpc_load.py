"""gRPC beside JSON-RPC: a2ad's two bindings on one server, and the official SDK's gRPC server.

bench/load.py's harness (its servers pinned to CPU 0 and the load generator to CPU
1, its windows alternating between the targets round by round, the server's CPU
per request from /proc, its tables) with one more kind of client: a ``grpc.aio``
channel per concurrent worker (each its own HTTP/2 connection), calling A2A 1.0's
``lf.a2a.v1.A2AService`` through the official SDK's stubs (a2a-sdk's
``a2a_pb2_grpc``) with ``a2a-version: 1.0`` in the metadata. The targets:

- ``a2ad-grpc``: ``a2ad serve --store memory --grpc-port`` over gRPC;
- ``a2ad``: the same process over JSON-RPC (load.py's client), so both bindings
  read the same store, in adjacent windows, with the same server CPU counter;
- ``sdk-grpc``: the SDK's GrpcHandler over its DefaultRequestHandler and
  InMemoryTaskStore, with sdk_echo.py's agent (bench/peers/sdk_grpc_echo.py);
- ``sdk`` (not run unless named): the SDK's JSON-RPC peer, bench/peers/sdk_echo.py.

Operations, each at 1 and 32 concurrent clients: send (blocking SendMessage to the
echo agent), get (GetTask of a random one of the prefilled completed tasks), stream
(SendStreamingMessage read to its end: the task, working, the artifact, completed),
cancel (a ``sleep:30`` task sent with returnImmediately, then CancelTask, polling
GetTask until it reads canceled). Ratios are taken against ``--baseline``
(a2ad-grpc), round by round, as load.py does. Markdown tables, then one JSON line.

    .venv/bin/python bench/grpc_load.py --quick                       # about a minute
    .venv/bin/python bench/grpc_load.py --rounds 3 --seconds 2        # about 8 minutes
    .venv/bin/python bench/grpc_load.py --targets a2ad-grpc,a2ad --workloads get --concurrency 32
    .venv/bin/python bench/grpc_load.py --targets a2ad-grpc --workloads send --cprofile /tmp/g.prof

``--cprofile FILE`` runs the a2ad server under cProfile (its main thread: the event
loop) and writes the profile when it stops; the run then prints its top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import pstats
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import load  # beside this script
import uvloop
from a2a.types import a2a_pb2, a2a_pb2_grpc  # type: ignore[import-untyped]
from load import Server, State, Window, perf

TARGETS = ("a2ad-grpc", "a2ad", "sdk-grpc", "bare-grpc", "sdk", "bare")
DEFAULT_TARGETS = TARGETS[:4]
HTTP_PROCESSES = ("a2ad", "sdk", "bare")  # the processes that answer HTTP (the others: gRPC)
OPERATIONS = ("send", "get", "stream", "cancel")
METADATA = (("a2a-version", "1.0"),)
COMPLETED = a2a_pb2.TASK_STATE_COMPLETED
CANCELED = a2a_pb2.TASK_STATE_CANCELED
IDS = itertools.count(1)
# Each channel its own connection: channels with the same target and options would
# otherwise share one subchannel (one HTTP/2 connection) from grpc's global pool.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


# --------------------------------------------------------------------------- targets


@dataclass
class Target:
    """What a window drives: ``server`` (the process whose CPU is read) over
    gRPC at ``grpc_port``, or over JSON-RPC at its HTTP port (``grpc_port`` 0)."""

    name: str
    server: Server
    grpc_port: int = 0
    state: State | None = None


def server_argv(name: str, port: int, grpc_port: int, cprofile: str | None) -> list[str]:
    python = str(load.VENV / "python")
    if name == "a2ad":
        serve = ["serve", "--store", "memory", "--max-tasks", "1000000", "--port", str(port)]
        serve += ["--grpc-port", str(grpc_port), "--log-level", "warning"]
        if cprofile is None:
            return [str(load.VENV / "a2ad"), *serve]
        # cProfile.run writes FILE when main() ends (the server stopped by SIGINT).
        code = (
            "import cProfile, sys; from a2ad.cli import main; "
            f"sys.argv = ['a2ad', *{serve!r}]; cProfile.run('main()', {cprofile!r})"
        )
        return [python, "-c", code]
    if name == "sdk-grpc":
        return [python, "bench/peers/sdk_grpc_echo.py", "--port", str(grpc_port)]
    if name == "bare-grpc":
        return [python, "bench/peers/bare_grpc.py", "--port", str(grpc_port)]
    return load.server_argv(name, port, Path())  # sdk, bare: load.py's peers


async def wait_grpc(server: Server, port: int, timeout: float = 60.0) -> None:
    """Until a call on ``port`` is answered (a GetTask of no task: NOT_FOUND)."""
    end = perf() + timeout
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        while perf() < end:
            assert server.proc is not None
            if server.proc.poll() is not None:
                raise RuntimeError(f"{server.name} exited:\n{server.log_tail()}")
            try:
                await stub.GetTask(a2a_pb2.GetTaskRequest(id="none"), metadata=METADATA, timeout=5)
                return
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{server.name} did not answer gRPC in {timeout} s:\n{server.log_tail()}")


def process_of(target: str) -> str:
    """The process a target is served by: a2ad's for both of its bindings."""
    return "a2ad" if target == "a2ad-grpc" else target


async def start_targets(names: list[str], args: argparse.Namespace) -> list[Target]:
    """The processes the targets need (a2ad once for both of its bindings), started
    and answering; the targets in ``names``' order."""
    servers: dict[str, tuple[Server, int]] = {}
    for process in dict.fromkeys(process_of(n) for n in names):
        port, grpc_port = load.free_port(), load.free_port()
        cprofile = args.cprofile if process == "a2ad" else None
        argv = server_argv(process, port, grpc_port, cprofile)
        env = dict(os.environ)
        if process == "a2ad" and args.a2ad_src is not None:
            env["PYTHONPATH"] = f"{args.a2ad_src}{os.pathsep}{env.get('PYTHONPATH', '')}"
        server = Server(process, argv, port, env)
        server.start()
        servers[process] = (server, grpc_port)
    try:
        for process, (server, grpc_port) in servers.items():
            if process in HTTP_PROCESSES:
                await server.wait_ready()
            if process == "a2ad" or process.endswith("-grpc"):
                await wait_grpc(server, grpc_port)
    except BaseException:
        stop_servers([s for s, _ in servers.values()])
        raise
    targets = []
    for name in names:
        server, grpc_port = servers[process_of(name)]
        targets.append(Target(name, server, grpc_port if name.endswith("-grpc") else 0))
    return targets


def stop_servers(servers: list[Server]) -> None:
    for server in servers:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGINT)  # a graceful end: cProfile writes its file
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.proc.wait(20)
        server.stop()


# --------------------------------------------------------------------------- gRPC client


def message(text: str) -> Any:
    return a2a_pb2.Message(
        message_id=f"bench-{load.RUN}-g{next(IDS)}",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
    )


SEND_AT_ONCE = a2a_pb2.SendMessageConfiguration(return_immediately=True)


def send_request(text: str, *, immediately: bool = False) -> Any:
    if immediately:
        return a2a_pb2.SendMessageRequest(message=message(text), configuration=SEND_AT_ONCE)
    return a2a_pb2.SendMessageRequest(message=message(text))


def failure(exc: grpc.aio.AioRpcError) -> str:
    return f"{exc.code().name}: {exc.details()}"


class Operation(load.Workload):
    """One operation at one concurrency: load.py's workload for a JSON-RPC target
    (``http``), and the same operation over gRPC (``grpc_worker``)."""

    def __init__(self, name: str, concurrency: int, http: load.Workload) -> None:
        self.name = f"{name}-c{concurrency}"
        self.concurrency = concurrency
        self.http = http
        self.rate_unit, self.lat_label = http.rate_unit, http.lat_label
        self.extra_label = http.extra_label

    async def grpc_worker(self, stub: Any, target: Target, end: float, w: Window) -> None:
        raise NotImplementedError


class Send(Operation):
    async def grpc_worker(self, stub: Any, target: Target, end: float, w: Window) -> None:
        lat = w.lat
        while True:
            request = send_request("hello")
            t0 = perf()
            if t0 >= end:
                return
            try:
                reply = await stub.SendMessage(request, metadata=METADATA)
            except grpc.aio.AioRpcError as exc:
                w.fail(failure(exc))
                continue
            if reply.task.status.state == COMPLETED:
                lat.append(perf() - t0)
                w.ops += 1
                w.nbytes += reply.ByteSize()
            else:
                w.fail(str(reply))


class Get(Operation):
    async def grpc_worker(self, stub: Any, target: Target, end: float, w: Window) -> None:
        assert target.state is not None
        ids, lat = target.state.ids, w.lat
        while True:
            request = a2a_pb2.GetTaskRequest(id=random.choice(ids))
            t0 = perf()
            if t0 >= end:
                return
            try:
                task = await stub.GetTask(request, metadata=METADATA)
            except grpc.aio.AioRpcError as exc:
                w.fail(failure(exc))
                continue
            if task.status.state == COMPLETED:
                lat.append(perf() - t0)
                w.ops += 1
                w.nbytes += task.ByteSize()
            else:
                w.fail(str(task))


def final_state(event: Any) -> int:
    kind = event.WhichOneof("payload")
    if kind == "status_update":
        return int(event.status_update.status.state)
    if kind == "task":
        return int(event.task.status.state)
    return 0


class Stream(Operation):
    async def grpc_worker(self, stub: Any, target: Target, end: float, w: Window) -> None:
        while True:
            request = send_request("hello")
            t0 = perf()
            if t0 >= end:
                return
            events, first, nbytes, last = 0, 0.0, 0, None
            try:
                async for event in stub.SendStreamingMessage(request, metadata=METADATA):
                    if not events:
                        first = perf()
                    events += 1
                    nbytes += event.ByteSize()
                    last = event
            except grpc.aio.AioRpcError as exc:
                w.fail(failure(exc))
                continue
            if events >= 2 and last is not None and final_state(last) == COMPLETED:
                w.lat.append(perf() - t0)
                w.extra.append(first - t0)
                w.ops += 1
                w.nbytes += nbytes
            else:
                w.fail(f"{events} events, the last {last}")


class Cancel(Operation):
    def __init__(self, name: str, concurrency: int, http: load.Cancel) -> None:
        super().__init__(name, concurrency, http)
        self.http: load.Cancel = http
        self.canceled: dict[str, list[str]] = {}

    async def grpc_worker(self, stub: Any, target: Target, end: float, w: Window) -> None:
        canceled = self.canceled.setdefault(target.name, [])
        while True:
            request = send_request("sleep:30 cancel me", immediately=True)
            t0 = perf()
            if t0 >= end:
                return
            try:
                sent = await stub.SendMessage(request, metadata=METADATA)
                task_id = sent.task.id
                t1 = perf()
                task = await stub.CancelTask(
                    a2a_pb2.CancelTaskRequest(id=task_id), metadata=METADATA
                )
                polls = 0
                while task.status.state != CANCELED and polls <= 2000:
                    polls += 1
                    await asyncio.sleep(0.002)
                    task = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA)
            except grpc.aio.AioRpcError as exc:
                w.fail(failure(exc))
                continue
            t2 = perf()
            if task.status.state == CANCELED:
                w.lat.append(t2 - t1)
                w.extra.append(t2 - t0)
                w.ops += 1
                w.nbytes += task.ByteSize()
                if len(canceled) < 200:
                    canceled.append(task_id)
            else:
                w.fail(str(task))


def operations(wanted: list[str], concurrencies: list[int]) -> list[Operation]:
    out: list[Operation] = []
    for name in wanted:
        for c in concurrencies:
            if name == "send":
                out.append(Send(name, c, load.Send(f"send-c{c}", c)))
            elif name == "get":
                out.append(Get(name, c, load.Get(f"get-c{c}", c)))
            elif name == "stream":
                out.append(Stream(name, c, load.Stream(f"stream-c{c}", c)))
            elif name == "cancel":
                http = load.Cancel()
                http.concurrency = c
                out.append(Cancel(name, c, http))
    return out


async def run_window(target: Target, op: Operation, seconds: float) -> Window:
    """load.py's window, over gRPC or JSON-RPC as the target is."""
    server = target.server
    if not target.grpc_port:
        assert target.state is not None
        w = await load.run_window(server, op.http, target.state, seconds)
        w.server = target.name
        return w
    channels = [
        grpc.aio.insecure_channel(f"127.0.0.1:{target.grpc_port}", options=CHANNEL_OPTIONS)
        for _ in range(op.concurrency)
    ]
    try:
        await asyncio.gather(*(c.channel_ready() for c in channels))
        stubs = [a2a_pb2_grpc.A2AServiceStub(c) for c in channels]
        return await load.measure_window(
            server,
            target.name,
            lambda end, w: [op.grpc_worker(s, target, end, w) for s in stubs],
            seconds,
        )
    finally:
        await asyncio.gather(*(c.close() for c in channels))


async def grpc_prefill(target: Target, n: int) -> State:
    """``n`` completed tasks sent over gRPC (32 at a time); their ids."""
    ids: list[str] = []
    left = iter(range(n))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{target.grpc_port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)

        async def worker() -> None:
            for _ in left:
                reply = await stub.SendMessage(send_request("hello"), metadata=METADATA)
                if reply.task.status.state != COMPLETED:
                    raise RuntimeError(f"{target.name}: prefill's send answered {reply}")
                ids.append(reply.task.id)

        t0 = perf()
        await asyncio.gather(*(worker() for _ in range(32)))
    print(f"  prefilled {target.name}: {n} tasks in {perf() - t0:.1f} s")
    return State(ids=ids)


async def verify_canceled(targets: list[Target], op: Cancel, rows: dict[str, Any]) -> None:
    """The tasks CancelTask reported canceled still read canceled afterwards."""
    for t in targets:
        if t.name.startswith("bare"):
            rows[t.name]["recheck"] = "n/a (canned answers)"
            continue
        # load.py's Cancel keys its tasks by process, which is a JSON-RPC target's name.
        ids = (op.canceled if t.grpc_port else op.http.canceled).get(t.name, [])[:50]
        bad = 0
        if t.grpc_port:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{t.grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                for tid in ids:
                    task = await stub.GetTask(a2a_pb2.GetTaskRequest(id=tid), metadata=METADATA)
                    bad += task.status.state != CANCELED
        else:
            conn = await load.connect(t.server.port)
            try:
                for tid in ids:
                    status, body = await conn.request(
                        load.post(t.server.port, load.rpc("GetTask", {"id": tid}))
                    )
                    bad += status != 200 or b"TASK_STATE_CANCELED" not in body
            finally:
                conn.close()
        rows[t.name]["recheck"] = f"{len(ids) - bad}/{len(ids)} still canceled"


# --------------------------------------------------------------------------- run


async def main(args: argparse.Namespace) -> None:
    report: dict[str, Any] = {
        "bench": "grpc_load",
        "commit": load.git("rev-parse", "--short", "HEAD"),
        "a2ad_from": args.a2ad_from,
        "src_dirty": bool(load.git("status", "--porcelain", "--", "src")),
        "machine": load.machine(),
        "settings": {
            k: getattr(args, k)
            for k in ("targets", "workloads", "concurrency", "rounds", "seconds", "warm", "prefill")
        },
        "workloads": {},
    }
    import importlib.metadata as md

    report["machine"]["packages"].update({pkg: md.version(pkg) for pkg in ("grpcio", "protobuf")})
    print(
        f"a2ad gRPC load benchmark: {', '.join(args.targets)}; {args.rounds} rounds × "
        f"{args.seconds} s per operation and target; a2ad from {args.a2ad_from}"
    )
    t_run = perf()
    targets = await start_targets(args.targets, args)
    try:
        procs = {t.server.name: t.server.pid for t in targets}
        print(f"servers up: {', '.join(f'{n} (pid {p})' for n, p in procs.items())}")
        states: dict[str, State] = {}
        for t in targets:  # a2ad's two bindings read the tasks one of them sent
            key = t.server.name
            if key not in states:
                if "get" not in args.workloads:
                    states[key] = State()
                elif t.name in ("bare-grpc", "bare"):
                    states[key] = State(ids=["canned"])  # any id: the answer is canned
                elif t.grpc_port and t.server.name != "a2ad":
                    states[key] = await grpc_prefill(t, args.prefill)
                else:
                    states[key] = await load.prefill(t.server, args.prefill)
            t.state = states[key]
        for op in operations(args.workloads, args.concurrency):
            t0 = perf()
            for t in targets:  # warm-up, not recorded
                await run_window(t, op, args.warm)
            windows: dict[str, list[Window]] = {t.name: [] for t in targets}
            for r in range(args.rounds):
                k = r % len(targets)
                for t in targets[k:] + targets[:k]:
                    windows[t.name].append(await run_window(t, op, args.seconds))
            rows = {name: load.summarize(ws) for name, ws in windows.items()}
            load.add_ratios(rows, windows, args.baseline)
            if isinstance(op, Cancel):
                await verify_canceled(targets, op, rows)
            report["workloads"][op.name] = rows
            load.print_workload(op, rows, perf() - t0, args.baseline)
    finally:
        stop_servers(list({t.server.name: t.server for t in targets}.values()))
    report["seconds"] = round(perf() - t_run, 1)
    print(f"total {report['seconds']} s")
    print(json.dumps(report, separators=(",", ":")))
    if args.cprofile:
        print_profile(args.cprofile, args.top)


def print_profile(path: str, top: int) -> None:
    """The profile's top functions by their own time, and by time with callees."""
    for _ in range(50):  # the server writes it as it exits
        if Path(path).exists():
            break
        time.sleep(0.1)
    stats = pstats.Stats(path)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short windows (about a minute)")
    p.add_argument(
        "--targets",
        default=",".join(DEFAULT_TARGETS),
        help=f"comma-separated, of {', '.join(TARGETS)}",
    )
    p.add_argument("--workloads", default=",".join(OPERATIONS), help="comma-separated subset")
    p.add_argument("--concurrency", default="1,32", help="clients at once, comma-separated")
    p.add_argument("--rounds", type=int, help="windows per target and operation (3; quick 2)")
    p.add_argument("--seconds", type=float, help="length of a window (2; quick 0.4)")
    p.add_argument("--warm", type=float, help="unrecorded warm-up window (0.5; quick 0.1)")
    p.add_argument("--prefill", type=int, help="tasks before get (2000; quick 300)")
    p.add_argument("--baseline", default="a2ad-grpc", help="the target ratios are taken against")
    p.add_argument(
        "--a2ad-commit",
        metavar="REF",
        help="run a2ad from this commit (git archive into a temp dir), not the working tree",
    )
    p.add_argument("--cprofile", metavar="FILE", help="run a2ad under cProfile, its stats here")
    p.add_argument("--top", type=int, default=25, help="functions --cprofile prints")
    args = p.parse_args()
    defaults = {
        "rounds": 2 if args.quick else 3,
        "seconds": 0.4 if args.quick else 2.0,
        "warm": 0.1 if args.quick else 0.5,
        "prefill": 300 if args.quick else 2000,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.targets = [t for t in args.targets.split(",") if t]
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    for name in args.targets:
        if name not in TARGETS:
            p.error(f"unknown target {name!r}; pick from {', '.join(TARGETS)}")
    for name in args.workloads:
        if name not in OPERATIONS:
            p.error(f"unknown workload {name!r}; pick from {', '.join(OPERATIONS)}")
    if args.baseline not in args.targets:
        args.baseline = args.targets[0]
    if args.cprofile:
        args.cprofile = str(Path(args.cprofile).resolve())
        Path(args.cprofile).unlink(missing_ok=True)
    return args


def run() -> None:
    args = parse_args()
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})  # before grpc starts its threads: they inherit it
    args.a2ad_src, args.a2ad_from = None, "working tree (editable install)"
    with tempfile.TemporaryDirectory(prefix="a2ad-grpc-load-src-") as tmp:
        if args.a2ad_commit:
            args.a2ad_src, sha = load.extract_src(args.a2ad_commit, Path(tmp) / "a2ad")
            args.a2ad_from = f"commit {sha} (git archive)"
        try:
            uvloop.run(main(args))
        except KeyboardInterrupt:
            sys.exit(130)


if __name__ == "__main__":
    run()
