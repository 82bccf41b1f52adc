"""Flame graphs of ``a2ad serve`` per operation (issue 25, item 2): where a send,
a get, a stream and a cancel spend the server's CPU.

    .venv/bin/python -m pip install py-spy        # once: the sampler (not a dependency)
    .venv/bin/python bench/flame.py               # docs/images/flame-{send,get,stream,cancel}.svg
    .venv/bin/python bench/flame.py --ops get --seconds 20 --out /tmp
    .venv/bin/python bench/flame.py --raw --out /tmp   # folded stacks, for reading as text

The server runs as ``bench/budget.py`` counts it (memory store, one process, the
echo agent, default logging) but outside valgrind; a client in this process sends
one operation after another on one keep-alive connection (A2A 1.0 JSON-RPC) while
py-spy samples the server's Python stacks (``--rate`` a second, only while it is
not idle), then writes an SVG flame graph: each box a function, its width the
share of the samples in which it ran or called what ran. The graphs say where
time goes; the instruction counts of ``bench/budget.py`` say by how much a change
moved it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from budget import OPERATIONS, ROOT, Client, free_port, operations  # beside this script


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("a2ad serve exited before it listened")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"a2ad serve did not listen in {timeout:.0f} s")


def record(
    py_spy: str, pid: int, op: str, run: object, seconds: float, rate: int, out: Path, form: str
) -> None:
    """Sample ``pid`` for ``seconds`` while ``run`` is called in a loop."""
    done = threading.Event()

    def drive() -> None:
        while not done.is_set():
            run()  # type: ignore[operator]

    driver = threading.Thread(target=drive, name=f"drive-{op}")
    driver.start()
    path = out / f"flame-{op}.{'svg' if form == 'flamegraph' else 'txt'}"
    try:
        subprocess.run(
            [
                py_spy,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--duration",
                str(int(seconds)),
                "--format",
                form,
                "--function",  # a box per function, not per line
                "--output",
                str(path),
                "--nonblocking",
            ],
            check=True,
            capture_output=True,
        )
    finally:
        done.set()
        driver.join()
    print(f"  {op}: {path}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default=",".join(OPERATIONS), help="operations, comma-separated")
    parser.add_argument("--seconds", type=float, default=10, help="sampling time per operation")
    parser.add_argument("--rate", type=int, default=500, help="samples a second")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where to write")
    parser.add_argument(
        "--raw", action="store_true", help="folded stacks (flame-OP.txt) instead of SVG graphs"
    )
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        print("bench/flame.py needs py-spy: pip install py-spy", file=sys.stderr)
        return 2
    port = free_port()
    argv = [sys.executable, "-c", "from a2ad.cli import main; main()", "serve", "--store", "memory"]
    argv += ["--port", str(port), "--log-level", "warning"]
    quiet, env = subprocess.DEVNULL, {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(argv, stdout=quiet, stderr=quiet, env=env)
    try:
        wait_listening(port, proc)
        client = Client(port)
        args.out.mkdir(parents=True, exist_ok=True)
        for op in args.ops.split(","):
            ops = operations(client)  # afresh: the store evicts the task get reads past 10,000
            for _ in range(200):
                ops[op]()
            form = "raw" if args.raw else "flamegraph"
            record(py_spy, proc.pid, op, ops[op], args.seconds, args.rate, args.out, form)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
