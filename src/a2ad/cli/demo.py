"""``a2ad demo``: the lab's three agents (seed 004) on one server: the
orchestrator at ``/`` (and ``/agents/orchestrator/``), stock and pricing at
``/agents/stock/`` and ``/agents/pricing/``, which the orchestrator asks over
A2A as it would ask any server. Tasks are kept in memory. It is
``a2ad serve --agent orchestrator=... --agent stock=... --agent pricing=...``
with the agents' URLs filled in, and stops as ``a2ad serve`` does. With
``--auth keys.toml`` every request but the cards' needs a key, and the
orchestrator calls the two as its caller (a delegation token: the sub-tasks are
the caller's).
"""

from __future__ import annotations

import errno
import socket
from typing import Annotated

import typer
import uvicorn
from rich.markup import escape

from ..agent import Agent
from ..agents.lab import OrchestratorAgent, PricingAgent, StockAgent
from ..agents.llm import ENV_API_KEY, ENV_BASE_URL
from ..agents.settings import AgentSettings
from ..assembly import create_app
from ..durations import parse_duration
from ..server.agent_ports import AgentPorts
from ..server.app import A2AApp
from ..server.auth import ApiKeys, CredentialAuthenticator, KeyFileError
from ..server.types import ASGIApp
from .agent_specs import agent_settings
from .logs import configure_logging
from .serve import _listen, _Server, _url, console
from .startup import STARTUP_FAILURE

__all__ = ["demo"]

EXAMPLE = "Je voudrais un devis pour 12 CHAISE-ERGO"
LAB_AGENTS = ("stock", "pricing")  # in the lab's port order: 8101, 8102


def demo(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free one).")
    ] = 8100,
    delay: Annotated[
        str,
        typer.Option(
            help="How long each stock and pricing lookup takes (e.g. 1s), to watch the "
            "stream or try a cancel."
        ),
    ] = "0.5s",
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    model: Annotated[
        str | None,
        typer.Option(
            help="An LLM to word the three agents' answers (the figures stay theirs), "
            "instead of A2AD_MODEL. The endpoint comes from OPENAI_BASE_URL and OPENAI_API_KEY."
        ),
    ] = None,
    lab_ports: Annotated[
        bool,
        typer.Option(
            "--lab-ports",
            help="Also serve stock and pricing each at / on a port of its own, as the lab's "
            "separate servers are (the lab's 8101 and 8102 beside --port 8100; the next two "
            "ports beside another --port; any free ones with --port 0).",
        ),
    ] = False,
    auth: Annotated[
        str | None,
        typer.Option(
            help="Turn auth on with this keys file (`a2ad auth add-key` writes it), as "
            "a2ad serve --auth does; the orchestrator then asks the two as its caller."
        ),
    ] = None,
) -> None:
    """Serve the lab's agents: an orchestrator that quotes from a stock agent and a
    pricing agent, which it asks over A2A. No model needed; with one (--model), it
    words their answers."""
    configure_logging(log_level)
    try:
        lookup = parse_duration(delay)
    except ValueError as exc:
        console.print(f"[red]error:[/red] --delay: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    try:
        authenticator = CredentialAuthenticator(keys=ApiKeys.load(auth)) if auth else None
    except KeyFileError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    listening = _listen_or_exit(host, port, "--port")
    own_ports = _own_ports(host, port) if lab_ports else {}
    base = _url(listening)
    settings = agent_settings(base, model)
    orchestrator = OrchestratorAgent(
        settings, stock_url=f"{base}/agents/stock", pricing_url=f"{base}/agents/pricing"
    )
    application, served = _apps(orchestrator, settings, lookup, authenticator, own_ports)
    config = uvicorn.Config(
        served,
        host=host,
        log_level=log_level if log_level != "info" else "warning",
        timeout_graceful_shutdown=5,
        lifespan="on",
    )
    banner = _banner(base, _wording(orchestrator, settings.model), authenticator, own_ports)
    server = _Server(config, application, banner)
    server.run(sockets=[listening, *own_ports.values()])
    if server.startup_failed:
        raise typer.Exit(STARTUP_FAILURE)
    console.print("a2ad demo stopped.")


def _apps(
    orchestrator: OrchestratorAgent,
    settings: AgentSettings,
    lookup: float,
    authenticator: CredentialAuthenticator | None,
    own_ports: dict[str, socket.socket],
) -> tuple[A2AApp, ASGIApp]:
    """The three agents in one app, the orchestrator first (the default, at /),
    and what uvicorn serves: that app, behind the agents' own ports if any."""
    agents: dict[str, Agent] = {
        "orchestrator": orchestrator,
        "stock": StockAgent(settings, delay=lookup),
        "pricing": PricingAgent(settings, delay=lookup),
    }
    application = create_app(agents, authenticator=authenticator)
    if not own_ports:
        return application, application
    ports = {s.getsockname()[1]: name for name, s in own_ports.items()}
    return application, AgentPorts(application, ports)


def _own_ports(host: str, port: int) -> dict[str, socket.socket]:
    """stock's and pricing's own ports (--lab-ports): the two after --port, or
    any free ones with --port 0."""
    return {
        name: _listen_or_exit(host, port + offset if port else 0, "--port")
        for offset, name in enumerate(LAB_AGENTS, start=1)
    }


def _listen_or_exit(host: str, port: int, flag: str) -> socket.socket:
    try:
        return _listen(host, port)
    except OSError as exc:
        said = (
            f"port {port} on {host} is in use; pass another {flag} (0: any free one)"
            if exc.errno == errno.EADDRINUSE
            else f"can't listen on {host}:{port}: {exc.strerror or exc}"
        )
        console.print(f"[red]error:[/red] {escape(said)}", soft_wrap=True)
        raise typer.Exit(STARTUP_FAILURE) from None


def _lab_port_lines(own_ports: dict[str, socket.socket]) -> list[str]:
    """Where the lab's URLs are: on their own ports with --lab-ports, else beneath
    the one server (the lab's own client posts to http://localhost:8101/ for stock)."""
    if not own_ports:
        return [
            "  Lab ports:    the lab's stock at :8101 and pricing at :8102 are beneath this "
            "server (/agents/stock/, /agents/pricing/); --lab-ports serves them there too"
        ]
    return [f"  {name} at / on its own port: {_url(s)}/" for name, s in own_ports.items()]


def _banner(
    base: str,
    wording: str,
    authenticator: CredentialAuthenticator | None,
    own_ports: dict[str, socket.socket],
) -> list[str]:
    return [
        "a2ad demo: the lab's agents on one server, tasks kept in memory",
        f"  orchestrator: {base}/  (quotes, asking the two below)",
        f"  stock:        {base}/agents/stock/",
        f"  pricing:      {base}/agents/pricing/",
        *_lab_port_lines(own_ports),
        wording,
        f"  Auth:         {escape(authenticator.describe())}"
        if authenticator is not None
        else "  Auth:         off (--auth keys.toml turns it on)",
        f"  Try:          a2ad send --stream --url {base}"
        f'{" --token KEY" if authenticator is not None else ""} "{EXAMPLE}"',
        f"  The lab's client.py works against {base}/ as written.",
        "  Press Ctrl-C to stop.",
    ]


def _wording(orchestrator: OrchestratorAgent, model: str | None) -> str:
    phrasing = orchestrator.phrasing
    if phrasing is not None:
        llm = phrasing.settings
        return f"  Answers:      worded by {escape(llm.model)} at {escape(llm.shown_url)}"
    if model:
        return (
            f"  Answers:      in fixed wording: no endpoint for the model {escape(model)}; "
            f"set {ENV_BASE_URL} or {ENV_API_KEY}"
        )
    return "  Answers:      in fixed wording (no model; --model NAME to word them with one)"
