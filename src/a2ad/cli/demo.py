"""``a2ad demo``: the lab's three agents (seed 004), each on its own port, in
this one process: the orchestrator on ``--port``, stock and pricing on the two
ports after it (with ``--port 0``, any free ones). Tasks are kept in memory.

Until one server can serve several agents, this is three a2ad servers sharing
an event loop; Ctrl-C (or SIGTERM) shuts the three down together, each as
``a2ad serve`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from collections.abc import Iterator
from typing import Annotated

import typer
import uvicorn
from rich.markup import escape

from ..agent import Agent
from ..agents.lab import OrchestratorAgent, PricingAgent, StockAgent
from ..durations import parse_duration
from ..server.app import create_app
from .logs import configure_logging
from .serve import STARTUP_FAILURE, _listen, _Server, _url, console

__all__ = ["demo"]

EXAMPLE = "Je voudrais un devis pour 12 CHAISE-ERGO"


class _Member(_Server):
    """One of the demo's servers: the demo handles the signals, for all three."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def demo(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            min=0,
            max=65533,
            help="The orchestrator's port; stock and pricing take the next two "
            "(0: any free ports).",
        ),
    ] = 8100,
    delay: Annotated[
        str,
        typer.Option(
            help="How long each stock and pricing lookup takes (e.g. 1s), to watch the "
            "stream or try a cancel."
        ),
    ] = "0.5s",
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Serve the lab's agents: an orchestrator that quotes from a stock agent and a
    pricing agent, which it asks over A2A. No model needed."""
    configure_logging(log_level)
    try:
        lookup = parse_duration(delay)
    except ValueError as exc:
        console.print(f"[red]error:[/red] --delay: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    names = ("orchestrator", "stock", "pricing")
    sockets: list[socket.socket] = []
    for offset, _ in enumerate(names):
        wanted = port + offset if port else 0
        try:
            sockets.append(_listen(host, wanted))
        except OSError as exc:
            for opened in sockets:
                opened.close()
            said = (
                f"port {wanted} on {host} is in use; pass another --port (0: any free ones)"
                if exc.errno == errno.EADDRINUSE
                else f"can't listen on {host}:{wanted}: {exc.strerror or exc}"
            )
            console.print(f"[red]error:[/red] {escape(said)}", soft_wrap=True)
            raise typer.Exit(STARTUP_FAILURE) from None
    urls = dict(zip(names, (_url(s) for s in sockets), strict=True))
    agents: dict[str, Agent] = {
        "orchestrator": OrchestratorAgent(stock_url=urls["stock"], pricing_url=urls["pricing"]),
        "stock": StockAgent(delay=lookup),
        "pricing": PricingAgent(delay=lookup),
    }
    servers = []
    for name in names:
        application = create_app(agents[name])
        config = uvicorn.Config(
            application,
            host=host,
            log_level=log_level if log_level != "info" else "warning",
            timeout_graceful_shutdown=5,
            lifespan="on",
        )
        servers.append(_Member(config, application, []))
    orchestrator = urls["orchestrator"]
    banner = [
        "a2ad demo: the lab's agents, tasks kept in memory",
        f"  orchestrator: {orchestrator}/  (quotes, asking the two below)",
        f"  stock:        {urls['stock']}/",
        f"  pricing:      {urls['pricing']}/",
        f'  Try:          a2ad send --stream --url {orchestrator} "{EXAMPLE}"',
        f"  The lab's client.py works against {orchestrator}/ as written.",
        "  Press Ctrl-C to stop.",
    ]
    failed = asyncio.run(_serve(servers, sockets, banner))
    if failed:
        raise typer.Exit(STARTUP_FAILURE)
    console.print("a2ad demo stopped.")


async def _serve(servers: list[_Member], sockets: list[socket.socket], banner: list[str]) -> bool:
    """Run the servers until a signal stops them; True if one failed to start."""
    loop = asyncio.get_running_loop()

    def stop(sig: int) -> None:
        for server in servers:
            server.handle_exit(sig, None)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop, sig)
    try:
        async with asyncio.TaskGroup() as group:
            for server, listening in zip(servers, sockets, strict=True):
                group.create_task(server.serve(sockets=[listening]))
            while not all(s.started or s.should_exit for s in servers):
                await asyncio.sleep(0.02)
            if all(s.started for s in servers):
                for line in banner:
                    console.print(line, soft_wrap=True)
            else:  # one could not start: stop the others
                for server in servers:
                    server.should_exit = True
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return any(s.startup_failed for s in servers)
