"""The dashboard over a large store: its first paint, and what one open page costs.

Prefills a SQLite file with N tasks (bench/list_scale.py's data: a month of
status timestamps, 1% in one hot context, 86% completed, ...), starts
``a2ad serve`` on it, and opens ``/ui`` in headless Chromium (Debian's
``chromium`` driven by Playwright) several times, each in a fresh browser
context (no cache), timing from navigation to:

- the first row of the table painted (what a person waits for),
- the counts by state filled in (eight ListTasks counts),
- the charts drawn (GET /a2ad/activity: the last hour of changes).

Then one page stays open for ``--idle`` seconds while nothing changes and, for
as long again, while one task a second is sent: the requests the page made
(counted by the browser) and the server's CPU time (from /proc/<pid>/stat),
per minute.

    .venv/bin/python bench/dashboard.py --tasks 1000000 --keep /tmp/dash-1m.db
    .venv/bin/python bench/dashboard.py --tasks 1000 --runs 3 --idle 20   # quick

``--keep FILE`` keeps (or reuses) the prefilled file between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
import list_scale

CHROMIUM = os.environ.get("A2AD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
V1 = {"A2A-Version": "1.0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(path: Path, port: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "a2ad.cli", "serve", "--port", str(port),
        "--store", f"sqlite:///{path}", "--agent", "demo",
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Long: list_scale's data has working tasks with no lease, which the first start
    # of a fresh file fails as orphans (about 50,000 of a million) before it is ready.
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise SystemExit(f"a2ad serve ended: {server.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        time.sleep(0.2)
    server.kill()
    raise SystemExit("a2ad serve did not get ready in 900 s")


def first_paint(browser: Any, url: str) -> dict[str, float]:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        started = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.locator("tbody tr[data-task-id]").first.wait_for()
        row = time.perf_counter() - started
        page.locator(".counts button strong").nth(7).wait_for()
        counts = time.perf_counter() - started
        page.locator("#throughput .big").wait_for()
        charts = time.perf_counter() - started
        return {"first_row": row, "counts": counts, "charts": charts}
    finally:
        context.close()


def sender(port: int, stop: threading.Event, sent: list[int]) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=V1, timeout=10) as client:
        while not stop.wait(1.0):
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
            client.post("/message:send", json={"message": message})
            sent[0] += 1


def open_cost(
    browser: Any,
    url: str,
    pid: int,
    seconds: float,
    port: int,
    busy: bool,
    *,
    page_open: bool = True,
) -> dict[str, float]:
    """Server CPU and the page's requests over ``seconds``, with the page open (or,
    ``page_open`` False, the same window without it: what the sends cost alone)."""
    context = browser.new_context()
    requests: list[str] = []
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        if page_open:
            page.goto(url)
            page.locator("#throughput .big").wait_for()
            page.wait_for_timeout(2_000)  # let the first draw settle
        page.on("request", lambda r: requests.append(r.url))
        stop, sent = threading.Event(), [0]
        thread = threading.Thread(target=sender, args=(port, stop, sent), daemon=True)
        before = cpu_seconds(pid)
        if busy:
            thread.start()
        page.wait_for_timeout(seconds * 1000)
        stop.set()
        used = cpu_seconds(pid) - before
        if busy:
            thread.join(5)
        per_minute = 60 / seconds
        return {
            "requests_per_minute": len(requests) * per_minute,
            "server_cpu_seconds_per_minute": used * per_minute,
            "tasks_sent_per_minute": sent[0] * per_minute,
        }
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of each cost window")
    parser.add_argument("--keep", type=Path, help="keep (or reuse) the prefilled SQLite file here")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="a2ad-dashboard-"))
    path = args.keep or workdir / "tasks.db"
    if not path.exists():
        started = time.perf_counter()
        list_scale.prefill(path, args.tasks)
        print(
            f"prefilled {args.tasks:,} tasks in {time.perf_counter() - started:.0f} s", flush=True
        )
    port = free_port()
    server = serve(path, port)
    url = f"http://127.0.0.1:{port}/ui"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            first_paint(browser, url)  # warm the server's caches and the file's pages
            runs = [first_paint(browser, url) for _ in range(args.runs)]
            idle = open_cost(browser, url, server.pid, args.idle, port, busy=False)
            busy = open_cost(browser, url, server.pid, args.idle, port, busy=True)
            alone = open_cost(browser, url, server.pid, args.idle, port, True, page_open=False)
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    paint = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"\nFirst paint over {args.tasks:,} tasks (SQLite), median of {args.runs} fresh loads:")
    print("| until | ms |\n|---|---:|")
    for key, label in (
        ("first_row", "first row"),
        ("counts", "counts by state"),
        ("charts", "charts"),
    ):
        print(f"| {label} | {paint[key] * 1000:.0f} |")
    print("\nOne open dashboard, per minute:")
    print("| while | requests | server CPU (s) | tasks sent |\n|---|---:|---:|---:|")
    windows = (
        ("nothing changes", idle),
        ("one task a second", busy),
        ("one task a second, no page open", alone),
    )
    for label, cost in windows:
        print(
            f"| {label} | {cost['requests_per_minute']:.0f} | "
            f"{cost['server_cpu_seconds_per_minute']:.2f} | {cost['tasks_sent_per_minute']:.0f} |"
        )
    print(
        json.dumps(
            {"tasks": args.tasks, "paint": paint, "idle": idle, "busy": busy, "alone": alone}
        )
    )


if __name__ == "__main__":
    main()
