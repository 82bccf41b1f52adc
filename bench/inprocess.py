"""Instructions per operation of the app ``a2ad serve --store memory`` builds,
driven in-process (no HTTP, no socket, no other process) under callgrind:
for differences below the 1% that two servers of bench/budget.py can differ by.

``a2ad serve``'s own start-up runs (its flags, settings, assembly, the
collector's setting), with uvicorn's server swapped for a driver that calls the
app as ASGI: ``--warm`` sends, then the counter is switched on around ``--count``
operations of one kind, and the instructions a second of an idle spell before
them are subtracted for the loop's wall time (the engine's timers). Runs of one
tree differ by about 0.1%; run one at a time (a second one on the machine moves
the idle figure).

    .venv/bin/python bench/inprocess.py send                 # this tree
    .venv/bin/python bench/inprocess.py get --count 3000
    .venv/bin/python bench/inprocess.py stream               # SendStreamingMessage read to its end
    .venv/bin/python bench/inprocess.py cancel               # a long task's send, then its cancel
    .venv/bin/python bench/inprocess.py send --src /tmp/old/src   # another tree's src/
    A2AD_METRICS=false .venv/bin/python bench/inprocess.py send   # settings pass through
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from asgi_call import call, rpc, send_body, stream_body  # beside this script

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("send", "get", "stream", "cancel", "half")  # half: cancel's send alone


async def cancel(app: Any, n: int, *, then_cancel: bool = True) -> None:
    """bench/budget.py's cancel: a long task's send returning at once, then its
    CancelTask (with ``then_cancel`` False, the send alone)."""
    sent = json.loads(await call(app, send_body(n, "sleep:60 cancel me", returnImmediately=True)))
    if then_cancel:
        task_id = sent["result"]["task"]["id"]
        answer = await call(app, rpc("CancelTask", {"id": task_id}))
        if b"TASK_STATE_CANCELED" not in answer:
            raise RuntimeError(f"CancelTask answered {answer[:300]!r}")


async def control(*args: str) -> None:
    """callgrind_control on this process, waited for on the loop (which must
    keep running for valgrind to take the command)."""
    done = subprocess.Popen(
        ["callgrind_control", *args, str(os.getpid())], stdout=subprocess.DEVNULL
    )
    while done.poll() is None:
        await asyncio.sleep(0.02)


async def drive(app: Any, op: str, count: int, warm: int, out: Path) -> None:
    await app.lifetime.start()
    first = json.loads(await call(app, send_body(-1)))
    get = rpc("GetTask", {"id": first["result"]["task"]["id"]})
    for n in range(warm):
        await call(app, send_body(-2 - n))
    await control("--instr=on")
    await control("--zero")
    started = time.monotonic()
    await asyncio.sleep(3)
    idle_seconds = time.monotonic() - started
    await control("--dump=idle")
    await control("--zero")
    started = time.monotonic()
    for n in range(count):
        if op == "send":
            await call(app, send_body(n))
        elif op == "get":
            await call(app, get)
        elif op == "stream":
            streamed = await call(app, stream_body(n))
            if b"TASK_STATE_COMPLETED" not in streamed:
                raise RuntimeError(f"the stream did not complete: {streamed[-300:]!r}")
        else:
            await cancel(app, n, then_cancel=op == "cancel")
    loop_seconds = time.monotonic() - started
    await control("--dump=loop")
    out.write_text(json.dumps({"idle": idle_seconds, "loop": loop_seconds}))
    await app.aclose()


def child(op: str, count: int, warm: int, out: Path) -> None:
    """``a2ad serve``, its uvicorn server swapped for ``drive``."""
    import a2ad.cli.serve as serve_module
    from a2ad.cli import main
    from a2ad.cli.collector import settle_collector

    class Driver:
        def __init__(self, config: Any, application: Any, banner: Any, *_: Any, **__: Any) -> None:
            self.application = application
            self.startup_failed = False

        def run(self, sockets: list[Any]) -> None:
            for sock in sockets:
                sock.close()
            settle_collector()  # as the server does once up
            asyncio.run(drive(self.application, op, count, warm, out))

    serve_module._Server = Driver  # type: ignore[misc,assignment]
    sys.argv = ["a2ad", "serve", "--store", "memory", "--port", "0", "--log-level", "warning"]
    main()


def measure(op: str, count: int, warm: int, src: str | None) -> float:
    with tempfile.TemporaryDirectory(prefix="a2ad-inprocess-") as tmp:
        out = Path(tmp) / "times.json"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        if src:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={tmp}/cg",
            sys.executable,
            __file__,
            op,
            "--count",
            str(count),
            "--warm",
            str(warm),
            "--child",
            str(out),
        ]
        subprocess.run(argv, env=env, check=True, capture_output=True)
        dumps = sorted(Path(tmp).glob("cg.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        idle, loop = (_total(path) for path in dumps[-2:])
        times = json.loads(out.read_text())
        return (loop - idle / times["idle"] * times["loop"]) / count


def _total(path: Path) -> int:
    found = re.search(r"^totals:\s+(\d+)", path.read_text(errors="replace"), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{path}: no totals line")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=OPERATIONS)
    parser.add_argument("--count", type=int, default=1000, help="operations counted")
    parser.add_argument("--warm", type=int, default=50, help="sends before counting")
    parser.add_argument("--src", help="run a2ad from this src/ (PYTHONPATH)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.op, args.count, args.warm, args.child)
        return 0
    per_op = measure(args.op, args.count, args.warm, args.src)
    print(f"{args.op}: {per_op:,.0f} instructions each ({args.src or 'this tree'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
