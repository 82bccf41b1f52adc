"""``a2ad serve``: run an agent under uvicorn, print where, stop cleanly on Ctrl-C.

This is where the server's configuration is read: the flags, and once, at
start, the environment; the agent gets what it needs as ``AgentSettings``.
"""

from __future__ import annotations

import asyncio
import errno
import importlib
import ipaddress
import logging
import math
import os
import re
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Annotated, Any, NamedTuple, NoReturn, TypeVar

import typer
import uvicorn
from rich.markup import escape

from ..agent import Agent
from ..agents.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from ..agents.settings import AgentSettings
from ..agents.task_manager import ENV_MANAGED_URLS
from ..durations import parse_duration, parse_optional_duration
from ..engine import AgentStartError
from ..engine.secrets import KeyFileError, server_key
from ..engine.turn_log import TurnLogContext
from ..protocol.model import MAX_PARTS
from ..server.access_log import RequestLog
from ..server.app import A2AApp, check_agent_name, create_app, load_agent
from ..server.auth import CredentialAuthenticator
from ..server.connections import (
    ConnectionLimits,
    fit_to_fd_limit,
    protocol_class,
    raise_fd_limit,
)
from ..server.dashboard import DEFAULT_PATH as DASHBOARD_PATH
from ..server.dashboard import check_path as check_dashboard_path
from ..server.limits import MAX_BODY_BYTES, MAX_PART_BYTES
from ..server.metrics import Metrics
from ..store import DEFAULT_STORE, store_from_url
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY, StoreError, TaskStore, Turns
from ..store.memory import DEFAULT_MAX_TASKS, MemoryStore
from ..store.sqlite_group import SqliteGroup
from ..tools import ENV_TOKEN, ENV_URL
from ..wording import plural
from .agent_threads import AGENT_THREADS, AgentThreadsOption
from .auth import ENV_AUTH_FILE
from .auth_flags import authenticator_from_flags
from .config import DURATION, ENV_AGENTS
from .logs import access_fraction, configure_logging, keep_logging
from .startup import READY, STARTUP_FAILURE
from .terminal import make_console

__all__ = ["serve", "workers_store"]

console = make_console(stderr=True)
T = TypeVar("T")
log = logging.getLogger("a2ad.serve")


class _Server(uvicorn.Server):
    """uvicorn, plus: print where a2ad listens once it does, and stop in a2ad's
    order. On Ctrl-C or SIGTERM a2ad shuts down first while uvicorn keeps
    serving: new messages are answered -32000, running tasks get the grace,
    then those left are failed and every open stream sends its task's final
    event and ends. Only then does uvicorn close the listening socket and the
    connections, which by then have nothing left to send. A second Ctrl-C
    cuts the grace short; a third stops without waiting for anything.

    A process of a group (``--workers``) has a ``control`` socket to the group's
    parent: it says "ready" there once it serves, and shuts down as on SIGTERM
    if the parent goes away."""

    def __init__(
        self,
        config: uvicorn.Config,
        application: A2AApp,
        banner: list[str],
        control: socket.socket | None = None,
    ) -> None:
        super().__init__(config)
        self.application = application
        self.banner = banner
        self.control = control
        self.loop: asyncio.AbstractEventLoop | None = None
        self._draining = False
        self._hurried = False
        self.startup_failed = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        # The engine starts here, before uvicorn's lifespan (which then finds it
        # started), so that a store that can't be served is one clear line.
        try:
            await self.application.engine.start()
        except (StoreError, AgentStartError) as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            await self.application.aclose()
            self.startup_failed = self.should_exit = True
            return
        await super().startup(sockets=sockets)
        if self.started:
            presence = self.application.engine.presence  # a front's: is a worker connected?
            problem = presence.problem() if presence is not None else ""
            warn = [f"[bold yellow]warning:[/bold yellow] {escape(problem)}"] if problem else []
            for line in [*self.banner, *warn]:
                console.print(line)
            if self.control is not None:
                self.control.sendall(READY)
                self.loop.add_reader(self.control, self._parent_said)

    def _parent_said(self) -> None:
        assert self.control is not None and self.loop is not None
        try:
            if self.control.recv(64):
                return  # it says nothing yet; only its going away counts
        except OSError:
            pass
        self.loop.remove_reader(self.control)
        log.warning("the a2ad process that started this one is gone: shutting down")
        self.handle_exit(signal.SIGTERM, None)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Not super(): uvicorn's handler also notes the signal, to raise it again
        # once it has shut down, which would turn a clean Ctrl-C into exit status
        # 130 (and SIGTERM into death by signal) and skip our goodbye.
        if self.loop is None or not self.started:
            self.should_exit = True  # still starting: nothing runs yet
        elif not self._draining:
            self._draining = True
            self.loop.call_soon_threadsafe(self._drain)
        elif sig == signal.SIGINT and not self._hurried:
            self._hurried = True
            self.loop.call_soon_threadsafe(self._hurry)
        elif sig == signal.SIGINT:  # a third: don't wait for anything
            self.should_exit = self.force_exit = True

    def _drain(self) -> None:
        stopped = self.application.begin_shutdown()
        stopped.add_done_callback(lambda _: setattr(self, "should_exit", True))

    def _hurry(self) -> None:
        self.application.begin_shutdown(graceful=False)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = 8000,
    store: Annotated[
        str,
        typer.Option(
            help="Where tasks are kept: sqlite:///file.db (relative; sqlite:////abs/path.db), "
            "memory, or postgresql://user@host:5432/db (shared by instances; query parameters "
            "such as pool_max, connect_timeout, command_timeout, statement_timeout, sslmode, "
            "application_name: docs/operations.md)."
        ),
    ] = DEFAULT_STORE,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            envvar=ENV_AGENTS,
            help="'echo', 'demo', or package.module:attr of your agent. Repeat as NAME=SPEC "
            "to serve several, each at /agents/NAME/ (the first, or --default-agent, at / too).",
        ),
    ] = ["echo"],  # noqa: B006 (typer passes a new list: this one is never changed)
    default_agent: Annotated[
        str | None,
        typer.Option(help="Of several --agent NAME=SPEC, the one also served at /."),
    ] = None,
    max_tasks: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Most tasks the store keeps; the oldest finished go first. "
            f"Default: {DEFAULT_MAX_TASKS} in memory, no cap in SQLite.",
        ),
    ] = None,
    shutdown_grace: Annotated[
        str,
        typer.Option(
            metavar=DURATION,
            help="On Ctrl-C/SIGTERM, how long running tasks may finish before they are failed.",
        ),
    ] = "10s",
    retention: Annotated[
        str,
        typer.Option(
            metavar=DURATION,
            help="Delete finished tasks this long after their last update (e.g. 7d); "
            "off keeps them.",
        ),
    ] = "off",
    task_timeout: Annotated[
        str,
        typer.Option(
            metavar=DURATION,
            help="Fail tasks not finished this long after they were created (e.g. 15m).",
        ),
    ] = "off",
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=0.5,
            help="Tasks of a server that died (no heartbeat for this long) are failed.",
        ),
    ] = 15.0,
    no_run: Annotated[
        bool,
        typer.Option(
            "--no-run",
            help="Run no agents here: store each task for `a2ad worker` processes to run "
            "(PostgreSQL store only); this server serves the requests.",
        ),
    ] = False,
    agent_threads: AgentThreadsOption = AGENT_THREADS,
    max_connections: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most client connections served at once; more are answered 503. "
            "Lowered if the file-descriptor limit can't hold them.",
        ),
    ] = 1000,
    max_header_bytes: Annotated[
        int,
        typer.Option(
            min=1, help="Largest request line and headers, in bytes; larger ones get 431."
        ),
    ] = 65536,
    header_timeout: Annotated[
        str,
        typer.Option(
            metavar=DURATION, help="A request's headers must arrive within this (408 otherwise)."
        ),
    ] = "10s",
    body_timeout: Annotated[
        str,
        typer.Option(
            metavar=DURATION,
            help="A request's body must arrive within this of its headers (408 otherwise).",
        ),
    ] = "30s",
    max_body_bytes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Largest request body, in bytes; a larger one gets 413.",
            rich_help_panel="Limits",
        ),
    ] = MAX_BODY_BYTES,
    max_parts: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_PARTS,
            help="Most parts in a message (-32602 past it).",
            rich_help_panel="Limits",
        ),
    ] = 256,
    max_part_bytes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Largest part of a message, in bytes: a text's UTF-8, a data part's JSON, "
            "a file's raw bytes (-32602 past it).",
            rich_help_panel="Limits",
        ),
    ] = MAX_PART_BYTES,
    max_history: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_HISTORY,
            help="Messages a task keeps; past it the oldest are dropped, and counted in "
            'its metadata["a2ad"]["historyDropped"].',
            rich_help_panel="Limits",
        ),
    ] = MAX_HISTORY,
    max_artifacts: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_ARTIFACTS,
            help="Artifacts a task keeps; an agent's artifact past it is dropped and logged.",
            rich_help_panel="Limits",
        ),
    ] = MAX_ARTIFACTS,
    max_tasks_per_principal: Annotated[
        int,
        typer.Option(
            min=0,
            help="Tasks a caller may have submitted/working at once; more get 429 (0: no limit).",
            rich_help_panel="Limits",
        ),
    ] = 0,
    max_streams_per_principal: Annotated[
        int,
        typer.Option(
            min=0,
            help="Streams a caller may have open at once; more get 429 (0: no limit).",
            rich_help_panel="Limits",
        ),
    ] = 0,
    rate_limit: Annotated[
        float,
        typer.Option(
            min=0,
            help="Requests a second per caller (its principal, or its address without auth); "
            "more get 429 with Retry-After (0: no limit).",
            rich_help_panel="Limits",
        ),
    ] = 0.0,
    rate_burst: Annotated[
        int,
        typer.Option(
            min=0,
            help="Requests a caller may send at once within --rate-limit "
            "(0: the rate, rounded up).",
            rich_help_panel="Limits",
        ),
    ] = 0,
    allow_private_webhooks: Annotated[
        bool,
        typer.Option(
            "--allow-private-webhooks",
            help="Deliver push notifications to webhooks on loopback, private or link-local "
            "addresses too (refused by default, against server-side request forgery).",
        ),
    ] = False,
    expose_internal_parts: Annotated[
        bool,
        typer.Option(
            "--expose-internal-parts",
            help="Show every caller and webhook the parts agents mark internal (tool calls, "
            "tool results, reasoning); by default only operators see them.",
        ),
    ] = False,
    secret_key_file: Annotated[
        str | None,
        typer.Option(
            envvar="A2AD_SECRET_KEY_FILE",
            help="The 32-byte key webhook tokens and credentials are stored encrypted with; "
            "made if missing. Default: <store file>-a2ad.key beside a SQLite store, a random "
            "key for memory.",
        ),
    ] = None,
    auth: Annotated[
        str | None,
        typer.Option(
            envvar=ENV_AUTH_FILE,
            help="Turn auth on with this keys file (TOML; `a2ad auth add-key` writes it): "
            "requests need 'Authorization: Bearer KEY' or 'X-API-Key: KEY'.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_jwt_jwks: Annotated[
        str | None,
        typer.Option(
            help="Accept bearer JWTs signed by the keys of this JWKS (URL or file); "
            "needs --auth-jwt-issuer and --auth-jwt-audience.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_jwt_issuer: Annotated[
        str | None,
        typer.Option(help="The JWTs' required `iss`.", rich_help_panel="Authentication"),
    ] = None,
    auth_jwt_audience: Annotated[
        str | None,
        typer.Option(help="The JWTs' required `aud`.", rich_help_panel="Authentication"),
    ] = None,
    auth_jwt_principal_claim: Annotated[
        str,
        typer.Option(
            help="The claim naming the caller (dots walk nested claims).",
            rich_help_panel="Authentication",
        ),
    ] = "sub",
    auth_jwt_principal_prefix: Annotated[
        str | None,
        typer.Option(
            help="What goes before that claim to make the principal. Default: the issuer and "
            "'#', so a JWT is never a key's principal; '' maps its subject to the key's of "
            "that name.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_jwt_tenant_claim: Annotated[
        str,
        typer.Option(
            help="The claim listing its tenants (a string or a list).",
            rich_help_panel="Authentication",
        ),
    ] = "tenant",
    auth_jwt_roles_claim: Annotated[
        str,
        typer.Option(
            help="The claim listing its roles (a list or a space-separated string).",
            rich_help_panel="Authentication",
        ),
    ] = "roles",
    auth_jwt_oidc_url: Annotated[
        str | None,
        typer.Option(
            help="The provider's OpenID Connect discovery URL, for the card to declare "
            "(otherwise it declares an HTTP bearer scheme of format JWT).",
            rich_help_panel="Authentication",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Processes serving the port together, each with its own engine; one that "
            "dies is started again. Needs a SQLite or PostgreSQL store.",
        ),
    ] = 1,
    dashboard: Annotated[
        bool,
        typer.Option(
            "--dashboard/--no-dashboard",
            help="Serve the task dashboard (a page for people: list, follow, cancel tasks).",
        ),
    ] = True,
    dashboard_path: Annotated[
        str, typer.Option(help="Where the dashboard is served (a path such as /ui).")
    ] = DASHBOARD_PATH,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    log_format: Annotated[
        str,
        typer.Option(
            help="json: one JSON object a line, for machines; text: one line of text an "
            "event, for people at a terminal (coloured there, unless NO_COLOR is set)."
        ),
    ] = "json",
    access_log: Annotated[
        str,
        typer.Option(
            help="A line per request on the a2ad.access logger: on (every request), errors "
            "(those answered with an error), off, or a fraction (0 to 1) of the requests "
            "answered without an error to log beside those with one."
        ),
    ] = "errors",
    tracing: Annotated[
        str,
        typer.Option(
            help="OpenTelemetry spans for requests, agent turns and the calls agents make "
            "through a2ad's client: off, otlp (OTLP over HTTP, configured by the standard "
            "OTEL_EXPORTER_OTLP_* variables) or console. Needs pip install 'a2ad[otel]'."
        ),
    ] = "off",
    metrics: Annotated[
        bool,
        typer.Option(
            help="Serve GET /metrics (Prometheus text format; with auth on, for operators) and "
            "count what it reports; --no-metrics: neither (/metrics is then a 404).",
        ),
    ] = True,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            help="Serve /metrics on this port (same --host) instead of the main one, open to "
            "anyone who reaches it: bind it where only Prometheus does.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="The LLM an LLM-backed agent uses (the task manager, the LLM agent; the lab's "
            "agents word their answers with it), instead of A2AD_MODEL. "
            "The endpoint comes from OPENAI_BASE_URL and OPENAI_API_KEY."
        ),
    ] = None,
) -> None:
    """Serve an agent over A2A JSON-RPC (1.0 and 0.3) with SSE streaming."""
    # The flags as given (the only locals yet): what each process of a group is given.
    flags = dict(locals())
    try:
        configure_logging(
            log_level, log_format=log_format, access=access_fraction(access_log) is not None
        )
    except ValueError as exc:
        _fail(exc, 2)
    _find_modules_here()
    try:
        parsed = _parse(flags)
        if workers > 1 and isinstance(parsed.store, MemoryStore):
            raise ValueError(
                "--workers: processes can't share a memory store; use --store "
                "sqlite:///file.db or postgresql://..."
            )
    except ValueError as exc:
        _fail(exc, 2)
    try:
        listening = _listen(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            said = f"port {port} on {host} is in use; pass another --port (0: any free one)"
        else:
            said = f"can't listen on {host}:{port}: {exc.strerror or exc}"
        _fail(said, STARTUP_FAILURE)
    metrics_listening = None
    if metrics and metrics_port is not None:
        try:
            metrics_listening = _listen(host, metrics_port)
        except OSError as exc:
            listening.close()
            said = exc.strerror or str(exc)
            _fail(f"--metrics-port {metrics_port}: can't listen on {host}: {said}", 2)
    base = _url(listening)
    try:
        the_agent = _load_agents(agent or ["echo"], default_agent, base, model)
        keep_logging()  # an agent's library may have reconfigured logging as it loaded
    except ValueError as exc:
        listening.close()
        _fail(exc, 2)
    try:  # after the usage checks: a usage error makes no key file
        key = server_key(parsed.store, secret_key_file)
    except KeyFileError as exc:
        listening.close()
        _fail(exc, STARTUP_FAILURE)
    banner = _banner(flags, parsed, the_agent, base)
    if workers > 1:
        # Imported here: a single process needs none of it.
        from .supervisor import Group

        group = Group(flags, listening, key, parsed.store, banner, metrics=metrics_listening)
        code = group.run()
        if code:
            raise typer.Exit(code)
        console.print("a2ad stopped.")
        return
    application = _application(
        flags, parsed, the_agent, key, metrics=_metrics(flags, metrics_listening, None)
    )
    server = _Server(_config(flags, parsed, application), application, banner)
    server.run(sockets=[listening])
    if server.startup_failed:
        raise typer.Exit(STARTUP_FAILURE)
    console.print("a2ad stopped.")


class Parsed(NamedTuple):
    """The flags read: durations, auth and the store."""

    grace: float
    keep: float | None
    timeout: float | None
    header_wait: float
    body_wait: float
    authenticator: CredentialAuthenticator | None
    store: TaskStore
    access: float | None  # --access-log: the share of requests logged; None: off


def _parse(flags: dict[str, Any], *, group: SqliteGroup | None = None) -> Parsed:
    """Raises ValueError for a usage error. ``group``: this process is a member of
    a group serving a SQLite file (``--workers``)."""
    rate_limit = flags["rate_limit"]
    if not math.isfinite(rate_limit):
        raise ValueError(f"--rate-limit {rate_limit}: give a number of requests a second")
    if flags["dashboard"]:
        try:
            check_dashboard_path(flags["dashboard_path"])
        except ValueError as exc:
            raise ValueError(f"--dashboard-path: {exc}") from None
    _check_tracing(flags["tracing"])
    task_store = store_from_url(flags["store"], max_tasks=flags["max_tasks"], group=group)
    if flags["no_run"]:
        workers_store(task_store, "a2ad serve --no-run")
    return Parsed(
        grace=_duration(parse_duration, flags["shutdown_grace"], "--shutdown-grace"),
        keep=_duration(parse_optional_duration, flags["retention"], "--retention"),
        timeout=_duration(parse_optional_duration, flags["task_timeout"], "--task-timeout"),
        header_wait=_duration(_positive_duration, flags["header_timeout"], "--header-timeout"),
        body_wait=_duration(_positive_duration, flags["body_timeout"], "--body-timeout"),
        authenticator=authenticator_from_flags(flags),
        store=task_store,
        access=access_fraction(flags["access_log"]),
    )


def _check_tracing(exporter: str) -> None:
    """Raises ValueError for a --tracing value a2ad can't honour."""
    if exporter not in ("off", "otlp", "console"):
        raise ValueError(f"--tracing {exporter}: give off, otlp or console")
    needed = ["opentelemetry.sdk.trace"]
    if exporter == "otlp":
        needed.append("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    for module in needed if exporter != "off" else []:
        try:
            # Imported only with tracing on: off costs nothing, not even the import.
            importlib.import_module(module)
        except ImportError:
            raise ValueError(
                f"--tracing {exporter}: {module} is not installed; pip install 'a2ad[otel]'"
            ) from None


def _metrics(
    flags: dict[str, Any], listening: socket.socket | None, share: str | None
) -> Metrics | None:
    """What ``--metrics`` and ``--metrics-port`` ask for; ``share``: the
    directory of a group's processes (``--workers``)."""
    if not flags["metrics"]:
        return None
    metrics = Metrics(share=share)
    if listening is not None:
        metrics.listen(listening)
    return metrics


def _application(
    flags: dict[str, Any],
    parsed: Parsed,
    the_agent: Agent | dict[str, Agent],
    key: bytes,
    *,
    metrics: Metrics | None = None,
) -> A2AApp:
    application = create_app(
        the_agent,
        default_agent=flags["default_agent"],
        store=parsed.store,
        shutdown_grace=parsed.grace,
        retention_seconds=parsed.keep,
        task_timeout=parsed.timeout,
        lease_seconds=flags["lease_seconds"],
        allow_private_webhooks=flags["allow_private_webhooks"],
        secret_key=key,
        authenticator=parsed.authenticator,
        expose_internal_parts=flags["expose_internal_parts"],
        max_body_bytes=flags["max_body_bytes"],
        max_parts=flags["max_parts"],
        max_part_bytes=flags["max_part_bytes"],
        max_history=flags["max_history"],
        max_artifacts=flags["max_artifacts"],
        max_tasks_per_principal=flags["max_tasks_per_principal"],
        max_streams_per_principal=flags["max_streams_per_principal"],
        rate_limit=flags["rate_limit"],
        rate_burst=flags["rate_burst"],
        runs_agents=not flags["no_run"],
        agent_threads=flags["agent_threads"],
        dashboard_path=flags["dashboard_path"] if flags["dashboard"] else None,
        metrics=metrics,
    )
    # Every request gets an id, and every line logged its context (cli/logs.py).
    application.observers.append(RequestLog(access=parsed.access))
    engine = application.engine
    engine.turn_observers.append(TurnLogContext(engine.agents))
    if flags["tracing"] != "off":
        from ..server.tracing import serve_tracing

        serve_tracing(application, flags["tracing"])
    return application


def _config(flags: dict[str, Any], parsed: Parsed, application: A2AApp) -> uvicorn.Config:
    # After the usage checks, so that a usage error stays one line.
    limits = ConnectionLimits(
        max_connections=fit_to_fd_limit(flags["max_connections"], raise_fd_limit()),
        max_header_bytes=flags["max_header_bytes"],
        header_timeout=parsed.header_wait,
        body_timeout=parsed.body_wait,
    )
    log_level = flags["log_level"]
    return uvicorn.Config(
        application,
        http=protocol_class(limits),
        host=flags["host"],
        port=flags["port"],
        log_level=log_level if log_level != "info" else "warning",
        log_config=None,  # uvicorn's lines go through a2ad's log format (cli/logs.py)
        access_log=False,  # a2ad writes its own (--access-log)
        # a2ad has shut down before uvicorn starts to (see _Server): what is left
        # is sending the last bytes, which server/bindings/sse.py bounds at 3 s.
        timeout_graceful_shutdown=5,
        lifespan="on",
    )


def _banner(
    flags: dict[str, Any], parsed: Parsed, the_agent: Agent | dict[str, Agent], base: str
) -> list[str]:
    task_store, authenticator = parsed.store, parsed.authenticator
    cap = getattr(task_store, "max_tasks", None)
    served = the_agent if isinstance(the_agent, dict) else {"": the_agent}
    default = flags["default_agent"] or next(iter(served))
    what = (
        f"agent [bold]{escape(served[default].name)}[/bold]"
        if len(served) == 1
        else f"{len(served)} agents (default [bold]{escape(default)}[/bold])"
    )
    workers = flags["workers"]
    banner = [
        f"a2ad serving {what} "
        f"(store {escape(_where(task_store, flags['store']))}, "
        f"{'at most ' + plural(cap, 'task') if cap else 'no task cap'}"
        f"{f', {workers} processes' if workers > 1 else ''})",
        f"  JSON-RPC:   {base}/  (also {base}/a2a)",
        f"  Agent card: {base}/.well-known/agent-card.json",
        *(
            [f"  Dashboard:  {base}{escape(flags['dashboard_path'].rstrip('/'))}"]
            if flags["dashboard"]
            else []
        ),
        *(
            f"  Agent {escape(name)}: {base}/agents/{escape(name)}/  ({escape(one.name)})"
            for name, one in served.items()
            if name
        ),
        f"  Auth:       {escape(authenticator.describe())}"
        if authenticator is not None
        else "  Auth:       off (every caller is anonymous; --auth keys.toml turns it on)",
        "  Press Ctrl-C to stop.",
    ]
    if flags["no_run"]:
        banner.insert(
            -1, "  Agents:     run by `a2ad worker` processes on this store, not here (--no-run)"
        )
    if flags["expose_internal_parts"]:
        banner.insert(
            -1, "  Internal parts: shown to every caller and webhook (--expose-internal-parts)"
        )
    host = flags["host"]
    if authenticator is None and not _loopback(host):
        banner.append(
            f"[bold red]warning:[/bold red] listening on {escape(host)} without auth: anyone "
            "who can reach this address can send, read and cancel every task. "
            "Turn auth on (--auth keys.toml, --auth-jwt-jwks ...) or listen on 127.0.0.1."
        )
    for name, one in served.items():
        problem = getattr(one, "config_problem", None)  # the LLM agents' missing settings
        if problem:
            called = f"{one.name} ({name})" if name else one.name
            banner.append(
                f"[bold yellow]warning:[/bold yellow] agent {escape(called)} can't answer: "
                f"{escape(problem)}"
            )
    return banner


def _fail(problem: object, code: int) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(str(problem))}", soft_wrap=True)
    raise typer.Exit(code) from None


def _find_modules_here() -> None:
    # Like `python -m`, find the user's agent module in the current directory.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def workers_store(task_store: object, command: str) -> None:
    """Raise ValueError unless ``task_store`` can hold turns for workers."""
    if not isinstance(task_store, Turns):
        raise ValueError(
            f"{command} needs a PostgreSQL store (--store postgresql://user@host:5432/db): "
            "fronts and workers meet in the database, where the front leaves each task for a "
            "worker to take; a SQLite file or memory can't be shared with them that way"
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def _where(task_store: object, url: str) -> str:
    """The store as the banner names it: a SQLite file by its absolute path, a
    database by its URL without the password."""
    path = getattr(task_store, "path", None)
    if isinstance(path, str):
        return f"sqlite {os.path.abspath(path)}"
    shown = getattr(task_store, "url", None)
    return shown if isinstance(shown, str) else url


def _listen(host: str, port: int) -> socket.socket:
    """The socket uvicorn serves on, bound before the agent is built so that the
    agent can be told where it is served (with port 0, the port the system chose)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


def _url(listening: socket.socket) -> str:
    host, port = listening.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _load_agents(
    specs: list[str], default: str | None, base: str, model: str | None
) -> Agent | dict[str, Agent]:
    """The agents ``--agent`` names: one SPEC, or several NAME=SPEC (each told
    the server's URL: agent NAME is at /agents/NAME/ beneath it). Raises
    ValueError for a usage error."""
    named = [spec.partition("=") for spec in specs]
    if len(specs) == 1 and not named[0][1]:
        if default is not None:
            raise ValueError("--default-agent: name one of several --agent NAME=SPEC")
        return load_agent(specs[0], _agent_settings(base, model))
    agents: dict[str, Agent] = {}
    for name, equals, spec in named:
        if not equals or not name or not spec:
            raise ValueError(
                "--agent: to serve several agents, give each as NAME=SPEC "
                f"(e.g. --agent stock=pkg.stock); not {name + equals + spec!r}"
            )
        if name in agents:
            raise ValueError(f"--agent: {name!r} is named twice")
        check_agent_name(name)
        agents[name] = load_agent(spec, _agent_settings(base, model))
    if default is not None and default not in agents:
        raise ValueError(f"--default-agent {default!r} is not one of {', '.join(agents)}")
    return agents


def _agent_settings(base: str, model: str | None) -> AgentSettings:
    """What the agent may need, from the environment, read here and only here."""
    env = os.environ
    managed = [url.strip().rstrip("/") for url in env.get(ENV_MANAGED_URLS, "").split(",")]
    return AgentSettings(
        server_url=env.get(ENV_URL) or base,
        model=model or env.get(ENV_MODEL) or None,
        llm_base_url=env.get(ENV_BASE_URL) or None,
        llm_api_key=env.get(ENV_API_KEY) or None,
        managed_urls=tuple(url for url in managed if url),
        token=env.get(ENV_TOKEN) or None,
        agent_urls=agent_urls(env),
    )


_AGENT_URL = re.compile(r"A2AD_([A-Z0-9]+(?:_[A-Z0-9]+)*)_URL")


def agent_urls(env: Mapping[str, str]) -> dict[str, str]:
    """``$A2AD_<NAME>_URL`` as {name: URL}: where the agents an agent calls are."""
    found = {}
    for key, value in env.items():
        match = _AGENT_URL.fullmatch(key)
        if match and value.strip():
            found[match.group(1).lower()] = value.strip().rstrip("/")
    return found


def _positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if not 0 < seconds < math.inf:
        raise ValueError(f"{text!r}: give a duration above 0, e.g. 10s")
    return seconds


def _duration(parse: Callable[[str], T], text: str, flag: str) -> T:
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
