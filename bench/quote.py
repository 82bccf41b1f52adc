"""The lab's quote (seed 004) under load: what the orchestrator costs on top of its
two sub-agents, and 100 quotes at once.

Three ``a2ad serve`` processes (stock, pricing, orchestrator; tasks in memory;
the sub-agents answer at once: no delay), driven over A2A 1.0 JSON-RPC by httpx:

- ``direct``: one blocking SendMessage to stock, then one to pricing (the two
  requests the orchestrator makes), one at a time;
- ``quote``: one blocking SendMessage "Je voudrais un devis pour 12 CHAISE-ERGO"
  to the orchestrator at a time; its overhead is its latency minus the slower of
  the two direct calls (it makes them concurrently, streamed), and, steadier, the
  orchestrator process's CPU time per quote (/proc/<pid>/stat: utime + stime);
- ``fanout``: 100 workers sending quotes concurrently for ``--seconds``: latency
  p50/p99 and quotes/s; and one burst of exactly 100 quotes sent at once.

    .venv/bin/python bench/quote.py              # about a minute
    .venv/bin/python bench/quote.py --seconds 5  # shorter

It prints a table, then one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

A2AD = Path(sys.executable).parent / "a2ad"
QUOTE = "Je voudrais un devis pour 12 CHAISE-ERGO"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def start(agent: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [str(A2AD), "serve", "--agent", agent, "--port", str(port), "--store", "memory",
         "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/.well-known/agent-card.json").status_code == 200:
                return proc, url + "/"
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{agent} did not start on {url}")


def body(text: str) -> bytes:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return json.dumps(request).encode()


async def send(http: httpx.AsyncClient, url: str, text: str) -> float:
    began = time.perf_counter()
    r = await http.post(url, content=body(text), headers=HEADERS)
    elapsed = time.perf_counter() - began
    state = r.json()["result"]["task"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise SystemExit(f"{url} answered {state}: {r.text[:300]}")
    return elapsed


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(
    urls: dict[str, str], orchestrator_pid: int, args: argparse.Namespace
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        for _ in range(20):  # warm up: connections, the orchestrator's clients' cards
            await send(http, urls["orchestrator"], QUOTE)
        stock, pricing, quote = [], [], []
        cpu_before = cpu_seconds(orchestrator_pid)
        for _ in range(args.repeat):
            stock.append(await send(http, urls["stock"], "Stock de CHAISE-ERGO ?"))
            pricing.append(await send(http, urls["pricing"], "Prix de 12 CHAISE-ERGO ?"))
            quote.append(await send(http, urls["orchestrator"], QUOTE))
        cpu_per_quote = (cpu_seconds(orchestrator_pid) - cpu_before) / args.repeat
        slower = [max(s, p) for s, p in zip(stock, pricing, strict=True)]

        latencies: list[float] = []
        stop_at = time.monotonic() + args.seconds

        errors: list[str] = []

        async def worker() -> None:
            while time.monotonic() < stop_at:
                try:
                    latencies.append(await send(http, urls["orchestrator"], QUOTE))
                except httpx.HTTPError as exc:  # counted, not retried: it is a finding
                    errors.append(type(exc).__name__)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - began

        burst_began = time.perf_counter()
        burst = await asyncio.gather(
            *(send(http, urls["orchestrator"], QUOTE) for _ in range(args.concurrency))
        )
        burst_wall = time.perf_counter() - burst_began
    return {
        "direct_stock_p50_ms": ms(statistics.median(stock)),
        "direct_pricing_p50_ms": ms(statistics.median(pricing)),
        "quote_p50_ms": ms(statistics.median(quote)),
        "quote_p99_ms": ms(pct(quote, 0.99)),
        "overhead_p50_ms": ms(statistics.median(q - s for q, s in zip(quote, slower, strict=True))),
        "orchestrator_cpu_ms_per_quote": ms(cpu_per_quote),
        "fanout_concurrency": args.concurrency,
        "fanout_quotes": len(latencies),
        "fanout_errors": len(errors),
        "fanout_error_kinds": sorted(set(errors)),
        "fanout_p50_ms": ms(statistics.median(latencies)),
        "fanout_p99_ms": ms(pct(latencies, 0.99)),
        "fanout_quotes_per_s": round(len(latencies) / wall, 1),
        "burst_all_done_ms": ms(burst_wall),
        "burst_p50_ms": ms(statistics.median(burst)),
        "burst_p99_ms": ms(pct(list(burst), 0.99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="sequential quotes timed")
    parser.add_argument("--concurrency", type=int, default=100, help="concurrent quotes")
    parser.add_argument("--seconds", type=float, default=20, help="length of the fan-out run")
    args = parser.parse_args()
    procs = []
    try:
        stock, stock_url = start("a2ad.agents.lab:StockAgent")
        procs.append(stock)
        pricing, pricing_url = start("a2ad.agents.lab:PricingAgent")
        procs.append(pricing)
        orchestrator, orchestrator_url = start(
            "a2ad.agents.lab:OrchestratorAgent",
            {"A2AD_STOCK_URL": stock_url, "A2AD_PRICING_URL": pricing_url},
        )
        procs.append(orchestrator)
        urls = {"stock": stock_url, "pricing": pricing_url, "orchestrator": orchestrator_url}
        figures = asyncio.run(measure(urls, orchestrator.pid, args))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(15)
    figures["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
