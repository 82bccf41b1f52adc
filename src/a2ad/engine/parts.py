"""The engine's collaborators, built in order from one ``EngineConfig``.

``assemble`` is the one place they are built; each gets what it needs (metrics,
secrets, observers, the runner) when it is built, and nothing is changed on it
afterwards. How turns start is chosen here, once: run here (``LocalTurns``) or
queued for workers (``QueuedTurns``, ``runs_agents=False``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from ..agent import Agent
from ..protocol.types import Clock, TaskId, system_clock
from ..store.base import TaskBounds, TaskStore, Upkeep, Webhooks
from .agent_threads import AgentThreads
from .bus import Bus, LocalBus
from .config import EngineConfig
from .delegation import Delegations
from .ending import Endings
from .hooked import HookedTasks
from .idempotency import Resends
from .local_turns import LocalTurns
from .metrics import NULL_METRICS, EngineMetrics
from .push import PushNotifications
from .queued_turns import QueuedTurns, queues_turns
from .quota import Quota
from .reads import Reads
from .runner import Runner, TurnObserver
from .secrets import WebhookSecrets
from .signal_bus import SignalBus
from .stalls import StallWatch
from .turns import Closing, Leases, TurnParts, TurnStarter
from .upkeep import Adopt, Maintenance
from .watchdog import LoopWatchdog
from .worker_presence import WorkerPresence, presence_of
from .writer import Writer

__all__ = ["DEFAULTS", "EngineParts", "assemble"]

DEFAULTS = EngineConfig()


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineParts:
    """What an ``Engine`` is made of (``assemble`` builds it)."""

    config: EngineConfig
    agents: dict[str, Agent]
    store: TaskStore
    bus: Bus
    clock: Clock
    metrics: EngineMetrics
    leases: Leases
    closing: Closing
    writer: Writer
    reads: Reads
    turns: TurnStarter
    local: LocalTurns | None  # ``turns``, when they run here
    endings: Endings
    resends: Resends
    quota: Quota | None
    push: PushNotifications | None
    presence: WorkerPresence | None
    maintenance: Maintenance | None
    watchdog: LoopWatchdog
    turn_observers: tuple[TurnObserver, ...]
    delegations: Delegations | None


def assemble(
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
) -> EngineParts:
    """The parts of an engine (build.py ``build_engine`` says what each argument is)."""
    named: dict[str, Agent] = dict(agents) if isinstance(agents, Mapping) else {"": agents}
    if not named:
        raise ValueError("an engine needs at least one agent")
    if not config.runs_agents:
        queues_turns(store)  # before anything is built
    bus = _bus(store, bus, metrics)
    push, writer = _push_and_writer(store, bus, config, clock, metrics, webhook_secrets)
    observers = tuple(turn_observers)
    runner = Runner(observers) if config.runs_agents else None
    reads = Reads(store, bus, stream_buffer=config.stream_buffer, clock=clock, metrics=metrics)
    endings = Endings(store, writer, bus, clock=clock, runner=runner, agents=named)
    leases = Leases(uuid.uuid4().hex, clock, config.lease_seconds)
    closing = Closing()
    output_modes = {name: agent.card_info().all_output_modes for name, agent in named.items()}
    turn_parts = TurnParts(
        store=store,
        writer=writer,
        reads=reads,
        endings=endings,
        push=push,
        clock=clock,
        leases=leases,
        closing=closing,
        task_timeout=config.task_timeout,
        output_modes=output_modes,
    )
    presence = presence_of(
        store, named, clock=clock, front=not config.runs_agents, wait=config.no_worker_wait
    )
    local: LocalTurns | None = None
    turns: TurnStarter
    if runner is not None:
        threads = AgentThreads(config.agent_threads) if config.agent_threads else None
        turns = local = LocalTurns(
            named, turn_parts, runner, threads=threads, delegations=delegations
        )
    else:
        turns = QueuedTurns(turn_parts, stream_buffer=config.stream_buffer, presence=presence)
    return EngineParts(
        config=config,
        agents=named,
        store=store,
        bus=bus,
        clock=clock,
        metrics=metrics,
        leases=leases,
        closing=closing,
        writer=writer,
        reads=reads,
        turns=turns,
        local=local,
        endings=endings,
        resends=Resends(
            store, reads, output_modes=output_modes, default_agent=next(iter(named)), push=push
        ),
        quota=Quota(config.max_tasks_per_principal) if config.max_tasks_per_principal else None,
        push=push,
        presence=presence,
        maintenance=_maintenance(
            store, config, leases, endings, runner, metrics, named, _adoption(local, named)
        ),
        watchdog=LoopWatchdog(),  # logs an agent that blocks the event loop
        turn_observers=observers,
        delegations=delegations,
    )


def _bus(store: TaskStore, bus: Bus | None, metrics: EngineMetrics) -> Bus:
    """The bus given, or this process's own, or one over the store's signals
    when processes share it."""
    if bus is not None:
        if metrics is not NULL_METRICS and bus.metrics is NULL_METRICS:
            bus.metrics = metrics  # a bus the caller built without them: told of drops from now
        return bus
    return bus_for(store, metrics)


def delivers_push(store: TaskStore, config: EngineConfig) -> TypeGuard[Webhooks]:
    """Whether an engine over ``store`` delivers push notifications: a store
    that keeps webhooks, unless the fronts deliver them (a worker's engine)."""
    return isinstance(store, Webhooks) and config.deliver_push


def bus_for(store: TaskStore, metrics: EngineMetrics = NULL_METRICS) -> Bus:
    """The bus over ``store``: one over its signals when processes share it
    (PostgreSQL, a SQLite group), else this process's own."""
    signals = store.signals()
    if signals is not None:
        return SignalBus(store, signals, metrics=metrics)
    return LocalBus(metrics=metrics)


def _push_and_writer(
    store: TaskStore,
    bus: Bus,
    config: EngineConfig,
    clock: Clock,
    metrics: EngineMetrics,
    secrets: WebhookSecrets | None,
) -> tuple[PushNotifications | None, Writer]:
    """Push delivery (with a store that keeps webhooks, unless the fronts
    deliver), and the writer, which tells it of the events stored for tasks
    with webhooks (hooked.py)."""
    push = None
    if delivers_push(store, config):
        push = PushNotifications(
            store,
            clock=clock,
            policy=config.push_policy,
            allow_private=config.allow_private_webhooks,
            secrets=secrets,
            expose_internal_parts=config.expose_internal_parts,
            metrics=metrics,
            hooked=HookedTasks(),
        )
    writer = Writer(
        store,
        bus,
        hooked=push.hooked if push is not None else None,
        bounds=TaskBounds(config.max_history, config.max_artifacts),
        metrics=metrics,
    )
    return push, writer


def _maintenance(
    store: TaskStore,
    config: EngineConfig,
    leases: Leases,
    endings: Endings,
    runner: Runner | None,
    metrics: EngineMetrics,
    agents: Mapping[str, Agent],
    adopt: Adopt | None,
) -> Maintenance | None:
    """Upkeep (leases, orphans, deadlines, stalls, retention), for a store that keeps it."""
    if not isinstance(store, Upkeep):
        return None
    runs_here: Callable[[TaskId], bool] = (
        (lambda task_id: runner.get(task_id) is not None) if runner is not None else _nowhere
    )
    return Maintenance(
        store,
        instance=leases.instance,
        clock=leases.clock,
        lease_seconds=config.lease_seconds,
        retention_seconds=config.retention_seconds,
        fail=endings.fail,
        runs_here=runs_here,
        adopt=adopt,
        overdue_here=_overdue_in(runner) if runner is not None else lambda now: [],
        metrics=metrics,
        stalls=(
            StallWatch(runner, agents, config.stall_timeout, endings.fail)
            if runner is not None
            else None
        ),
    )


def _adoption(local: LocalTurns | None, agents: Mapping[str, Agent]) -> Adopt | None:
    """How orphans are picked up again here: only with an agent run here that
    can (``Agent.resumes`` overridden); else every orphan fails."""
    if local is None or all(type(agent).resumes is Agent.resumes for agent in agents.values()):
        return None
    return local.adopt


def _overdue_in(runner: Runner) -> Callable[[str], list[TaskId]]:
    def overdue_here(now: str) -> list[TaskId]:
        found = []
        for task_id in runner.task_ids():
            invocation = runner.get(task_id)
            if invocation is not None and invocation.unstored_past(now):
                found.append(task_id)
        return found

    return overdue_here


def _nowhere(task_id: TaskId) -> bool:
    return False
