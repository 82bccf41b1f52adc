"""Composition, once: from settings and agents to a server, in one pass.

``assemble`` builds, in order, the store (a MemoryStore unless one is given),
the bus (the store's signals when processes share it), the key and what it
seals (webhook secrets, agents' delegation tokens), the observers, the engine
(engine/build.py ``build_engine``), its lifetime, and the ASGI app with a
handler per agent. Everything is handed to what needs it as it is built:
nothing is set on an engine or an app afterwards. ``create_app`` is the same
with the common settings as keywords; ``assemble_engine`` is the part that
``a2ad worker`` (an engine with no app) uses.

The default agent is chosen here (the echo agent), and agents are named and
ordered here (agents/loading.py), so that the server (server/) serves what it
is given and imports no agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .agent import Agent
from .agents.loading import served_agents
from .engine import Engine
from .engine.build import DEFAULTS, build_engine
from .engine.config import EngineConfig
from .engine.delegation import Delegations
from .engine.metrics import NULL_METRICS
from .engine.parts import bus_for, delivers_push
from .engine.runner import TurnObserver
from .engine.secrets import WebhookSecrets, server_key
from .engine.turn_log import TurnLogContext
from .server.access_log import RequestLog
from .server.app import A2AApp, authenticated_only
from .server.auth import Authenticator
from .server.dashboard import DEFAULT_PATH as DASHBOARD_PATH
from .server.delegation import DelegatingAuthenticator
from .server.handler import ExtendedCardCheck, allow_everyone
from .server.lifetime import Lifetime
from .server.limits import Limits
from .server.observed import RequestObserver
from .settings import QUIET, AppSettings, AuthSettings, Observability, PushSettings
from .store.base import TaskStore
from .store.memory import MemoryStore

__all__ = ["assemble", "assemble_engine", "create_app", "served_names"]

LIMITS = Limits()
DEFAULT_SETTINGS = AppSettings()


def create_app(
    agent: Agent | Mapping[str, Agent] | None = None,
    *,
    default_agent: str | None = None,
    store: TaskStore | None = None,
    engine: EngineConfig = DEFAULTS,
    limits: Limits = LIMITS,
    authenticator: Authenticator | None = None,
    extended_card_check: ExtendedCardCheck | None = None,
    secret_key: bytes | None = None,
    dashboard_path: str | None = DASHBOARD_PATH,
    observability: Observability = QUIET,
) -> A2AApp:
    """An ASGI app serving ``agent`` (default: the echo agent) over A2A; or
    several agents by name (``{"stock": ..., "pricing": ...}``), each at
    ``/agents/<name>/`` (its JSON-RPC endpoint, its HTTP+JSON paths and its card
    beneath), and ``default_agent`` (else the first) at ``/`` too. They share
    one store (default: a MemoryStore) and one engine; a task belongs to the
    agent it was sent to, and is reached only there.

    ``engine`` (engine/config.py) sets the engine's limits (history, artifacts,
    tasks per principal), timings (shutdown grace, retention, leases, task
    timeout, stream buffer), push delivery and whether it runs agents or queues
    their turns for ``a2ad worker``; ``limits`` (server/limits.py) what a caller
    may send and hold (body, parts, open streams, requests a second), refused
    with 413, -32602 or 429. An ``authenticator`` (server/auth.py) makes every
    request but the agent card's prove who sent it; ``extended_card_check``
    says who sees an agent's extended card (a2ad/settings.py ``AuthSettings``).
    Webhook tokens, and agents' delegation tokens, are sealed with
    ``secret_key`` (``PushSettings``). The task dashboard is served beneath
    ``dashboard_path`` (None: not at all). ``observability``: metrics, request
    logs, tracing and other observers (``Observability``). For the rest
    (keep-alive, the rate limiter's clock) build ``AppSettings`` and call
    ``assemble``. Raises ValueError for a setting out of its range."""
    settings = AppSettings(
        engine=engine,
        limits=limits,
        push=PushSettings(secret_key=secret_key),
        auth=AuthSettings(authenticator=authenticator, extended_card_check=extended_card_check),
        observability=observability,
        default_agent=default_agent,
        dashboard_path=dashboard_path,
    )
    return assemble(agent, settings, store=store)


def assemble(
    agent: Agent | Mapping[str, Agent] | None,
    settings: AppSettings = DEFAULT_SETTINGS,
    *,
    store: TaskStore | None = None,
) -> A2AApp:
    """The app serving ``agent`` (or several by name, or the echo agent) over
    ``store`` as ``settings`` say, built in one pass (this module's docstring).
    Raises ValueError for a setting out of its range, KeyFileError for a key
    file it can't read or make."""
    agents = served_agents(agent, settings.default_agent)
    task_store = store if store is not None else MemoryStore()
    secrets, delegations = _sealed(settings, task_store)
    authenticator = settings.auth.authenticator
    if authenticator is not None and delegations is not None:
        # Agents' calls to this server, made as their callers.
        authenticator = DelegatingAuthenticator(authenticator, delegations)
    seen = settings.observability
    requests, turns = _observers(seen, agents)
    engine = assemble_engine(
        agents,
        task_store,
        settings.engine,
        observability=seen,
        turn_observers=turns,
        webhook_secrets=secrets,
        delegations=delegations,
    )
    check = settings.auth.extended_card_check
    if check is None:
        check = allow_everyone if authenticator is None else authenticated_only
    return A2AApp(
        engine,
        limits=settings.limits,
        keepalive_seconds=settings.keepalive_seconds,
        extended_card_check=check,
        authenticator=authenticator,
        expose_internal_parts=settings.engine.expose_internal_parts,
        rate_clock=settings.rate_clock,
        dashboard_path=settings.dashboard_path,
        metrics=seen.metrics,
        observers=requests,
        lifetime=Lifetime(engine, seen.metrics),
        interfaces=settings.interfaces,
    )


def assemble_engine(
    agents: Agent | Mapping[str, Agent],
    store: TaskStore,
    config: EngineConfig = DEFAULTS,
    *,
    observability: Observability = QUIET,
    turn_observers: Sequence[TurnObserver] | None = None,
    webhook_secrets: WebhookSecrets | None = None,
    delegations: Delegations | None = None,
) -> Engine:
    """The engine running ``agents`` (as ``served_agents`` gives them) over
    ``store``: its bus chosen, metrics and turn observers handed in (by default
    those ``observability`` asks for), through ``build_engine``."""
    metrics = observability.metrics
    bus = bus_for(store, metrics if metrics is not None else NULL_METRICS)
    if turn_observers is None:
        turn_observers = _observers(observability, agents)[1]
    if metrics is not None:
        metrics.watch(store, bus)  # its gauges and census read them at scrape time
    return build_engine(
        agents,
        store,
        config,
        bus=bus,
        turn_observers=turn_observers,
        webhook_secrets=webhook_secrets,
        delegations=delegations,
        metrics=metrics if metrics is not None else NULL_METRICS,
    )


def _sealed(
    settings: AppSettings, store: TaskStore
) -> tuple[WebhookSecrets | None, Delegations | None]:
    """What the secret key seals: webhook secrets when the engine will deliver
    push notifications (a store with webhooks), agents' delegation tokens when
    auth is on. The key is read (or made) only when one of them needs it: a
    store on a database server has no key file of its own to default to."""
    pushes = delivers_push(store, settings.engine)
    delegates = settings.auth.authenticator is not None
    if not pushes and not delegates:
        return None, None
    key = settings.push.secret_key
    if key is None:
        key = server_key(store)
    return (
        WebhookSecrets(key) if pushes else None,
        Delegations(key) if delegates else None,
    )


def served_names(agents: Agent | Mapping[str, Agent]) -> dict[str, str]:
    """The served agents' names by the engine's key: a lone agent's key is
    ``""`` and its name its own; the default comes first."""
    if isinstance(agents, Agent):
        return {"": agents.name}
    return {key: key or one.name for key, one in agents.items()}


def _observers(
    seen: Observability, agents: Agent | Mapping[str, Agent]
) -> tuple[tuple[RequestObserver, ...], tuple[TurnObserver, ...]]:
    """Who is told of each request and each turn, in order: metrics, the
    request log (and its turn context), tracing, then the others given."""
    requests: list[RequestObserver] = []
    turns: list[TurnObserver] = []
    if seen.metrics is not None:
        requests.append(seen.metrics)
        turns.append(seen.metrics.turn_observer())
    if seen.request_log:
        # Every request gets an id, and every line logged its context (cli/logs.py).
        requests.append(RequestLog(access=seen.access_log))
        turns.append(TurnLogContext(agents if isinstance(agents, Mapping) else {"": agents}))
    if seen.tracing is not None:
        from .server.tracing import tracing_observers  # only with tracing on: no import

        spans, turn_spans = tracing_observers(served_names(agents), seen.tracing)
        requests.append(spans)
        turns.append(turn_spans)
    return (*requests, *seen.observers), (*turns, *seen.turn_observers)
