"""``a2ad serve``: run an agent under uvicorn, print where, stop cleanly on Ctrl-C.

The flags (serve_options.py), with the environment and the configuration file
(config.py), are read once into ``ServeSettings`` (serve_settings.py); the
agents get what they need as ``AgentSettings`` (agent_specs.py); the app is
built from those in one pass (a2ad/assembly.py).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import signal
import socket
import sys
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import typer
import uvicorn
from rich.markup import escape

from ..agent import Agent
from ..assembly import assemble
from ..engine import AgentStartError
from ..engine.secrets import KeyFileError, server_key
from ..server.app import A2AApp
from ..server.connections import fit_to_fd_limit, protocol_class, raise_fd_limit
from ..server.dashboard import DEFAULT_PATH as DASHBOARD_PATH
from ..server.limits import MAX_BODY_BYTES, MAX_PART_BYTES
from ..server.metrics import Metrics
from ..store import DEFAULT_STORE
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY, StoreError, TaskStore
from ..wording import plural
from . import serve_options as opt
from .agent_specs import load_agents
from .agent_threads import AGENT_THREADS, AgentThreadsOption
from .collector import settle_collector
from .logs import access_fraction, configure_logging, keep_logging
from .serve_grpc import grpc_banner, grpc_server, with_grpc_port
from .serve_settings import ServeSettings, open_store, read_settings
from .startup import READY, STARTUP_FAILURE
from .terminal import make_console

if TYPE_CHECKING:
    from ..server.grpc_server import GrpcServer  # imported only with --grpc-port

__all__ = ["serve"]

console = make_console(stderr=True)
log = logging.getLogger("a2ad.serve")

_GRPC_GRACE_SECONDS = 1.0  # at the end, the time gRPC calls still open have to finish


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
    if the parent goes away. With ``--grpc-port``, the ``grpc`` listener starts
    once the engine has, and stops before the app does (after the shutdown
    has ended its streams)."""

    def __init__(
        self,
        config: uvicorn.Config,
        application: A2AApp,
        banner: list[str],
        control: socket.socket | None = None,
        grpc: GrpcServer | None = None,
    ) -> None:
        super().__init__(config)
        self.application = application
        self.grpc = grpc
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
            await self.application.lifetime.start()
            if self.grpc is not None:
                await self.grpc.start()
        except (StoreError, AgentStartError, OSError) as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            await self.application.aclose()
            self.startup_failed = self.should_exit = True
            return
        await super().startup(sockets=sockets)
        if self.started:
            settle_collector()
            presence = self.application.engine.presence  # a front's: is a worker connected?
            problem = presence.problem() if presence is not None else ""
            warn = [f"[bold yellow]warning:[/bold yellow] {escape(problem)}"] if problem else []
            for line in [*self.banner, *warn]:
                console.print(line)
            if self.control is not None:
                self.control.sendall(READY)
                self.loop.add_reader(self.control, self._parent_said)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.grpc is not None:  # its streams have ended with their tasks' final events
            await self.grpc.stop(grace=_GRPC_GRACE_SECONDS)
        await super().shutdown(sockets=sockets)

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
    host: opt.Host = "127.0.0.1",
    port: opt.Port = 8000,
    store: opt.Store = DEFAULT_STORE,
    agent: opt.Agent = ["echo"],  # noqa: B006 (typer passes a new list: this one is never changed)
    default_agent: opt.DefaultAgent = None,
    max_tasks: opt.MaxTasks = None,
    shutdown_grace: opt.ShutdownGrace = "10s",
    retention: opt.Retention = "off",
    task_timeout: opt.TaskTimeout = "off",
    stall_timeout: opt.StallTimeout = "off",
    lease_seconds: opt.LeaseSeconds = 15.0,
    no_run: opt.NoRun = False,
    no_worker_wait: opt.NoWorkerWait = "10s",
    agent_threads: AgentThreadsOption = AGENT_THREADS,
    max_connections: opt.MaxConnections = 1000,
    max_header_bytes: opt.MaxHeaderBytes = 65536,
    header_timeout: opt.HeaderTimeout = "10s",
    body_timeout: opt.BodyTimeout = "30s",
    max_body_bytes: opt.MaxBodyBytes = MAX_BODY_BYTES,
    max_parts: opt.MaxParts = 256,
    max_part_bytes: opt.MaxPartBytes = MAX_PART_BYTES,
    max_history: opt.MaxHistory = MAX_HISTORY,
    max_artifacts: opt.MaxArtifacts = MAX_ARTIFACTS,
    max_tasks_per_principal: opt.MaxTasksPerPrincipal = 0,
    max_streams_per_principal: opt.MaxStreamsPerPrincipal = 0,
    rate_limit: opt.RateLimit = 0.0,
    rate_burst: opt.RateBurst = 0,
    allow_private_webhooks: opt.AllowPrivateWebhooks = False,
    expose_internal_parts: opt.ExposeInternalParts = False,
    secret_key_file: opt.SecretKeyFile = None,
    auth: opt.Auth = None,
    auth_jwt_jwks: opt.AuthJwtJwks = None,
    auth_jwt_issuer: opt.AuthJwtIssuer = None,
    auth_jwt_audience: opt.AuthJwtAudience = None,
    auth_jwt_principal_claim: opt.AuthJwtPrincipalClaim = "sub",
    auth_jwt_principal_prefix: opt.AuthJwtPrincipalPrefix = None,
    auth_jwt_tenant_claim: opt.AuthJwtTenantClaim = "tenant",
    auth_jwt_roles_claim: opt.AuthJwtRolesClaim = "roles",
    auth_jwt_oidc_url: opt.AuthJwtOidcUrl = None,
    workers: opt.Workers = 1,
    dashboard: opt.Dashboard = True,
    dashboard_path: opt.DashboardPath = DASHBOARD_PATH,
    log_level: opt.LogLevel = "info",
    log_format: opt.LogFormat = "json",
    access_log: opt.AccessLog = "errors",
    tracing: opt.Tracing = "off",
    metrics: opt.Metrics = True,
    metrics_port: opt.MetricsPort = None,
    grpc_port: opt.GrpcPort = None,
    grpc_tls_cert: opt.GrpcTlsCert = None,
    grpc_tls_key: opt.GrpcTlsKey = None,
    grpc_public_address: opt.GrpcPublicAddress = None,
    grpc_error_table: opt.GrpcErrorTable = "1.0.1",
    model: opt.Model = None,
    upstream_auth: opt.UpstreamAuth = None,
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
        settings = read_settings(flags)
        task_store = open_store(settings)
    except ValueError as exc:
        _fail(exc, 2)
    _serve(flags, settings, task_store)


def _serve(flags: dict[str, Any], settings: ServeSettings, task_store: TaskStore) -> None:
    """Listen, load the agents, read the key, then serve (one process, or a group)."""
    listening, metrics_listening = _sockets(settings)
    base = _url(listening)
    if settings.grpc is not None:
        try:
            grpc = with_grpc_port(settings.grpc, settings.host)
        except OSError as exc:
            listening.close()
            said = exc.strerror or str(exc)
            _fail(f"--grpc-port {settings.grpc.port}: can't listen on {settings.host}: {said}", 3)
        settings = replace(settings, grpc=grpc)
        flags["grpc_port"] = grpc.port  # a group's processes serve this one
    try:
        agents = load_agents(
            list(settings.agents),
            settings.default_agent,
            base,
            settings.model,
            settings.upstream_auth,
        )
        keep_logging()  # an agent's library may have reconfigured logging as it loaded
    except ValueError as exc:
        listening.close()
        _fail(exc, 2)
    try:  # after the usage checks: a usage error makes no key file
        key = server_key(task_store, settings.secret_key_file)
    except KeyFileError as exc:
        listening.close()
        _fail(exc, STARTUP_FAILURE)
    banner = _banner(settings, task_store, agents, base)
    if settings.workers > 1:
        # Imported here: a single process needs none of it.
        from .supervisor import Group

        group = Group(flags, listening, key, task_store, banner, metrics=metrics_listening)
        code = group.run()
        if code:
            raise typer.Exit(code)
        console.print("a2ad stopped.")
        return
    metrics = _metrics(settings, metrics_listening, None)
    application = assemble(agents, settings.app_settings(key, metrics), store=task_store)
    front = (
        grpc_server(settings.grpc, application, settings.host, base)
        if settings.grpc is not None
        else None
    )
    server = _Server(_config(settings, application), application, banner, grpc=front)
    server.run(sockets=[listening])
    if server.startup_failed:
        raise typer.Exit(STARTUP_FAILURE)
    console.print("a2ad stopped.")


def _sockets(settings: ServeSettings) -> tuple[socket.socket, socket.socket | None]:
    """The main port's socket and /metrics' own (``--metrics-port``), bound before
    the agents are built; a port that can't be had ends the command."""
    host, port = settings.host, settings.port
    try:
        listening = _listen(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            said = f"port {port} on {host} is in use; pass another --port (0: any free one)"
        else:
            said = f"can't listen on {host}:{port}: {exc.strerror or exc}"
        _fail(said, STARTUP_FAILURE)
    metrics_port = settings.metrics_port
    if not settings.metrics or metrics_port is None:
        return listening, None
    try:
        return listening, _listen(host, metrics_port)
    except OSError as exc:
        listening.close()
        said = exc.strerror or str(exc)
        _fail(f"--metrics-port {metrics_port}: can't listen on {host}: {said}", 2)


def _metrics(
    settings: ServeSettings, listening: socket.socket | None, share: str | None
) -> Metrics | None:
    """What ``--metrics`` and ``--metrics-port`` ask for; ``share``: the
    directory of a group's processes (``--workers``)."""
    if not settings.metrics:
        return None
    metrics = Metrics(share=share)
    if listening is not None:
        metrics.listen(listening)
    return metrics


def _config(settings: ServeSettings, application: A2AApp) -> uvicorn.Config:
    # After the usage checks, so that a usage error stays one line.
    asked = settings.connections
    limits = replace(
        asked, max_connections=fit_to_fd_limit(asked.max_connections, raise_fd_limit())
    )
    log_level = settings.log_level
    return uvicorn.Config(
        application,
        http=protocol_class(limits),
        host=settings.host,
        port=settings.port,
        log_level=log_level if log_level != "info" else "warning",
        log_config=None,  # uvicorn's lines go through a2ad's log format (cli/logs.py)
        access_log=False,  # a2ad writes its own (--access-log)
        # a2ad has shut down before uvicorn starts to (see _Server): what is left
        # is sending the last bytes, which server/bindings/sse.py bounds at 3 s.
        timeout_graceful_shutdown=5,
        lifespan="on",
    )


def _banner(
    settings: ServeSettings, task_store: TaskStore, the_agent: Agent | dict[str, Agent], base: str
) -> list[str]:
    authenticator = settings.authenticator
    cap = getattr(task_store, "max_tasks", None)
    served = the_agent if isinstance(the_agent, dict) else {"": the_agent}
    default = settings.default_agent or next(iter(served))
    what = (
        f"agent [bold]{escape(served[default].name)}[/bold]"
        if len(served) == 1
        else f"{len(served)} agents (default [bold]{escape(default)}[/bold])"
    )
    workers = settings.workers
    banner = [
        f"a2ad serving {what} "
        f"(store {escape(_where(task_store, settings.store))}, "
        f"{'at most ' + plural(cap, 'task') if cap else 'no task cap'}"
        f"{f', {workers} processes' if workers > 1 else ''})",
        f"  JSON-RPC:   {base}/  (also {base}/a2a)",
        *([grpc_banner(settings.grpc, settings.host)] if settings.grpc is not None else []),
        f"  Agent card: {base}/.well-known/agent-card.json",
        *(
            [f"  Dashboard:  {base}{escape(settings.dashboard_path.rstrip('/'))}"]
            if settings.dashboard_path is not None
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
    if not settings.engine.runs_agents:
        banner.insert(
            -1, "  Agents:     run by `a2ad worker` processes on this store, not here (--no-run)"
        )
    if settings.engine.expose_internal_parts:
        banner.insert(
            -1, "  Internal parts: shown to every caller and webhook (--expose-internal-parts)"
        )
    host = settings.host
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
