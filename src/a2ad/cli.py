"""The ``a2ad`` command."""

from __future__ import annotations

import asyncio
import enum
from typing import Any

import typer
from rich.console import Console

from .logs import configure_logging

app = typer.Typer(
    name="a2ad",
    help="a2ad: an A2A task server. `a2ad serve` starts one.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(stderr=True)


class StoreKind(str, enum.Enum):
    memory = "memory"


@app.callback()
def _root() -> None:
    """a2ad: an A2A (Agent2Agent protocol) task server."""


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0: any free port)."),
    store: StoreKind = typer.Option(StoreKind.memory, help="Where tasks are kept."),
    agent: str = typer.Option("echo", help="'echo' or package.module:attr of your agent."),
    max_tasks: int = typer.Option(10_000, min=1, help="Most tasks the store keeps; the oldest finished go first."),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
) -> None:
    """Serve an agent over A2A JSON-RPC (1.0 and 0.3) with SSE streaming."""
    import uvicorn

    from .server.app import create_app, load_agent

    configure_logging(log_level)
    try:
        the_agent = load_agent(agent)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    application = create_app(the_agent, max_tasks=max_tasks)
    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        log_level=log_level if log_level != "info" else "warning",
        timeout_graceful_shutdown=3,
        lifespan="on",
    )
    server = _server_class()(config)
    server.app = application

    original_startup = server.startup

    async def startup(sockets: object = None) -> None:
        server.loop = asyncio.get_running_loop()
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        if server.started:
            bound = server.servers[0].sockets[0].getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            base = f"http://{shown}:{bound[1]}"
            console.print(f"a2ad serving agent [bold]{the_agent.name}[/bold] ({store.value} store, max {max_tasks} tasks)")
            console.print(f"  JSON-RPC:   {base}/  (also {base}/a2a)")
            console.print(f"  Agent card: {base}/.well-known/agent-card.json")
            console.print("  Press Ctrl-C to stop.")

    server.startup = startup  # type: ignore[method-assign]
    server.run()
    console.print("a2ad stopped.")


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn, plus: on Ctrl-C, end a2ad's streams and agents at once, so open
        SSE connections close promptly instead of holding the shutdown."""

        loop: asyncio.AbstractEventLoop | None = None
        app: Any = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            if self.loop is not None and self.app is not None:
                # engine.shutdown() owns its work; lifespan shutdown awaits the same job.
                self.loop.call_soon_threadsafe(self.app.engine.begin_shutdown)

    return Server


def main() -> None:
    app()
