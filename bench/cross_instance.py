"""Cross-instance cancel latency and subscribe lag: two real ``a2ad serve``
processes, A and B, on one PostgreSQL schema (made for the run, dropped after).

    .venv/bin/python bench/cross_instance.py                     # 1,000 trials of each
    .venv/bin/python bench/cross_instance.py --cancels 200 --events 200

Cancel (one trial): A streams a task whose agent hangs (SendStreamingMessage);
once A's stream shows it working, CancelTask goes to B. Beside each such trial, a
local one, CancelTask to A itself: the same writes without crossing instances.
Measured from just before that request: the answer, the agent on A stopped (the
time its CancelledError handler took, printed by A's agent), and A's stream ended
(its final canceled event read and the stream closed). The signal path: B stores
CANCELED, NOTIFY carries "stop T" to A's listener, A cancels the agent; the
store's trigger signals the stored event, A reads it from the log for its stream.

Subscribe (one trial per event): A runs tasks whose agent emits an artifact every
``--every`` seconds, each carrying the time it was emitted; A's own stream and a
SubscribeToTask stream on B read them. Measured per event: B's receipt minus A's
(what crossing instances adds), and B's receipt minus the agent's emit (the
whole path: A's write, the trigger's NOTIFY, B's read of the log, B's SSE).

Times are ``time.monotonic()``, one clock for all processes on the machine
(Linux). Nothing polls: each step waits on a socket. It prints a table, then one
JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx

from a2ad import Agent, TaskContext

ROOT = Path(__file__).resolve().parent.parent
V1 = {"A2A-Version": "1.0"}


class BenchAgent(Agent):
    """``hang``: working, then wait to be cancelled and print when that came.
    ``emit <n> <seconds>``: after half a second (for B to subscribe), n artifacts
    ``seconds`` apart, each with its emit time, then complete."""

    name = "cross-instance-bench"
    description = "Hangs until cancelled, or emits timed artifacts."

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word == "hang":
            await ctx.working("hanging")
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                print(f"cancelled {ctx.task_id} {time.monotonic():.6f}", flush=True)
                raise
        count, _, every = rest.partition(" ")
        await ctx.working("emitting")  # the task is stored: B can subscribe
        await asyncio.sleep(0.5)
        for i in range(int(count)):
            await asyncio.sleep(float(every))
            await ctx.artifact(f"{i} {time.monotonic():.6f}", name=f"e{i}")
        await ctx.complete()


class Instance:
    """One ``a2ad serve`` process, and what its agent prints."""

    def __init__(self, name: str, store: str, key: Path, cpu: int | None) -> None:
        self.name = name
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        command = [
            sys.executable,
            "-m",
            "a2ad.cli",
            "serve",
            "--port",
            str(self.port),
            "--store",
            store,
            "--agent",
            "cross_instance:BenchAgent",
            "--secret-key-file",
            str(key),
            "--shutdown-grace",
            "0",
            "--log-level",
            "warning",
            "--max-connections",
            "5000",
        ]
        if cpu is not None:
            command = ["taskset", "-c", str(cpu), *command]
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT / "bench",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"},
        )
        self.url = f"http://127.0.0.1:{self.port}/"
        self.cancelled: dict[str, float] = {}
        self.lock = threading.Lock()
        self._ready = threading.Event()
        self.output: deque[str] = deque(maxlen=50)  # its last lines, to show if it fails
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(30):
            self.stop()
            raise SystemExit(f"{name} did not start; it printed:\n{''.join(self.output)}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "JSON-RPC:" in line:
                self._ready.set()
            if m := re.match(r"cancelled (\S+) (\S+)", line):
                with self.lock:
                    self.cancelled[m.group(1)] = float(m.group(2))
            else:
                self.output.append(line)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@contextlib.contextmanager
def instances(server: str, cpus: list[int | None]) -> Iterator[tuple[Instance, Instance]]:
    import asyncpg  # type: ignore[import-untyped]

    schema = f"a2ad_bench_x{os.getpid()}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(server)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f"CREATE SCHEMA {schema}"))
    started: list[Instance] = []
    try:
        with tempfile.TemporaryDirectory(prefix="a2ad-cross-") as folder:
            separator = "&" if "?" in server else "?"
            store = f"{server}{separator}search_path={schema}"
            key = Path(folder) / "a2ad.key"
            started.append(Instance("A", store, key, cpus[0]))  # makes the schema and key
            started.append(Instance("B", store, key, cpus[1]))
            yield started[0], started[1]
    finally:
        for one in started:
            one.stop()
        asyncio.run(admin(f"DROP SCHEMA {schema} CASCADE"))


def rpc(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def message(text: str) -> dict[str, Any]:
    return {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }


async def frames(response: httpx.Response) -> AsyncIterator[tuple[float, dict[str, Any]]]:
    """(time read, result) of each SSE event."""
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield time.monotonic(), json.loads(line[5:])["result"]


async def cancel_trial(
    http: httpx.AsyncClient, a: Instance, canceller: Instance
) -> dict[str, float]:
    """A streams a hanging task, ``canceller`` (B, or A itself) cancels it."""
    async with http.stream(
        "POST", a.url, json=rpc("SendStreamingMessage", message("hang")), headers=V1
    ) as r:
        events = frames(r)
        task_id = ""
        async for _, result in events:
            if "task" in result:
                task_id = result["task"]["id"]
            elif (
                "statusUpdate" in result
                and result["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
            ):
                break
        asked = time.monotonic()
        answer = await http.post(canceller.url, json=rpc("CancelTask", {"id": task_id}), headers=V1)
        answered = time.monotonic()
        state = answer.json()["result"]["status"]["state"]
        assert state == "TASK_STATE_CANCELED", answer.text
        last: dict[str, Any] = {}
        async for _, result in events:
            last = result
        ended = time.monotonic()
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED", last
    # The agent's line may be read a moment after the stream ended.
    for _ in range(1000):
        with a.lock:
            stopped = a.cancelled.pop(task_id, None)
        if stopped is not None:
            break
        await asyncio.sleep(0.001)
    else:
        raise AssertionError(f"A never printed that task {task_id}'s agent was cancelled")
    return {
        "answered_ms": (answered - asked) * 1000,
        "agent_stopped_ms": (stopped - asked) * 1000,
        "stream_ended_ms": (ended - asked) * 1000,
    }


async def subscribe_trials(
    http: httpx.AsyncClient, a: Instance, b: Instance, count: int, every: float
) -> list[dict[str, float]]:
    own: dict[int, float] = {}
    emitted: dict[int, float] = {}
    theirs: dict[int, float] = {}
    subscribed = asyncio.Event()

    async def on_a() -> None:
        body = rpc("SendStreamingMessage", message(f"emit {count} {every}"))
        async with http.stream("POST", a.url, json=body, headers=V1) as r:
            async for at, result in frames(r):
                if "task" in result:
                    task_id.set_result(result["task"]["id"])
                    await subscribed.wait()  # the agent's first emit is 0.5 s away
                elif "artifactUpdate" in result:
                    i, stamp = result["artifactUpdate"]["artifact"]["parts"][0]["text"].split()
                    own[int(i)], emitted[int(i)] = at, float(stamp)

    async def on_b() -> None:
        body = rpc("SubscribeToTask", {"id": await task_id})
        async with http.stream("POST", b.url, json=body, headers=V1) as r:
            subscribed.set()
            async for at, result in frames(r):
                if "artifactUpdate" in result:
                    i = int(result["artifactUpdate"]["artifact"]["parts"][0]["text"].split()[0])
                    theirs[i] = at

    task_id: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    await asyncio.gather(on_a(), on_b())
    assert sorted(theirs) == sorted(own) == list(range(count)), (set(own) ^ set(theirs), len(own))
    return [
        {
            "b_after_a_ms": (theirs[i] - own[i]) * 1000,
            "b_after_emit_ms": (theirs[i] - emitted[i]) * 1000,
            "a_after_emit_ms": (own[i] - emitted[i]) * 1000,
        }
        for i in range(count)
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    cut = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "p50": round(cut[49], 2),
        "p99": round(cut[98], 2),
        "max": round(ordered[-1], 2),
        "n": len(ordered),
    }


async def run(a: Instance, b: Instance, cancels: int, events: int, every: float) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(20):  # warm-up: connections, the agents, the store's caches
            await cancel_trial(http, a, b)
        cancel: list[dict[str, float]] = []
        local: list[dict[str, float]] = []
        for _ in range(cancels):  # alternating, so that the machine's noise hits both alike
            cancel.append(await cancel_trial(http, a, b))
            local.append(await cancel_trial(http, a, a))
        per_task = 250
        lags: list[dict[str, float]] = []
        while len(lags) < events:
            lags += await subscribe_trials(http, a, b, min(per_task, events - len(lags)), every)
    figures: dict[str, Any] = {}
    for key in ("answered_ms", "agent_stopped_ms", "stream_ended_ms"):
        figures[f"cancel_{key}"] = percentiles([t[key] for t in cancel])
    for key in ("answered_ms", "agent_stopped_ms", "stream_ended_ms"):
        figures[f"local_cancel_{key}"] = percentiles([t[key] for t in local])
    for key in ("b_after_a_ms", "b_after_emit_ms", "a_after_emit_ms"):
        figures[f"subscribe_{key}"] = percentiles([t[key] for t in lags])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cancels", type=int, default=1000, help="cancel trials")
    parser.add_argument("--events", type=int, default=1000, help="subscribe trials (events)")
    parser.add_argument("--every", type=float, default=0.01, help="seconds between events")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin A to CPU 0 and B to CPU 1 (the bench itself and PostgreSQL float)",
    )
    args = parser.parse_args()
    server = os.environ.get("A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
    cpus: list[int | None] = [0, 1] if args.pin else [None, None]
    with instances(server, cpus) as (a, b):
        figures = asyncio.run(run(a, b, args.cancels, args.events, args.every))
    print("| measure | p50 ms | p99 ms | max ms | n |")
    print("|---|---:|---:|---:|---:|")
    for key, f in figures.items():
        print(f"| {key} | {f['p50']} | {f['p99']} | {f['max']} | {f['n']} |")
    load = os.getloadavg()
    print(
        json.dumps(
            {
                "bench": "cross_instance",
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "loadavg": [round(x, 2) for x in load],
                "args": vars(args),
                "results": figures,
            }
        )
    )


if __name__ == "__main__":
    main()
