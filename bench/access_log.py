"""What an access line costs a request: the ASGI app called in-process (no HTTP,
no other process), with the request log observer ``off``, ``errors`` and ``on``,
every access line written to a file as ``a2ad serve`` writes it to stderr.

For each setting it times (process CPU) GetTask on a prefilled memory store and
blocking SendMessage to the echo agent, in rounds that alternate the settings,
and prints the median µs per request of each, and the difference from ``off``.

    .venv/bin/python bench/access_log.py            # about 30 s
    .venv/bin/python bench/access_log.py --rounds 9 --requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

from asgi_call import call, rpc, send_body  # beside this script

from a2ad import create_app
from a2ad.cli.logs import access_fraction, configure_logging
from a2ad.server.access_log import RequestLog
from a2ad.settings import Observability
from a2ad.store.memory import MemoryStore

SETTINGS = ("off", "errors", "on")


async def prefilled_gets(app: Any, prefill: int, requests: int) -> list[bytes]:
    """Send ``prefill`` tasks to ``app``; ``requests`` GetTask bodies cycling over them."""
    ids = []
    for n in range(prefill):
        answer = json.loads(await call(app, send_body(n)))
        ids.append(answer["result"]["task"]["id"])
    return [rpc("GetTask", {"id": ids[n % len(ids)]}) for n in range(requests)]


async def timed_round(app: Any, gets: list[bytes], sends: range) -> tuple[float, float]:
    """Process CPU seconds per request: ``gets`` in turn, then a SendMessage for
    each number of ``sends`` (message ids must not repeat across rounds)."""
    t0 = time.process_time()
    for body in gets:
        await call(app, body)
    t1 = time.process_time()
    for n in sends:
        await call(app, send_body(n))
    t2 = time.process_time()
    return (t1 - t0) / len(gets), (t2 - t1) / len(sends)


async def main(args: argparse.Namespace) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".log") as out:
        configure_logging("warning", access=True, stream=out)  # as `a2ad serve` writes them
        observer = RequestLog(access=None)
        app = create_app(
            store=MemoryStore(max_tasks=1_000_000),
            observability=Observability(observers=(observer,)),
        )
        await app.engine.start()
        try:
            gets = await prefilled_gets(app, args.prefill, args.requests)
            cost: dict[tuple[str, str], list[float]] = {}
            sends = args.requests // 4
            sent = args.prefill
            for round_ in range(args.rounds):
                order = SETTINGS[round_ % 3 :] + SETTINGS[: round_ % 3]
                for setting in order:
                    observer.access = access_fraction(setting)
                    get, send = await timed_round(app, gets, range(sent, sent + sends))
                    sent += sends
                    cost.setdefault(("GetTask", setting), []).append(get)
                    cost.setdefault(("SendMessage", setting), []).append(send)
        finally:
            await app.aclose()
    print("| request | " + " | ".join(f"{s}: µs" for s in SETTINGS) + " | on − off |")
    print("|---|" + "---:|" * (len(SETTINGS) + 1))
    figures: dict[str, dict[str, float]] = {}
    for method in ("GetTask", "SendMessage"):
        med = {s: statistics.median(cost[(method, s)]) * 1e6 for s in SETTINGS}
        figures[method] = {s: round(v, 1) for s, v in med.items()}
        row = " | ".join(f"{med[s]:.1f}" for s in SETTINGS)
        print(f"| {method} | {row} | {med['on'] - med['off']:+.1f} |")
    print(json.dumps({"bench": "access_log", "us_per_request": figures}))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--requests", type=int, default=8000, help="GetTask per round (sends: 1/4)")
    p.add_argument("--prefill", type=int, default=2000)
    asyncio.run(main(p.parse_args()))
