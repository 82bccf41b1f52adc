"""The ASGI application: routes, and the lifespan (which the lifetime owns).

Built by the assembly (a2ad/assembly.py: ``assemble``, ``create_app``) from an
engine and what serves it; nothing is added to it after.

JSON-RPC at ``/`` and ``/a2a``, the agent card at its well-known paths, the
token usage report at ``/a2ad/usage`` (reads/usage.py), the agents' index at
``/agents`` (reads/agents.py), and every other path to the HTTP+JSON binding
(which answers 404 for one it lacks).
With an authenticator, every request but the card's is authenticated first
(gate.py), also one for an agent the server lacks, before its 404 names the
agents there: its Caller goes in the scope, or it is answered 401.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from .. import log_context
from ..agent import RequestContext
from ..engine import AgentStartError, Engine
from ..protocol.dialect import CARD_PATHS
from ..protocol.errors import (
    A2AError,
    InvalidRequestError,
    MethodNotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
)
from ..protocol.jsonrpc import encode_error
from ..protocol.usage import USAGE_PATH
from ..store.base import StoreError
from . import audit
from .auth import Authenticator
from .bindings.jsonrpc import JsonRpcEndpoint
from .bindings.rest import RestEndpoint
from .bindings.sse import KEEPALIVE_SECONDS
from .card import Interface
from .dashboard import DashboardEndpoint
from .errors import error_body
from .gate import JSONRPC_PATHS, admit
from .handler import ExtendedCardCheck, RequestHandler, allow_everyone
from .health import HEALTH_PATHS, HealthEndpoint
from .lifetime import Lifetime
from .limits import (
    Limits,
    RateLimiter,
    StreamSlots,
    caller_key,
    retry_headers,
)
from .metrics import METRICS_PATH, Metrics, MetricsEndpoint
from .observed import RECORD_KEY, RequestObserver, RequestRecord, observing
from .reads.activity import ACTIVITY_PATH, ActivityEndpoint
from .reads.agents import AGENTS_PATH, AgentsEndpoint
from .reads.changes import CHANGES_PATH, ChangesEndpoint
from .reads.timeline import TIMELINE_PREFIX, TimelineEndpoint, timeline_task_id
from .reads.usage import UsageEndpoint
from .types import Receive, Scope, Send, caller_of, respond
from .well_known import CardEndpoint

__all__ = ["A2AApp", "authenticated_only"]

log = logging.getLogger("a2ad.server")

AGENTS_PREFIX = "/agents/"  # each named agent beneath /agents/<name>/
A2AD_PREFIX = "/a2ad/"  # a2ad's own reads beside A2A: usage, changes, timeline, activity


class _Served(NamedTuple):
    """What serves one agent: its JSON-RPC and HTTP+JSON endpoints and its card."""

    jsonrpc: JsonRpcEndpoint
    rest: RestEndpoint
    card: CardEndpoint
    changes: ChangesEndpoint
    timeline: TimelineEndpoint
    activity: ActivityEndpoint


def _served(
    handler: RequestHandler,
    engine: Engine,
    name: str,
    limits: Limits,
    streams: StreamSlots,
    keepalive_seconds: float,
    schemes: Any,
) -> _Served:
    """The endpoints that serve agent ``name`` through ``handler`` (whose
    interfaces its card lists too)."""
    return _Served(
        JsonRpcEndpoint(
            handler, limits=limits, streams=streams, keepalive_seconds=keepalive_seconds
        ),
        RestEndpoint(handler, limits=limits, streams=streams, keepalive_seconds=keepalive_seconds),
        CardEndpoint(
            engine.agents[name],
            schemes=schemes,
            push=engine.push is not None,
            interfaces=handler.interfaces,
        ),
        ChangesEndpoint(handler, streams=streams),
        TimelineEndpoint(handler),
        ActivityEndpoint(handler),
    )


class A2AApp:
    """The a2ad ASGI app. ``engine`` is open from construction; the ASGI lifespan
    (or ``aclose``) stops running agents and closes the store. With an
    ``authenticator``, requests other than the card's need a credential. Every
    request but the card's is held to ``limits`` (server/limits.py); the rate
    limiter's clock is ``rate_clock`` (monotonic seconds). ``interfaces``: the
    bindings served on ports of their own beside it (gRPC), for the cards.

    A binding on a port of its own (bindings/grpc_service.py) serves the same
    agents through the app's own parts, so that a caller meets one server:
    ``handler(name)``, ``authenticator``, ``rate`` (None: no rate limit),
    ``streams`` (the callers' stream slots), ``limits``, ``began``/``ended``
    (its observers' calls, None for none)."""

    def __init__(
        self,
        engine: Engine,
        *,
        limits: Limits | None = None,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        extended_card_check: ExtendedCardCheck = allow_everyone,
        authenticator: Authenticator | None = None,
        expose_internal_parts: bool = False,
        rate_clock: Callable[[], float] = time.monotonic,
        dashboard_path: str | None = None,
        metrics: Metrics | None = None,
        observers: Sequence[RequestObserver] = (),
        lifetime: Lifetime | None = None,
        interfaces: Sequence[Interface] = (),
    ) -> None:
        self.engine = engine
        self.authenticator = authenticator
        self.agent = engine.agent
        self.store = engine.store
        self.limits = limits if limits is not None else Limits()
        self.rate = (
            RateLimiter(self.limits.rate_limit, self.limits.rate_burst, clock=rate_clock)
            if self.limits.rate_limit
            else None
        )
        # Neither authentication nor a rate limit: every request goes on unchecked.
        self._unchecked = authenticator is None and self.rate is None
        self.streams = streams = StreamSlots(self.limits.max_streams_per_principal)
        schemes = authenticator.schemes if authenticator is not None else None

        def served(name: str) -> _Served:
            handler = RequestHandler(
                engine,
                extended_card_check=extended_card_check,
                security_schemes=schemes,
                expose_internal_parts=expose_internal_parts,
                limits=self.limits,
                agent=name,
                interfaces=interfaces,
            )
            return _served(handler, engine, name, self.limits, streams, keepalive_seconds, schemes)

        # Each agent at /agents/<name>/ (named ones), the default one at / too.
        self._served = {name: served(name) for name in engine.agents}
        self._default = self._served[engine.default_agent]
        self._usage = UsageEndpoint(engine)
        self._agents = AgentsEndpoint(engine)
        self._health = HealthEndpoint(engine)
        self._dashboard = (
            DashboardEndpoint(
                dashboard_path, agents=list(engine.agents), auth=authenticator is not None
            )
            if dashboard_path is not None
            else None
        )
        # Told of every request (observed.py), in order: metrics, logs, tracing, ...
        self.observers: tuple[RequestObserver, ...] = tuple(observers)
        self.began, self.ended = observing(self.observers)
        # /metrics (metrics.py): here, unless on a port of its own.
        self.metrics = metrics
        self._metrics = (
            MetricsEndpoint(metrics) if metrics is not None and metrics.listener is None else None
        )
        # What starts and stops with the server: the engine, the metrics' work.
        self.lifetime = lifetime if lifetime is not None else Lifetime(engine, metrics)

    def handler(self, name: str) -> RequestHandler | None:
        """The request handler of agent ``name`` ("" for the one at /), or None."""
        served = self._served.get(name) if name else self._default
        return served.jsonrpc.handler if served is not None else None

    @property
    def agent_names(self) -> list[str]:
        """The named agents (those at /agents/<name>/), for messages."""
        return [name for name in self._served if name]

    async def aclose(self) -> None:
        """Stop the agents at once, end the streams, close the store."""
        await self.lifetime.aclose()

    def begin_shutdown(self, *, graceful: bool = True) -> asyncio.Future[None]:
        """Start the shutdown without waiting for it: new messages are refused,
        running tasks get the shutdown grace to finish (unless not ``graceful``),
        then the rest fail and every open stream sends its task's final event and
        ends. Returns the shutdown's future, the one the ASGI lifespan shutdown
        (or ``aclose``) awaits; a later call returns it too, and one with
        ``graceful=False`` cuts the grace short. Call it on the app's event loop
        (from a signal handler, through ``loop.call_soon_threadsafe``)."""
        return self.lifetime.begin_shutdown(graceful=graceful)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        # An HTTP request, served here rather than in a method of its own: one
        # coroutine fewer on every request.
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):  # mounted (Starlette Mount, uvicorn --root-path)
            path = path[len(root) :]
        path = path.rstrip("/") or "/"
        record = scope[RECORD_KEY] = RequestRecord(path)
        began = self.began
        if began is None:
            if log_context.request.get() is None:
                await self._route(path, root, record, scope, receive, send)
                return
            # Unobserved, the request has no record in the log context (not that
            # of a request whose agent called this app).
            outer = log_context.request.set(None)
            try:
                await self._route(path, root, record, scope, receive, send)
            finally:
                log_context.request.reset(outer)
            return
        # The request being served, for the lines logged meanwhile and for its
        # response's start (types.py response_start: the status, the id echoed).
        serving = log_context.request.set(record)
        token = began(record, scope)
        try:
            await self._route(path, root, record, scope, receive, send)
        finally:
            self.ended(record, token)  # type: ignore[misc]
            log_context.request.reset(serving)

    async def _route(
        self,
        path: str,
        root: str,
        record: RequestRecord,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        if path in JSONRPC_PATHS:  # the default agent's JSON-RPC: most requests, checked first
            record.binding = "JSONRPC"
            if self._unchecked or await self._admit(path, scope, send):
                await self._jsonrpc(self._default, path, scope, receive, send)
            return
        method = scope["method"]
        if path in HEALTH_PATHS:  # public: a probe has no credential, and isn't rate limited
            record.binding = "health"
            await self._health(path, scope, send)
            return
        dashboard = self._dashboard
        if dashboard is not None and (path == dashboard.path or path.startswith(dashboard.under)):
            record.binding = "dashboard"  # public: static files; its API calls carry auth
            await dashboard(path, scope, send)
            return
        if path == METRICS_PATH and self._metrics is not None:
            record.binding = "metrics"
            await self._serve_metrics(path, scope, receive, send)
            return
        if path == AGENTS_PATH:  # the index of the agents (reads/agents.py)
            record.binding = "a2ad"
            if self._unchecked or await self._admit(path, scope, send):
                await self._agents(scope, send)
            return
        served = self._default
        if path.startswith(AGENTS_PREFIX):
            name, _, rest = path[len(AGENTS_PREFIX) :].partition("/")
            named = self._served.get(name) if name else None
            if named is None:  # authenticated first: the agents are listed to callers only
                if self.authenticator is None or await admit(
                    self.authenticator, "/" + rest, scope, send
                ):
                    await self._no_agent(scope, send, name, method, path)
                return
            # Beneath it, as if mounted there: the agent's card names its own URLs.
            served, path = named, "/" + rest if rest else "/"
            record.agent = name
            scope = {**scope, "root_path": f"{root}{AGENTS_PREFIX}{name}"}
        if path in CARD_PATHS:  # public, with or without auth
            record.binding = "card"
            if method in ("GET", "HEAD"):
                await served.card(scope, send)
                return
            error: A2AError = InvalidRequestError(f"{method} {path}: the agent card takes GET")
            await respond(send, 405, encode_error(None, error), headers=[(b"allow", b"GET")])
            return
        if path in JSONRPC_PATHS:
            record.binding = "JSONRPC"
        elif path == USAGE_PATH:
            record.binding, record.method = "usage", "GetUsage"
        elif path.startswith(A2AD_PREFIX):
            record.binding = "a2ad"
        else:
            record.binding = "HTTP+JSON"
        if self._unchecked or await self._admit(path, scope, send):
            await self._serve(served, path, scope, receive, send)

    async def _admit(self, path: str, scope: Scope, send: Send) -> bool:
        """Whether the request may go on: authenticated (with an authenticator)
        and within the rate limit (with one); if not, it is answered here."""
        if self.authenticator is not None and not await admit(
            self.authenticator, path, scope, send
        ):
            return False
        if self.rate is not None:
            try:
                self.rate.take(caller_key(caller_of(scope), scope.get("client")))
            except QuotaExceededError as exc:
                scope[RECORD_KEY].code = exc.code
                method = f"{scope['method']} {path[:200]}"
                audit.refused(caller_of(scope), scope.get("client"), exc, method=method)
                await self._too_many(exc, path, send)
                return False
        return True

    @staticmethod
    def _jsonrpc(
        served: _Served, path: str, scope: Scope, receive: Receive, send: Send
    ) -> Awaitable[None]:
        """An admitted JSON-RPC request, to ``served``'s endpoint (its coroutine:
        no frame of this one between)."""
        method = scope["method"]
        if method == "POST":
            return served.jsonrpc(scope, receive, send)
        error: A2AError = InvalidRequestError(
            f"{method} {path}: the A2A JSON-RPC endpoint takes POST requests; "
            f"the agent card is at GET {CARD_PATHS[0]}"
        )
        return respond(send, 405, encode_error(None, error), headers=[(b"allow", b"POST")])

    def _serve(
        self, served: _Served, path: str, scope: Scope, receive: Receive, send: Send
    ) -> Awaitable[None]:
        """An admitted request, to the endpoint of ``served`` its path names: what
        to await (the endpoint's own coroutine, with no frame of this one between)."""
        if path in JSONRPC_PATHS:
            return self._jsonrpc(served, path, scope, receive, send)
        if path == USAGE_PATH:
            return self._usage(scope, send)
        if path == CHANGES_PATH:
            return served.changes(scope, receive, send)
        if path.startswith(TIMELINE_PREFIX) and (task_id := timeline_task_id(path)):
            return served.timeline(task_id, scope, send)
        if path == ACTIVITY_PATH:
            return served.activity(scope, send)
        return served.rest.serve(path, scope, receive, send)

    async def _serve_metrics(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """/metrics on the main port: with auth on, for operators only."""
        assert self._metrics is not None
        record = scope[RECORD_KEY]
        if self.authenticator is not None:
            caller = await admit(self.authenticator, path, scope, send)
            if caller is None:
                return
            if not caller.operator:
                error = PermissionDeniedError("GET /metrics: an operator's credential is needed")
                record.code = error.code
                audit.refused(
                    caller, scope.get("client"), error, method=f"{scope['method']} {path}"
                )
                await respond(send, 403, error_body(error, v03=False))
                return
        await self._metrics(scope, receive, send)

    async def _no_agent(self, scope: Scope, send: Send, name: str, method: str, path: str) -> None:
        scope[RECORD_KEY].code = MethodNotFoundError.code
        names = ", ".join(self.agent_names) or "none (one agent, at /)"
        error = MethodNotFoundError(
            f"{method} {path}: this server has no agent {name!r}; its agents: {names}",
            metadata={"agent": name[:256]},
        )
        audit.refused(caller_of(scope), scope.get("client"), error, method=f"{method} {path[:200]}")
        await respond(send, 404, error_body(error, v03=False))

    @staticmethod
    async def _too_many(exc: QuotaExceededError, path: str, send: Send) -> None:
        """429 with ``Retry-After``, in the terms of the path's binding."""
        if path in JSONRPC_PATHS:
            body = encode_error(None, exc)
        else:
            body = error_body(exc, v03=path.startswith("/v1/"))
        await respond(send, 429, body, headers=retry_headers(exc))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan: the assembled server's lifetime (lifetime.py)."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.lifetime.start()
                except (StoreError, AgentStartError) as exc:  # the user's to fix, not a bug
                    log.error("startup failed: %s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                except Exception as exc:
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.lifetime.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return


def authenticated_only(request: RequestContext) -> bool:
    """The extended-card check with auth on: callers whose credentials proved them."""
    return request.caller.authenticated
