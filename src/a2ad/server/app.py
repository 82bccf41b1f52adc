"""The ASGI application: routes, lifespan, and ``create_app``.

JSON-RPC at ``/`` and ``/a2a``, the agent card at its well-known paths, the
token usage report at ``/a2ad/usage`` (reads/usage.py), and every other path to the
HTTP+JSON binding (which answers 404 for one it lacks).
With an authenticator, every request but the card's is authenticated first
(gate.py), also one for an agent the server lacks, before its 404 names the
agents there: its Caller goes in the scope, or it is answered 401.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..adapters import adapt
from ..adapters.function import FunctionAgent
from ..agent import Agent, RequestContext
from ..agents.demo import DemoAgent
from ..agents.echo import EchoAgent
from ..agents.settings import AgentSettings
from ..engine import AgentStartError, Engine
from ..engine.delegation import Delegations
from ..engine.push import PushPolicy
from ..engine.secrets import WebhookSecrets, server_key
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
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY, StoreError, TaskStore
from ..store.memory import DEFAULT_MAX_TASKS, MemoryStore
from . import audit
from .auth import Authenticator
from .bindings.jsonrpc import JsonRpcEndpoint
from .bindings.rest import RestEndpoint
from .bindings.sse import KEEPALIVE_SECONDS
from .dashboard import DEFAULT_PATH as DASHBOARD_PATH
from .dashboard import DashboardEndpoint
from .delegation import DelegatingAuthenticator
from .errors import error_body
from .gate import JSONRPC_PATHS, admit
from .handler import ExtendedCardCheck, RequestHandler, allow_everyone
from .health import HEALTH_PATHS, HealthEndpoint
from .limits import (
    MAX_BODY_BYTES,
    MAX_PART_BYTES,
    Limits,
    RateLimiter,
    StreamSlots,
    caller_key,
    retry_headers,
)
from .metrics import METRICS_PATH, Metrics, MetricsEndpoint
from .observed import RECORD_KEY, REQUEST_ID_HEADER, RequestObserver, RequestRecord
from .reads.activity import ACTIVITY_PATH, ActivityEndpoint
from .reads.changes import CHANGES_PATH, ChangesEndpoint
from .reads.timeline import TIMELINE_PREFIX, TimelineEndpoint, timeline_task_id
from .reads.usage import UsageEndpoint
from .types import Message, Receive, Scope, Send, caller_of, respond
from .well_known import CardEndpoint

__all__ = ["A2AApp", "authenticated_only", "check_agent_name", "create_app", "load_agent"]

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


BUILT_IN_AGENTS: dict[str, type[Agent]] = {"echo": EchoAgent, "demo": DemoAgent}  # --agent NAME
SDK_PREFIX = "a2a-sdk"  # --agent a2a-sdk:pkg.module:executor (not a module name: it has a dash)


class A2AApp:
    """The a2ad ASGI app. ``engine`` is open from construction; the ASGI lifespan
    (or ``aclose``) stops running agents and closes the store. With an
    ``authenticator``, requests other than the card's need a credential. Every
    request but the card's is held to ``limits`` (server/limits.py); the rate
    limiter's clock is ``rate_clock`` (monotonic seconds)."""

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
    ) -> None:
        self.engine = engine
        self.authenticator = authenticator
        self.agent = engine.agent
        self.store = engine.store
        self.limits = limits if limits is not None else Limits()
        self._rate = (
            RateLimiter(self.limits.rate_limit, self.limits.rate_burst, clock=rate_clock)
            if self.limits.rate_limit
            else None
        )
        streams = StreamSlots(self.limits.max_streams_per_principal)
        schemes = authenticator.schemes if authenticator is not None else None

        def served(name: str) -> _Served:
            handler = RequestHandler(
                engine,
                extended_card_check=extended_card_check,
                security_schemes=schemes,
                expose_internal_parts=expose_internal_parts,
                limits=self.limits,
                agent=name,
            )
            return _Served(
                JsonRpcEndpoint(
                    handler,
                    limits=self.limits,
                    streams=streams,
                    keepalive_seconds=keepalive_seconds,
                ),
                RestEndpoint(
                    handler,
                    limits=self.limits,
                    streams=streams,
                    keepalive_seconds=keepalive_seconds,
                ),
                CardEndpoint(engine.agents[name], schemes=schemes, push=engine.push is not None),
                ChangesEndpoint(handler, streams=streams),
                TimelineEndpoint(handler),
                ActivityEndpoint(handler),
            )

        # Each agent at /agents/<name>/ (named ones), the default one at / too.
        self._served = {name: served(name) for name in engine.agents}
        self._default = self._served[engine.default_agent]
        self._usage = UsageEndpoint(engine)
        self._health = HealthEndpoint(engine)
        self._dashboard = (
            DashboardEndpoint(
                dashboard_path, agents=list(engine.agents), auth=authenticator is not None
            )
            if dashboard_path is not None
            else None
        )
        # Told of every request (observed.py): metrics, access logs, tracing.
        self.observers: list[RequestObserver] = []
        # /metrics (metrics.py): here, unless on a port of its own.
        self.metrics = metrics
        self._metrics: MetricsEndpoint | None = None
        if metrics is not None:
            metrics.attach(engine)
            self.observers.append(metrics)
            if metrics.listener is None:
                self._metrics = MetricsEndpoint(metrics)

    async def aclose(self) -> None:
        """Stop the agents at once, end the streams, close the store."""
        await self.engine.aclose()

    def begin_shutdown(self, *, graceful: bool = True) -> asyncio.Future[None]:
        """Start the shutdown without waiting for it: new messages are refused,
        running tasks get the shutdown grace to finish (unless not ``graceful``),
        then the rest fail and every open stream sends its task's final event and
        ends. Returns the shutdown's future, the one the ASGI lifespan shutdown
        (or ``aclose``) awaits; a later call returns it too, and one with
        ``graceful=False`` cuts the grace short. Call it on the app's event loop
        (from a signal handler, through ``loop.call_soon_threadsafe``)."""
        return self.engine.begin_shutdown(graceful=graceful)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):  # mounted (Starlette Mount, uvicorn --root-path)
            path = path[len(root) :]
        path = path.rstrip("/") or "/"
        record = scope[RECORD_KEY] = RequestRecord(path)
        if not self.observers:
            await self._route(path, root, record, scope, receive, send)
            return
        tokens = [observer.began(record, scope) for observer in self.observers]

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                if record.request_id:
                    echoed = (REQUEST_ID_HEADER, record.request_id.encode("latin-1"))
                    message = {**message, "headers": [*message.get("headers", ()), echoed]}
            await send(message)

        try:
            await self._route(path, root, record, scope, receive, noted)
        finally:
            for observer, token in zip(reversed(self.observers), reversed(tokens), strict=True):
                observer.ended(record, token)

    async def _route(
        self,
        path: str,
        root: str,
        record: RequestRecord,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        method = scope["method"]
        if path in HEALTH_PATHS:  # public: a probe has no credential, and isn't rate limited
            record.binding = "health"
            await self._health(path, scope, send)
            return
        if self._dashboard is not None and self._dashboard.serves(path):
            record.binding = "dashboard"  # public: static files; its API calls carry auth
            await self._dashboard(path, scope, send)
            return
        if path == METRICS_PATH and self._metrics is not None:
            record.binding = "metrics"
            await self._serve_metrics(path, scope, receive, send)
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
        if self.authenticator is not None and not await admit(
            self.authenticator, path, scope, send
        ):
            return
        if self._rate is not None:
            try:
                self._rate.take(caller_key(caller_of(scope), scope))
            except QuotaExceededError as exc:
                record.code = exc.code
                audit.refused(scope, exc, method=f"{method} {path[:200]}")
                await self._too_many(exc, path, send)
                return
        if path in JSONRPC_PATHS:
            if method == "POST":
                await served.jsonrpc(scope, receive, send)
                return
            error = InvalidRequestError(
                f"{method} {path}: the A2A JSON-RPC endpoint takes POST requests; "
                f"the agent card is at GET {CARD_PATHS[0]}"
            )
            await respond(send, 405, encode_error(None, error), headers=[(b"allow", b"POST")])
            return
        if path == USAGE_PATH:
            await self._usage(scope, send)
            return
        if path == CHANGES_PATH:
            await served.changes(scope, receive, send)
            return
        if path.startswith(TIMELINE_PREFIX) and (task_id := timeline_task_id(path)):
            await served.timeline(task_id, scope, send)
            return
        if path == ACTIVITY_PATH:
            await served.activity(scope, send)
            return
        await served.rest.serve(path, scope, receive, send)

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
                audit.refused(scope, error, method=f"{scope['method']} {path}")
                await respond(send, 403, error_body(error, v03=False))
                return
        await self._metrics(scope, receive, send)

    async def _no_agent(self, scope: Scope, send: Send, name: str, method: str, path: str) -> None:
        scope[RECORD_KEY].code = MethodNotFoundError.code
        names = ", ".join(n for n in self._served if n) or "none (one agent, at /)"
        error = MethodNotFoundError(
            f"{method} {path}: this server has no agent {name!r}; its agents: {names}",
            metadata={"agent": name[:256]},
        )
        audit.refused(scope, error, method=f"{method} {path[:200]}")
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
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.engine.start()
                except (StoreError, AgentStartError) as exc:  # the user's to fix, not a bug
                    log.error("startup failed: %s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                except Exception as exc:
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                if self.metrics is not None:
                    self.metrics.start_sharing()
                    if self.metrics.listener is not None:
                        await self.metrics.listener.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.metrics is not None and self.metrics.listener is not None:
                    await self.metrics.listener.aclose()
                await self.engine.aclose(graceful=True)
                if self.metrics is not None:
                    self.metrics.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(
    agent: Agent | Mapping[str, Agent] | None = None,
    *,
    default_agent: str | None = None,
    store: TaskStore | None = None,
    max_tasks: int = DEFAULT_MAX_TASKS,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_parts: int = 256,
    max_part_bytes: int = MAX_PART_BYTES,
    max_history: int = MAX_HISTORY,
    max_artifacts: int = MAX_ARTIFACTS,
    max_tasks_per_principal: int = 0,
    max_streams_per_principal: int = 0,
    rate_limit: float = 0.0,
    rate_burst: int = 0,
    rate_clock: Callable[[], float] = time.monotonic,
    stream_buffer: int = 1024,
    shutdown_grace: float = 10.0,
    retention_seconds: float | None = None,
    lease_seconds: float = 15.0,
    task_timeout: float | None = None,
    keepalive_seconds: float = KEEPALIVE_SECONDS,
    allow_private_webhooks: bool = False,
    push_policy: PushPolicy | None = None,
    secret_key: bytes | None = None,
    extended_card_check: ExtendedCardCheck | None = None,
    authenticator: Authenticator | None = None,
    expose_internal_parts: bool = False,
    runs_agents: bool = True,
    agent_threads: int = 0,
    dashboard_path: str | None = DASHBOARD_PATH,
    metrics: Metrics | None = None,
) -> A2AApp:
    """An ASGI app serving ``agent`` (default: the echo agent) over A2A; or
    several agents by name (``{"stock": ..., "pricing": ...}``), each at
    ``/agents/<name>/`` (its JSON-RPC endpoint, its HTTP+JSON paths and its card
    beneath), and ``default_agent`` (else the first) at ``/`` too. They share
    one store and one engine; a task belongs to the agent it was sent to, and is
    reached only there.

    ``store`` defaults to a MemoryStore holding at most ``max_tasks`` tasks;
    ``stream_buffer`` is how many events a slow SSE reader may fall behind
    before it is dropped. At shutdown, running tasks get ``shutdown_grace``
    seconds to finish before they are failed. ``retention_seconds`` deletes
    terminal tasks that long after their last update. A task whose server died
    is failed ``lease_seconds`` after that server's last heartbeat. A task not
    finished ``task_timeout`` seconds after it was created (or by an earlier
    ``metadata.deadline`` or ``metadata.timeoutSeconds`` its message sets) is
    failed. An SSE
    stream with nothing to send for ``keepalive_seconds`` gets a ``: keep-alive``
    comment, so that proxies and clients do not take it for dead. Push
    notifications are delivered as ``push_policy`` says (retries, timeout,
    concurrency: engine/push.py), and to webhooks on loopback, private or
    link-local addresses only with ``allow_private_webhooks``. Their tokens and
    credentials are stored encrypted with ``secret_key`` (32 bytes; by default
    the key in ``<file>-a2ad.key`` beside a SQLite store's file, made if
    missing, or a random one for a store that keeps nothing past the process;
    engine/secrets.py). An agent's
    extended card (``Agent.extended_card``) goes to callers for whom
    ``extended_card_check(request_context)`` (a function, or an async one) is
    true; by default every caller without an ``authenticator``, and
    authenticated callers only with one. An ``authenticator`` (server/auth.py)
    makes every request but the agent card's prove who sent it, and the card
    declare how. Parts an agent marks internal (protocol/internal.py) are
    stored but hidden from callers other than operators, and from webhooks,
    unless ``expose_internal_parts``. With ``runs_agents`` False the app is a
    front: it runs no agent, and queues every turn in ``store`` (PostgreSQL)
    for the workers (``a2ad worker``) that run it (engine/remote.py). The task
    dashboard (server/dashboard/) is served beneath ``dashboard_path`` (None:
    not at all). With ``agent_threads``, blocking agent code runs in that many
    threads at once (engine/agent_threads.py; 0: the loop's default executor).
    With ``metrics`` (server/metrics.py), ``GET /metrics`` reports what the
    app did (for operators only, with an ``authenticator``), unless
    ``metrics.listen`` moved it to a socket of its own.

    Limits (docs/protocol.md, "Limits"): a request body of at most
    ``max_body_bytes`` (413); a message of at most ``max_parts`` parts, each at
    most ``max_part_bytes`` (a text's UTF-8, a data part's JSON, a file's raw
    bytes; -32602 naming the part); a task keeps its newest ``max_history``
    messages and at most ``max_artifacts`` artifacts. Per principal (an
    anonymous caller: per remote address, and for tasks all anonymous callers
    together), 0 meaning no limit: ``max_tasks_per_principal`` tasks whose turn
    is running, ``max_streams_per_principal`` open streams, and ``rate_limit``
    requests a second in bursts of ``rate_burst`` (default: the rate, rounded
    up), all refused over it with HTTP 429 and -32000 ``QUOTA_EXCEEDED``.
    Raises ValueError for a limit out of its range."""
    limits = Limits(
        max_body_bytes=max_body_bytes,
        max_parts=max_parts,
        max_part_bytes=max_part_bytes,
        max_history=max_history,
        max_artifacts=max_artifacts,
        max_tasks_per_principal=max_tasks_per_principal,
        max_streams_per_principal=max_streams_per_principal,
        rate_limit=rate_limit,
        rate_burst=rate_burst,
    )
    task_store = store if store is not None else MemoryStore(max_tasks=max_tasks)
    engine = Engine(
        _agents(agent, default_agent),
        task_store,
        stream_buffer=stream_buffer,
        shutdown_grace=shutdown_grace,
        retention_seconds=retention_seconds,
        lease_seconds=lease_seconds,
        task_timeout=task_timeout,
        push_policy=push_policy,
        allow_private_webhooks=allow_private_webhooks,
        max_history=max_history,
        max_artifacts=max_artifacts,
        max_tasks_per_principal=max_tasks_per_principal,
        runs_agents=runs_agents,
        agent_threads=agent_threads,
    )
    if engine.push is not None or authenticator is not None:
        key = secret_key if secret_key is not None else server_key(task_store)
    if authenticator is not None:  # agents' calls to this server, as their callers
        engine.delegations = Delegations(key)
        authenticator = DelegatingAuthenticator(authenticator, engine.delegations)
    if engine.push is not None:
        engine.push.secrets = WebhookSecrets(key)
        engine.push.expose_internal_parts = expose_internal_parts
    if extended_card_check is None:
        extended_card_check = allow_everyone if authenticator is None else authenticated_only
    return A2AApp(
        engine,
        limits=limits,
        keepalive_seconds=keepalive_seconds,
        extended_card_check=extended_card_check,
        authenticator=authenticator,
        expose_internal_parts=expose_internal_parts,
        rate_clock=rate_clock,
        dashboard_path=dashboard_path,
        metrics=metrics,
    )


def authenticated_only(request: RequestContext) -> bool:
    """The extended-card check with auth on: callers whose credentials proved them."""
    return request.caller.authenticated


def _agents(
    agent: Agent | Mapping[str, Agent] | None, default: str | None
) -> Agent | dict[str, Agent]:
    """``agent`` for the engine: one agent, or the named ones with the default first."""
    if agent is None:
        return EchoAgent()
    if not isinstance(agent, Mapping):
        if default is not None:
            raise ValueError("default_agent names one of several agents; this app has one")
        return agent
    if not agent:
        raise ValueError("give at least one agent")
    for name in agent:
        check_agent_name(name)
    if default is None:
        return dict(agent)
    if default not in agent:
        raise ValueError(f"default_agent {default!r} is not one of {', '.join(agent)}")
    return {default: agent[default], **{n: a for n, a in agent.items() if n != default}}


_AGENT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_agent_name(name: str) -> None:
    """Raise ValueError unless ``name`` may name an agent (a path segment)."""
    if not _AGENT_NAME.fullmatch(name):
        raise ValueError(
            f"agent name {name!r}: use 1 to 64 letters, digits, '-' or '_' "
            "(it is a path segment: /agents/<name>/)"
        )


def load_agent(spec: str, settings: AgentSettings | None = None) -> Agent:
    """``echo`` or ``demo`` (the built-in agents), or ``package.module:attr``
    naming an Agent instance, an Agent class (instantiated with no arguments),
    or a function (``adapters.function``: ``async def run(ctx)``, or a function
    of the user's text, async, sync or an async generator); a bare
    ``package.module`` means its ``agent`` attribute. ``a2a-sdk:`` before the
    name loads an a2a-sdk AgentExecutor (instance or class) instead
    (``adapters.a2a_sdk``). An object of a framework that ``adapters.adapt``
    recognizes (a compiled LangGraph graph, a PraisonAI agent, a Google ADK agent)
    is served through its adapter. A class, or a plain function returning an agent,
    that has a ``settings`` parameter is called with ``settings`` (default
    ``AgentSettings()``): how ``a2ad serve`` passes what it read from its flags
    and the environment."""
    if spec in BUILT_IN_AGENTS:
        return BUILT_IN_AGENTS[spec]()
    framework, sep, target = spec.partition(":")
    if sep and framework == SDK_PREFIX:
        try:
            from ..adapters.a2a_sdk import SdkExecutorAgent
        except ImportError as exc:
            raise ValueError(
                f"--agent {spec!r} needs the a2a-sdk: pip install 'a2ad[a2a-sdk]' ({exc})"
            ) from None
        executor, attr = _load_object(spec, target, settings)
        try:
            return SdkExecutorAgent(executor, name=attr)
        except TypeError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    obj, attr = _load_object(spec, spec, settings)
    if isinstance(obj, Agent):
        return obj
    adapted = adapt(obj, name=attr)  # a framework's agent: a LangGraph graph, ...
    if adapted is not None:
        return adapted
    if hasattr(obj, "run") and callable(obj.run):  # not an Agent: its card is a function's
        obj = obj.run
    if callable(obj):
        try:
            return FunctionAgent(obj, name=attr)
        except TypeError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    raise ValueError(f"--agent {spec!r}: {attr!r} is not an agent (it needs an async run(ctx))")


def _load_object(spec: str, target: str, settings: AgentSettings | None) -> tuple[Any, str]:
    """What ``target`` (``package.module:attr``, or ``package.module`` for its
    ``agent``) names, a class instantiated and a factory called; and its name."""
    module_name, sep, attr = target.partition(":")
    if not sep:
        attr = "agent"
    if not module_name or not attr:
        raise ValueError(
            f"--agent {spec!r}: use 'echo', 'demo', 'package.module:attr' or 'package.module' "
            f"(with an `agent` attribute), or '{SDK_PREFIX}:package.module:attr'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--agent {spec!r}: can't import {module_name!r}: {exc}") from None
    try:
        obj: Any = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"--agent {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    if _takes_settings(obj):
        obj = obj(settings=settings if settings is not None else AgentSettings())
    elif isinstance(obj, type):
        obj = obj()
    return obj, attr


def _takes_settings(obj: Any) -> bool:
    factory = isinstance(obj, type) or (
        inspect.isfunction(obj) and not inspect.iscoroutinefunction(obj)
    )
    try:
        return factory and "settings" in inspect.signature(obj).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin)
        return False
