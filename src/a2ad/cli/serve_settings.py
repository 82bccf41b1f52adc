"""``a2ad serve``'s settings: its flags read once, checked, into one frozen value.

click has already merged the flags with the environment and the configuration
file (cli/config.py); ``read_settings`` turns what it gives into
``ServeSettings``, raising ValueError (a usage error) for any value a2ad
can't honour. Everything after (the store, the agents, the key, the app, a
group's processes) is built from that one value; ``app_settings`` is the
app's part of it (a2ad/settings.py), completed with the key and the metrics
once they exist.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..durations import parse_duration, parse_optional_duration
from ..engine.config import EngineConfig
from ..server.auth import CredentialAuthenticator
from ..server.connections import ConnectionLimits
from ..server.dashboard import check_path as check_dashboard_path
from ..server.limits import Limits
from ..server.metrics import Metrics
from ..settings import AppSettings, AuthSettings, Observability, PushSettings
from ..store import store_from_url
from ..store.base import TaskStore, Turns
from ..store.memory import MemoryStore
from ..store.sqlite_group import SqliteGroup
from .auth_flags import authenticator_from_flags
from .logs import access_fraction
from .serve_grpc import GrpcSettings, grpc_settings

__all__ = ["ServeSettings", "duration", "open_store", "read_settings", "workers_store"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """What ``a2ad serve`` was asked for (docs/cli.md names each flag)."""

    host: str
    port: int
    workers: int
    store: str  # the store's URL (--store)
    max_tasks: int | None
    agents: tuple[str, ...]  # --agent: one SPEC, or NAME=SPEC each
    default_agent: str | None
    model: str | None
    upstream_auth: str | None  # --upstream-auth FILE: the fronted agents' credentials
    connections: ConnectionLimits  # max_connections as asked, fit to the fd limit at start
    engine: EngineConfig
    limits: Limits
    authenticator: CredentialAuthenticator | None
    secret_key_file: str | None
    dashboard_path: str | None  # None: --no-dashboard
    log_level: str
    access: float | None  # --access-log: the share of requests logged; None: off
    tracing: str  # off, otlp or console
    metrics: bool
    metrics_port: int | None
    grpc: GrpcSettings | None  # --grpc-port and its flags; None: no gRPC

    def app_settings(self, key: bytes, metrics: Metrics | None) -> AppSettings:
        """The app's settings: these, with the secret key and the metrics."""
        return AppSettings(
            engine=self.engine,
            limits=self.limits,
            push=PushSettings(secret_key=key),
            auth=AuthSettings(authenticator=self.authenticator),
            observability=Observability(
                metrics=metrics,
                request_log=True,  # every request an id, every line logged its context
                access_log=self.access,
                tracing=self.tracing if self.tracing != "off" else None,
            ),
            default_agent=self.default_agent,
            dashboard_path=self.dashboard_path,
            interfaces=self.grpc.interfaces if self.grpc is not None else (),
        )


def read_settings(flags: dict[str, Any]) -> ServeSettings:
    """``serve``'s flags (its parameters, by name) as settings. Raises
    ValueError for a usage error."""
    rate_limit = flags["rate_limit"]
    if not math.isfinite(rate_limit):
        raise ValueError(f"--rate-limit {rate_limit}: give a number of requests a second")
    if flags["dashboard"]:
        try:
            check_dashboard_path(flags["dashboard_path"])
        except ValueError as exc:
            raise ValueError(f"--dashboard-path: {exc}") from None
    _check_tracing(flags["tracing"])
    return ServeSettings(
        host=flags["host"],
        port=flags["port"],
        workers=flags["workers"],
        store=flags["store"],
        max_tasks=flags["max_tasks"],
        agents=tuple(flags["agent"] or ["echo"]),
        default_agent=flags["default_agent"],
        model=flags["model"],
        upstream_auth=flags["upstream_auth"],
        connections=ConnectionLimits(
            max_connections=flags["max_connections"],
            max_header_bytes=flags["max_header_bytes"],
            header_timeout=duration(
                _positive_duration, flags["header_timeout"], "--header-timeout"
            ),
            body_timeout=duration(_positive_duration, flags["body_timeout"], "--body-timeout"),
        ),
        engine=_engine(flags),
        limits=Limits(
            max_body_bytes=flags["max_body_bytes"],
            max_parts=flags["max_parts"],
            max_part_bytes=flags["max_part_bytes"],
            max_streams_per_principal=flags["max_streams_per_principal"],
            rate_limit=rate_limit,
            rate_burst=flags["rate_burst"],
        ),
        authenticator=authenticator_from_flags(flags),
        secret_key_file=flags["secret_key_file"],
        dashboard_path=flags["dashboard_path"] if flags["dashboard"] else None,
        log_level=flags["log_level"],
        access=access_fraction(flags["access_log"]),
        tracing=flags["tracing"],
        metrics=flags["metrics"],
        metrics_port=flags["metrics_port"],
        grpc=grpc_settings(flags),
    )


def _engine(flags: dict[str, Any]) -> EngineConfig:
    return EngineConfig(
        shutdown_grace=duration(parse_duration, flags["shutdown_grace"], "--shutdown-grace"),
        retention_seconds=duration(parse_optional_duration, flags["retention"], "--retention"),
        task_timeout=duration(parse_optional_duration, flags["task_timeout"], "--task-timeout"),
        stall_timeout=duration(parse_optional_duration, flags["stall_timeout"], "--stall-timeout"),
        lease_seconds=flags["lease_seconds"],
        allow_private_webhooks=flags["allow_private_webhooks"],
        expose_internal_parts=flags["expose_internal_parts"],
        max_history=flags["max_history"],
        max_artifacts=flags["max_artifacts"],
        max_tasks_per_principal=flags["max_tasks_per_principal"],
        runs_agents=not flags["no_run"],
        no_worker_wait=duration(_positive_duration, flags["no_worker_wait"], "--no-worker-wait"),
        agent_threads=flags["agent_threads"],
    )


def open_store(settings: ServeSettings, *, group: SqliteGroup | None = None) -> TaskStore:
    """The store ``--store`` names. ``group``: this process is a member of a
    group serving a SQLite file (``--workers``). Raises ValueError for one
    that can't serve as asked."""
    task_store = store_from_url(settings.store, max_tasks=settings.max_tasks, group=group)
    if not settings.engine.runs_agents:
        workers_store(task_store, "a2ad serve --no-run")
    if settings.workers > 1 and isinstance(task_store, MemoryStore):
        raise ValueError(
            "--workers: processes can't share a memory store; use --store "
            "sqlite:///file.db or postgresql://..."
        )
    return task_store


def workers_store(task_store: object, command: str) -> None:
    """Raise ValueError unless ``task_store`` can hold turns for workers."""
    if not isinstance(task_store, Turns):
        raise ValueError(
            f"{command} needs a PostgreSQL store (--store postgresql://user@host:5432/db): "
            "fronts and workers meet in the database, where the front leaves each task for a "
            "worker to take; a SQLite file or memory can't be shared with them that way"
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


def _positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if not 0 < seconds < math.inf:
        raise ValueError(f"{text!r}: give a duration above 0, e.g. 10s")
    return seconds


def duration(parse: Callable[[str], T], text: str, flag: str) -> T:
    """``parse(text)``; its ValueError names ``flag``."""
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
