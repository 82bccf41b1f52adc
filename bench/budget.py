"""The cost budget (issue 25): instructions per operation of ``a2ad serve``,
counted by valgrind's callgrind, against the baseline committed in
``bench/budget.toml``. ``.ci/run`` runs it; an operation more than its
tolerance (3%) over its baseline fails it, naming the operation and figures.

    .venv/bin/python bench/budget.py              # measure and compare (exit 1 when over)
    .venv/bin/python bench/budget.py --measure    # measure and print, compare nothing
    .venv/bin/python bench/budget.py --against 6b601f5   # this tree beside that commit
    .venv/bin/python bench/budget.py --floor     # and the bare ASGI app (the floor) beside it

The server runs under callgrind with instrumentation off while it starts (so the
start-up is not counted, and is quicker), on the memory store, one process, the
built-in echo agent, default logging (the access log on errors). A client outside
valgrind drives it over HTTP, A2A 1.0 JSON-RPC, one request at a time on one
keep-alive connection. For each operation it runs a warm-up, then five slices of
``--count``/5 operations: each zeroes the counters (``callgrind_control --zero``),
runs its operations and dumps them (``callgrind_control --dump``). A slice's total,
less what the idle server spends over the slice's wall time (measured first, about
half a million instructions a second: its timers), divided by its operations, is its
figure; the median of the five is the operation's (a rare pause, such as a full
collection of the heap, lands in one slice and is left out).

``--floor`` counts the same operations against bench/peers/bare_asgi.py, a bare
ASGI app on the same uvicorn answering with canned bodies of the same size (the
floor bench/load.py measures CPU against), and prints what a2ad spends beside it.

The operations: ``send`` (a blocking SendMessage), ``get`` (GetTask of a completed
task), ``stream`` (SendStreamingMessage read to its end: the task, working, the
artifact, completed) and ``cancel`` (a SendMessage of a long task that returns
at once, then its CancelTask).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "bench" / "budget.toml"
OPERATIONS = ("send", "get", "stream", "cancel")
IDS = count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def user_message(text: str) -> dict[str, object]:
    return {"messageId": f"budget-{next(IDS)}", "role": "ROLE_USER", "parts": [{"text": text}]}


class Client:
    """One keep-alive connection speaking A2A 1.0 JSON-RPC."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method: str, params: dict[str, object], *, stream: bool = False) -> bytes:
        n = next(IDS)
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        if stream:
            headers["Accept"] = "text/event-stream"
        self.conn.request("POST", "/", body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200 or b'"error"' in data[:200]:
            raise RuntimeError(f"{method} answered {response.status}: {data[:300]!r}")
        return data

    def send(self, text: str, **configuration: object) -> dict[str, Any]:
        params: dict[str, object] = {"message": user_message(text)}
        if configuration:
            params["configuration"] = configuration
        task: dict[str, Any] = json.loads(self.call("SendMessage", params))["result"]["task"]
        return task


def operations(client: Client) -> dict[str, Callable[[], None]]:
    done = client.send("a task to read")
    if done["status"]["state"] != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"the echo agent answered {done}")

    def send() -> None:
        client.send("hello")

    def get() -> None:
        client.call("GetTask", {"id": done["id"]})

    def stream() -> None:
        data = client.call("SendStreamingMessage", {"message": user_message("hi")}, stream=True)
        if b"TASK_STATE_COMPLETED" not in data:
            raise RuntimeError(f"the stream did not complete: {data[-300:]!r}")

    def cancel() -> None:
        task = client.send("sleep:60 cancel me", returnImmediately=True)
        answer = client.call("CancelTask", {"id": task["id"]})
        if b"TASK_STATE_CANCELED" not in answer:
            raise RuntimeError(f"CancelTask answered {answer[:300]!r}")

    return {"send": send, "get": get, "stream": stream, "cancel": cancel}


class Counted:
    """``a2ad serve`` under callgrind, instrumentation switched on by the caller."""

    def __init__(self, out: Path, src: Path | None, *, floor: bool = False) -> None:
        self.out = out
        self.port = free_port()
        self.log = open(out / "server.log", "wb")  # closed in stop()
        served = (
            ["-m", "uvicorn", "--app-dir", str(ROOT / "bench" / "peers"), "bare_asgi:app"]
            if floor
            else ["-c", "from a2ad.cli import main; main()", "serve", "--store", "memory"]
        )
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}/callgrind.out",
            sys.executable,
            *served,
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        if src is not None:  # another commit's a2ad, ahead of this checkout's
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the server did not listen in {timeout:.0f} s:\n{self.tail()}")

    def control(self, *args: str) -> None:
        cmd = ["callgrind_control", *args, str(self.proc.pid)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}{done.stderr}")

    def dump(self, name: str) -> int:
        """Dump the counters since the last zero, and their instruction total."""
        before = set(self.out.glob("callgrind.out*"))
        self.control(f"--dump={name}")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            for path in set(self.out.glob("callgrind.out*")) - before:
                total = dump_total(path)
                if total is not None:
                    return total
            time.sleep(0.05)
        raise RuntimeError(f"callgrind wrote no dump for {name}")

    def tail(self) -> str:
        self.log.flush()
        return (self.out / "server.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def dump_total(path: Path) -> int | None:
    """The instruction total a complete callgrind dump ends with (None: not yet whole)."""
    text = path.read_text(errors="replace")
    found = re.search(r"^totals:\s+(\d+)", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def idle_rate(server: Counted) -> float:
    """Instructions a second the server spends with nothing asked (its timers: the
    engine's upkeep round, uvicorn's tick), after a second to settle."""
    time.sleep(1)
    server.control("--zero")
    started = time.monotonic()
    time.sleep(2)
    return server.dump("idle") / (time.monotonic() - started)


def count_slices(server: Counted, op: Callable[[], None], n: int, slices: int, idle: float) -> int:
    """The median over ``slices`` runs of ``n`` operations of the instructions per
    operation, less the idle cost of each run's wall time: a rare pause (a full
    collection of the heap) lands in one slice and is not the figure."""
    per_op = []
    for i in range(slices):
        server.control("--zero")
        started = time.monotonic()
        for _ in range(n):
            op()
        seconds = time.monotonic() - started
        total = server.dump(f"slice{i}")
        per_op.append(round((total - idle * seconds) / n))
    return int(statistics.median(per_op))


def measure(
    counts: int, warm: int, src: Path | None = None, slices: int = 5, *, floor: bool = False
) -> dict[str, int]:
    with tempfile.TemporaryDirectory(prefix="a2ad-budget-") as tmp:
        server = Counted(Path(tmp), src, floor=floor)
        try:
            server.wait_ready(timeout=120)
            client = Client(server.port)
            ops = operations(client)
            server.control("--instr=on")
            idle = idle_rate(server)
            print(f"  idle: {idle:,.0f} instructions a second", flush=True)
            figures = {}
            for name in OPERATIONS:
                for _ in range(warm):
                    ops[name]()
                started = time.monotonic()
                figures[name] = count_slices(server, ops[name], counts // slices, slices, idle)
                seconds = time.monotonic() - started
                said = f"{figures[name]:,} instructions each ({seconds:.1f} s)"
                print(f"  {name}: {said}", flush=True)
            return figures
        except BaseException:
            print(server.tail(), file=sys.stderr)
            raise
        finally:
            server.stop()


def compare(commit: str, figures: dict[str, int], counts: int, warm: int) -> None:
    from load import extract_src  # bench/load.py, beside this script

    with tempfile.TemporaryDirectory(prefix="a2ad-budget-src-") as tmp:
        src, sha = extract_src(commit, Path(tmp) / "a2ad")
        print(f"commit {sha}:", flush=True)
        theirs = measure(counts, warm, src)
    print(f"{'operation':<10} {sha:>12} {'this tree':>12} {'change':>8}")
    for name in OPERATIONS:
        change = (figures[name] - theirs[name]) / theirs[name] * 100
        print(f"{name:<10} {theirs[name]:>12,} {figures[name]:>12,} {change:>+7.1f}%")


def beside_floor(figures: dict[str, int], counts: int, warm: int) -> None:
    print("the floor (bench/peers/bare_asgi.py):", flush=True)
    floor = measure(counts, warm, floor=True)
    print(f"{'operation':<10} {'floor':>12} {'this tree':>12} {'a2ad ÷ floor':>13}")
    for name in OPERATIONS:
        ratio = figures[name] / floor[name]
        print(f"{name:<10} {floor[name]:>12,} {figures[name]:>12,} {ratio:>12.2f}x")


def over_budget(figures: dict[str, int], baseline: dict[str, dict[str, object]]) -> list[str]:
    """A line per operation over its baseline by more than its tolerance."""
    tolerance = float(str(baseline.get("tolerance", {}).get("percent", 3)))
    lines = []
    for name in OPERATIONS:
        entry = baseline.get(name)
        if entry is None:
            lines.append(f"{name}: no baseline figure; measured {figures[name]:,}")
            continue
        allowed = int(str(entry["instructions"]))
        change = (figures[name] - allowed) / allowed * 100
        if change > tolerance:
            lines.append(
                f"{name}: {figures[name]:,} instructions per operation, {change:+.1f}% over "
                f"the baseline {allowed:,} (tolerance {tolerance:g}%)"
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="operations counted per kind")
    parser.add_argument("--warm", type=int, default=30, help="uncounted operations first")
    parser.add_argument("--measure", action="store_true", help="measure only; compare nothing")
    parser.add_argument(
        "--against",
        metavar="COMMIT",
        help="also count that commit's a2ad (its src/, on this venv) and print both",
    )
    parser.add_argument(
        "--floor", action="store_true", help="also count the bare ASGI app and print both"
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="the figures to meet")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench/budget.py needs valgrind (callgrind_control included)", file=sys.stderr)
        return 2
    started = time.monotonic()
    print(f"counting {args.count} of each operation under callgrind", flush=True)
    figures = measure(args.count, args.warm)
    if args.against:
        compare(args.against, figures, args.count, args.warm)
    if args.floor:
        beside_floor(figures, args.count, args.warm)
    print(f"took {time.monotonic() - started:.0f} s")
    print(json.dumps(figures))
    if args.measure or args.against or args.floor:
        return 0
    baseline = tomllib.loads(args.baseline.read_text(encoding="utf-8"))
    over = over_budget(figures, baseline)
    for line in over:
        print(f"over budget: {line}", file=sys.stderr)
    if not over:
        print("every operation is within its budget")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
