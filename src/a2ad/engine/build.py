"""The engine's factory: every collaborator handed in at once, nothing set after.

``build_engine`` is how ``create_app``, ``a2ad worker``, the benchmarks and the
tests get an engine: the settings as one frozen ``EngineConfig``, and the parts
that are objects (agents, store, bus, clock, metrics, turn observers, webhook
secrets, delegations) as arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..agent import Agent
from ..protocol.types import Clock, system_clock
from ..store.base import TaskStore
from .bus import Bus
from .config import EngineConfig
from .delegation import Delegations
from .engine import Engine
from .metrics import NULL_METRICS, EngineMetrics
from .parts import DEFAULTS, assemble
from .runner import TurnObserver
from .secrets import WebhookSecrets

__all__ = ["DEFAULTS", "build_engine"]


def build_engine(
    agents: Agent | Mapping[str, Agent],
    store: TaskStore,
    config: EngineConfig = DEFAULTS,
    *,
    bus: Bus | None = None,
    clock: Clock = system_clock,
    metrics: EngineMetrics = NULL_METRICS,
    turn_observers: Sequence[TurnObserver] = (),
    webhook_secrets: WebhookSecrets | None = None,
    delegations: Delegations | None = None,
) -> Engine:
    """An engine running ``agents`` (one, or several by name: the first is the
    default) over ``store``, as ``config`` says. ``bus`` defaults to this
    process's own, or one over the store's signals when processes share it;
    ``metrics`` is told what the engine alone knows; ``turn_observers`` are told
    of every turn run here; webhook tokens are sealed with ``webhook_secrets``
    (default: a random key for this process); ``delegations`` mints the tokens
    agents call this server back with (auth on). Raises ValueError for a
    setting out of its range or a store that can't do what ``config`` asks."""
    return Engine(
        assemble(
            agents,
            store,
            config,
            bus=bus,
            clock=clock,
            metrics=metrics,
            turn_observers=turn_observers,
            webhook_secrets=webhook_secrets,
            delegations=delegations,
        )
    )
