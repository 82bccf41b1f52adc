"""Python bytecodes executed per request, by function: where an operation's
interpreted work is, exactly (a count, not a sample or a time), in seconds.

    .venv/bin/python bench/opcodes.py get                        # this tree, by file
    .venv/bin/python bench/opcodes.py cancel --by function --top 40
    .venv/bin/python bench/opcodes.py get --by line --top 80    # function:line
    PYTHONPATH=/tmp/old/src .venv/bin/python bench/opcodes.py get --old   # e.g. 6b601f5

``a2ad serve --store memory``'s app (as bench/inprocess.py builds it; with
``--old``, a tree from before the ``a2ad.cli`` package, ``create_app`` over a
memory store with the echo agent) is driven in-process; every bytecode of every
frame is counted while one request is served, then the loop's next two turns
(what the request left scheduled). ``cancel`` counts the CancelTask alone, sent
once the long task it ends is working; ``half`` counts that long task's send, until
its turn is working. Tracing slows Python about fiftyfold, so
``--count`` is small. Two trees' counts side by side say which code grew; a
bytecode costs about 70 instructions on average here, so callgrind
(bench/inprocess.py) still says what a change saves.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from asgi_call import call, rpc, send_body, stream_body

OPERATIONS = ("send", "get", "stream", "cancel", "half")  # half: cancel's send alone


class Counter:
    """Bytecodes per (file, function) while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return self._opcode

    def _opcode(self, frame: FrameType, event: str, arg: Any) -> Any:
        if self.on and event == "opcode":
            code = frame.f_code
            where = f"{code.co_name}:{frame.f_lineno}" if ARGS.by == "line" else code.co_name
            self.counts[code.co_filename, where] += 1
        return self._opcode


async def drive(app: Any, op: str, count: int, counter: Counter) -> None:
    first = json.loads(await call(app, send_body(-1)))
    get = rpc("GetTask", {"id": first["result"]["task"]["id"]})
    for n in range(50):
        await call(app, send_body(-2 - n))
    sys.settrace(counter.trace)  # from here, so that the turns' frames are traced too
    try:
        for n in range(count):
            if op == "half":  # the long task's send, counted; its cancel not
                long = send_body(n, "sleep:60 cancel me", returnImmediately=True)
                counter.on = True
                sent = json.loads(await call(app, long))
                await asyncio.sleep(0.005)  # its turn has stored WORKING
                counter.on = False
                await call(app, rpc("CancelTask", {"id": sent["result"]["task"]["id"]}))
                continue
            if op == "cancel":
                long = send_body(n, "sleep:60 cancel me", returnImmediately=True)
                sent = json.loads(await call(app, long))
                body = rpc("CancelTask", {"id": sent["result"]["task"]["id"]})
                await asyncio.sleep(0.005)  # its turn has stored WORKING
            else:
                body = {"send": send_body(n), "get": get, "stream": stream_body(n)}[op]
            counter.on = True
            await call(app, body)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            counter.on = False
    finally:
        sys.settrace(None)


def serve_this_tree(op: str, count: int, counter: Counter) -> None:
    """``a2ad serve``'s start-up, its server swapped for the driver."""
    import inprocess

    async def driven(app: Any, *_: Any) -> None:
        await app.lifetime.start()
        await drive(app, op, count, counter)
        report(counter, op, count)
        await app.aclose()

    inprocess.drive = driven  # type: ignore[assignment]
    inprocess.child(op, count, 0, Path("/dev/null"))


async def serve_old_tree(op: str, count: int, counter: Counter) -> None:
    from a2ad.server.app import create_app, load_agent  # type: ignore[attr-defined]
    from a2ad.store.memory import MemoryStore

    app = create_app(load_agent("echo"), store=MemoryStore())
    await app.engine.start()
    await drive(app, op, count, counter)
    report(counter, op, count)


ARGS = argparse.Namespace()


def report(counter: Counter, op: str, count: int) -> None:
    here = str(Path(__file__).resolve().parent) + "/"
    totals: collections.Counter[str] = collections.Counter()
    for (filename, function), n in counter.counts.items():
        if filename.startswith(here):
            continue  # the driver's own (this script, asgi_call.py)
        short = filename.split("/src/")[-1].split("/python3.11/")[-1]
        totals[short if ARGS.by == "file" else f"{short}:{function}"] += n
    print(f"{op}: {sum(totals.values()) / count:,.0f} bytecodes a request", flush=True)
    for name, n in totals.most_common(ARGS.top):
        print(f"{n / count:9,.1f}  {name}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=OPERATIONS)
    parser.add_argument("--count", type=int, default=300, help="requests counted")
    parser.add_argument("--by", choices=("file", "function", "line"), default="file")
    parser.add_argument("--top", type=int, default=25, help="lines listed")
    parser.add_argument("--old", action="store_true", help="a tree before a2ad.cli (see above)")
    parser.parse_args(namespace=ARGS)
    counter = Counter()
    if ARGS.old:
        asyncio.run(serve_old_tree(ARGS.op, ARGS.count, counter))
    else:
        serve_this_tree(ARGS.op, ARGS.count, counter)
    return 0


if __name__ == "__main__":
    sys.exit(main())
