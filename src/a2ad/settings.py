"""What an a2ad server is built with: frozen settings, read once at the edge.

``a2ad serve`` reads its flags, the environment and the configuration file once
(cli/serve_settings.py) into one ``AppSettings``; ``create_app`` makes one from
its keywords. The assembly (a2ad/assembly.py) builds the server from it in one
pass, and nothing is changed after it is built. Each part is a value of its own:

- ``engine``: the engine's settings (engine/config.py ``EngineConfig``: limits
  on tasks, timings, its role, push delivery);
- ``limits``: what a caller may send and hold (server/limits.py ``Limits``);
- ``push``: the key webhook tokens and agents' delegation tokens are sealed with;
- ``auth``: who may call (an authenticator), and who sees extended cards;
- ``observability``: who is told what the server does (metrics, request logs,
  tracing, and any other observers);
- and the rest of what the app serves: its default agent, the dashboard's path,
  how often an idle stream says it is alive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .engine.config import EngineConfig
from .engine.runner import TurnObserver
from .server.auth import Authenticator
from .server.bindings.sse import KEEPALIVE_SECONDS
from .server.card import Interface
from .server.dashboard import DEFAULT_PATH as DASHBOARD_PATH
from .server.handler import ExtendedCardCheck
from .server.limits import Limits
from .server.metrics import Metrics
from .server.observed import RequestObserver

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = [
    "AppSettings",
    "AuthSettings",
    "Observability",
    "PushSettings",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class PushSettings:
    """``secret_key``: the 32 bytes webhook tokens and credentials are stored
    encrypted with, and agents' delegation tokens signed with. None: the key in
    ``<file>-a2ad.key`` beside a SQLite store's file (made if missing), or a
    random one for a store that keeps nothing past the process
    (engine/secrets.py ``server_key``)."""

    secret_key: bytes | None = None

    def __post_init__(self) -> None:
        if self.secret_key is not None and len(self.secret_key) != 32:
            raise ValueError(f"secret_key must be 32 bytes, not {len(self.secret_key)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthSettings:
    """``authenticator`` (server/auth.py): with one, every request but the agent
    card's proves who sent it, and the card declares how. An agent's extended
    card goes to callers for whom ``extended_card_check(request_context)`` (a
    function, or an async one) is true; by default every caller without an
    authenticator, and authenticated callers only with one."""

    authenticator: Authenticator | None = None
    extended_card_check: ExtendedCardCheck | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Observability:
    """Who is told what the server does, each given to what it observes as it
    is built (never added after).

    ``metrics`` (server/metrics.py) counts requests, turns and the engine's
    work and serves ``GET /metrics`` (unless ``metrics.listen`` moved it to a
    socket of its own). ``request_log`` gives every request an id and every
    line logged its context, and writes access lines for ``access_log`` of the
    requests answered without an error (None: none; those with one always:
    server/access_log.py). ``tracing`` (server/tracing.py) makes OpenTelemetry
    spans of requests, turns and the calls agents make: ``"otlp"`` or
    ``"console"`` (a global SDK provider, as ``a2ad serve --tracing``), or a
    ``TracerProvider``. ``observers`` and ``turn_observers`` are told of every
    request and every agent turn too, after those above."""

    metrics: Metrics | None = None
    request_log: bool = False
    access_log: float | None = None
    tracing: str | TracerProvider | None = None
    observers: tuple[RequestObserver, ...] = ()
    turn_observers: tuple[TurnObserver, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.tracing, str) and self.tracing not in ("otlp", "console"):
            raise ValueError(f"tracing {self.tracing!r}: give otlp, console or a TracerProvider")


QUIET = Observability()


@dataclass(frozen=True, slots=True, kw_only=True)
class AppSettings:
    """Everything an app is built with but its agents and its store.

    ``default_agent``: of several agents, the one served at ``/`` too (else the
    first). ``dashboard_path``: where the task dashboard is served (None: not
    at all). An SSE stream with nothing to send for ``keepalive_seconds`` gets
    a ``: keep-alive`` comment, so that proxies do not take it for dead. The
    rate limiter reads ``rate_clock`` (monotonic seconds). ``interfaces``: the
    bindings served beside the app on ports of their own (``a2ad serve
    --grpc-port``), which the cards list after JSON-RPC and HTTP+JSON."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    limits: Limits = field(default_factory=Limits)
    push: PushSettings = field(default_factory=PushSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    observability: Observability = QUIET
    default_agent: str | None = None
    dashboard_path: str | None = DASHBOARD_PATH
    keepalive_seconds: float = KEEPALIVE_SECONDS
    rate_clock: Callable[[], float] = time.monotonic
    interfaces: tuple[Interface, ...] = ()
