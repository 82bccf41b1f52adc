"""What counting costs a request: the ASGI app called in-process (no HTTP, no
other process), one app with metrics on (``create_app(metrics=Metrics())``, as
``a2ad serve`` makes it) beside one with them off, on memory stores alike.

Rounds alternate the two apps; each times (process CPU) GetTask on prefilled
tasks and blocking SendMessage to the echo agent, and the median µs per request
of each is printed with the difference. Steadier than an HTTP benchmark on a
shared machine: no second process, no scheduler between client and server.

    .venv/bin/python bench/metrics_cost.py                 # about 40 s
    .venv/bin/python bench/metrics_cost.py --rounds 12 --requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics

from access_log import prefilled_gets, timed_round  # bench/access_log.py: in-process
from asgi_call import call

from a2ad import create_app
from a2ad.server.metrics import Metrics
from a2ad.settings import Observability
from a2ad.store.memory import MemoryStore

SETTINGS = ("off", "on")


async def main(args: argparse.Namespace) -> None:
    apps = {
        "off": create_app(store=MemoryStore(max_tasks=1_000_000)),
        "on": create_app(
            observability=Observability(metrics=Metrics()), store=MemoryStore(max_tasks=1_000_000)
        ),
    }
    gets: dict[str, list[bytes]] = {}
    for setting, app in apps.items():
        await app.engine.start()
        gets[setting] = await prefilled_gets(app, args.prefill, args.requests)
    cost: dict[tuple[str, str], list[float]] = {}
    sends = args.requests // 4
    sent = args.prefill
    try:
        for round_ in range(args.rounds):
            for setting in SETTINGS if round_ % 2 == 0 else SETTINGS[::-1]:
                get, send = await timed_round(
                    apps[setting], gets[setting], range(sent, sent + sends)
                )
                sent += sends
                cost.setdefault(("GetTask", setting), []).append(get)
                cost.setdefault(("SendMessage", setting), []).append(send)
        scraped = await call(apps["on"], method="GET", path="/metrics")
        assert b"a2ad_requests_total" in scraped, scraped[:200]
    finally:
        for app in apps.values():
            await app.aclose()
    print("| request | off: µs | on: µs | on − off | on / off |")
    print("|---|---:|---:|---:|---:|")
    figures: dict[str, dict[str, float]] = {}
    for method in ("GetTask", "SendMessage"):
        med = {s: statistics.median(cost[(method, s)]) * 1e6 for s in SETTINGS}
        figures[method] = {s: round(v, 1) for s, v in med.items()}
        print(
            f"| {method} | {med['off']:.1f} | {med['on']:.1f} | {med['on'] - med['off']:+.1f} "
            f"| {med['on'] / med['off']:.3f} |"
        )
    print(json.dumps({"bench": "metrics_cost", "us_per_request": figures}))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--requests", type=int, default=8000, help="GetTask per round (sends: 1/4)")
    p.add_argument("--prefill", type=int, default=2000)
    asyncio.run(main(p.parse_args()))
