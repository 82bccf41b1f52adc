"""What a call of a2ad's client costs the calling process, in instructions
(callgrind): the call a fronted turn makes upstream, and what ``a2ad send``, the
lab's orchestrator and any Python caller make.

A client process (under callgrind) runs ``Client.stream("hello")`` read to its
end (or ``Client.send``) N1 and then, in a second run, N2 times against one
``a2ad serve --store memory`` (not under callgrind); the difference of the two
totals over N2 - N1 calls is a call's cost, start-up and warm-up cancelling out.
With ``--against REV`` the same is counted for that commit's client (its
``src/``, from ``git archive``) in the same run, and the change printed.

    .venv/bin/python bench/client_cost.py                    # stream and send, this tree
    .venv/bin/python bench/client_cost.py --against HEAD~1   # beside another commit
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from load import ROOT, extract_src, free_port  # beside this script

CALLS = """
import asyncio, sys
from a2ad.client import Client

async def main(url: str, n: int, kind: str) -> None:
    async with Client(url) as client:
        await client.card()
        for _ in range(20):  # the connection, the decoders, the caches: warm
            async for _ in client.stream("warm"):
                pass
        for _ in range(n):
            if kind == "stream":
                async for _ in client.stream("hello"):
                    pass
            else:
                await client.send("hello")

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
"""


def counted(url: str, calls: int, kind: str, src: Path | None, out: Path) -> int:
    """The instructions of a client process making ``calls`` calls."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            CALLS,
            url,
            str(calls),
            kind,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"the client run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_call(url: str, kind: str, low: int, high: int, src: Path | None, work: Path) -> float:
    totals = [counted(url, n, kind, src, work / f"cg.{kind}.{n}") for n in (low, high)]
    return (totals[1] - totals[0]) / (high - low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="stream,send", help="stream, send or both")
    parser.add_argument("--low", type=int, default=50, help="calls of the first run")
    parser.add_argument("--high", type=int, default=250, help="calls of the second run")
    parser.add_argument("--against", metavar="REV", help="also count this commit's client")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed")
    work = Path(tempfile.mkdtemp(prefix="a2ad-client-cost-"))
    port = free_port()
    serve = ["serve", "--port", str(port), "--store", "memory", "--max-tasks", "1000000"]
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "a2ad"), *serve, "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("a2ad serve did not start")
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        trees: list[tuple[str, Path | None]] = []
        if args.against:
            src, sha = extract_src(args.against, work / "before")
            trees.append((sha, src))
        trees.append(("this tree", ROOT / "src"))
        for kind in args.kinds.split(","):
            figures = []
            for name, src in trees:
                cost = per_call(url, kind, args.low, args.high, src, work)
                figures.append(cost)
                print(f"{kind:6} {name:>10}: {cost:>12,.0f} instructions a call", flush=True)
            if len(figures) == 2:
                print(f"{kind:6} change: {(figures[1] / figures[0] - 1) * 100:+.1f}%")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
