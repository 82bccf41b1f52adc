"""The ``a2ad`` command."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
import uvicorn
from rich.console import Console

from .cli_client import register
from .durations import parse_duration, parse_optional_duration
from .logs import configure_logging
from .server.app import A2AApp, create_app, load_agent
from .store import DEFAULT_STORE, store_from_url

app = typer.Typer(
    name="a2ad",
    help="a2ad: an A2A task server. `a2ad serve` starts one; send, tasks and card talk to one.",
    no_args_is_help=True,
)
console = Console(stderr=True)
T = TypeVar("T")


@app.callback()
def _root() -> None:
    """a2ad: an A2A (Agent2Agent protocol) task server."""


class _Server(uvicorn.Server):
    """uvicorn, plus: print where a2ad listens once it does, and on Ctrl-C end
    a2ad's streams and agents at once, so open SSE connections close promptly
    instead of holding the shutdown until its timeout."""

    def __init__(self, config: uvicorn.Config, application: A2AApp, banner: str) -> None:
        super().__init__(config)
        self.application = application
        self.banner = banner
        self.loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)
        if self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
            # Tools and agents that talk to "this server" (the task manager) find it here.
            os.environ.setdefault("A2AD_URL", base)
            console.print(self.banner)
            console.print(f"  JSON-RPC:   {base}/  (also {base}/a2a)")
            console.print(f"  Agent card: {base}/.well-known/agent-card.json")
            console.print("  Press Ctrl-C to stop.")

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises the signal after its shutdown, which turns a clean
        # Ctrl-C into exit status 130 and skips our goodbye; we have handled it.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()
        if self.loop is not None:
            # The engine owns this job; the lifespan shutdown awaits the same one.
            self.loop.call_soon_threadsafe(self.application.engine.begin_shutdown)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0: any free port)."),
    store: str = typer.Option(
        DEFAULT_STORE,
        help="Where tasks are kept: sqlite:///file.db (relative; sqlite:////abs/path.db) "
        "or memory.",
    ),
    agent: str = typer.Option("echo", help="'echo' or package.module:attr of your agent."),
    max_tasks: int | None = typer.Option(
        None,
        min=1,
        help="Most tasks the store keeps; the oldest finished go first. "
        "Default: 10000 in memory, no cap in SQLite.",
    ),
    shutdown_grace: str = typer.Option(
        "10s", help="On Ctrl-C/SIGTERM, how long running tasks may finish before they are failed."
    ),
    retention: str = typer.Option(
        "off",
        help="Delete finished tasks this long after their last update (e.g. 7d); off keeps them.",
    ),
    task_timeout: str = typer.Option(
        "off", help="Fail tasks not finished this long after they were created (e.g. 15m)."
    ),
    lease_seconds: float = typer.Option(
        15.0,
        min=0.5,
        help="Tasks of a server that died (no heartbeat for this long) are failed.",
    ),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
    model: str | None = typer.Option(
        None,
        help="The LLM an LLM-backed agent uses (the task manager's): sets A2AD_MODEL. "
        "The endpoint comes from OPENAI_BASE_URL and OPENAI_API_KEY.",
    ),
) -> None:
    """Serve an agent over A2A JSON-RPC (1.0 and 0.3) with SSE streaming."""
    configure_logging(log_level)
    if model:
        os.environ["A2AD_MODEL"] = model
    # Like `python -m`, find the user's agent module in the current directory.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        the_agent = load_agent(agent)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    try:
        grace = _duration(parse_duration, shutdown_grace, "--shutdown-grace")
        keep = _duration(parse_optional_duration, retention, "--retention")
        timeout = _duration(parse_optional_duration, task_timeout, "--task-timeout")
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    try:
        task_store = store_from_url(store, max_tasks=max_tasks)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    application = create_app(
        the_agent,
        store=task_store,
        shutdown_grace=grace,
        retention_seconds=keep,
        task_timeout=timeout,
        lease_seconds=lease_seconds,
    )
    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        log_level=log_level if log_level != "info" else "warning",
        timeout_graceful_shutdown=3,
        lifespan="on",
    )
    cap = getattr(task_store, "max_tasks", None)
    banner = (
        f"a2ad serving agent [bold]{the_agent.name}[/bold] "
        f"(store {store}, {f'at most {cap} tasks' if cap else 'no task cap'})"
    )
    _Server(config, application, banner).run()
    console.print("a2ad stopped.")


def _duration(parse: Callable[[str], T], text: str, flag: str) -> T:
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


@app.command()
def mcp(
    url: str = typer.Option(
        "http://127.0.0.1:8000", envvar="A2AD_URL", help="The A2A server the tools manage."
    ),
    token: str | None = typer.Option(
        None, envvar="A2AD_TOKEN", help="Bearer token for that server."
    ),
) -> None:
    """Serve the task tools (list, get, cancel, cancel overdue) to an MCP client over stdio."""
    from .mcp_server import run_stdio

    try:
        run_stdio(url, token)
    except RuntimeError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
