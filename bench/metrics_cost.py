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
import time
from typing import Any

from access_log import call, rpc, send_body  # bench/access_log.py: one request, in-process

from a2ad import create_app
from a2ad.server.metrics import Metrics

SETTINGS = ("off", "on")


async def main(args: argparse.Namespace) -> None:
    apps = {
        "off": create_app(max_tasks=1_000_000),
        "on": create_app(max_tasks=1_000_000, metrics=Metrics()),
    }
    gets: dict[str, list[bytes]] = {}
    for setting, app in apps.items():
        await app.engine.start()
        ids = []
        for n in range(args.prefill):
            answer = json.loads(await call(app, send_body(n)))
            ids.append(answer["result"]["task"]["id"])
        gets[setting] = [rpc("GetTask", {"id": ids[n % len(ids)]}) for n in range(args.requests)]
    cost: dict[tuple[str, str], list[float]] = {}
    sent = args.prefill
    try:
        for round_ in range(args.rounds):
            for setting in SETTINGS if round_ % 2 == 0 else SETTINGS[::-1]:
                app = apps[setting]
                t0 = time.process_time()
                for body in gets[setting]:
                    await call(app, body)
                t1 = time.process_time()
                for _ in range(args.requests // 4):
                    await call(app, send_body(sent))
                    sent += 1
                t2 = time.process_time()
                cost.setdefault(("GetTask", setting), []).append((t1 - t0) / len(gets[setting]))
                cost.setdefault(("SendMessage", setting), []).append(
                    (t2 - t1) / (args.requests // 4)
                )
        scraped = await call_get(apps["on"], "/metrics")
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


async def call_get(app: Any, path: str) -> bytes:
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 50000),
    }
    answer: list[bytes] = []

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            answer.append(message.get("body", b""))

    await app(scope, receive, send)
    return b"".join(answer)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--requests", type=int, default=8000, help="GetTask per round (sends: 1/4)")
    p.add_argument("--prefill", type=int, default=2000)
    asyncio.run(main(p.parse_args()))
