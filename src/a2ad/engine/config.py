"""What an engine is built with: one frozen value, checked once.

``EngineConfig`` holds the engine's settings (limits, timings, its role); the
factory (engine/build.py) takes it with the parts that are objects (agents,
store, bus, clock, metrics, observers, secrets) and builds the engine and its
collaborators in order, so that nothing is changed after it is built."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.base import MAX_ARTIFACTS, MAX_HISTORY
from .push import PushPolicy
from .worker_presence import NO_WORKER_WAIT

__all__ = ["EngineConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """The engine's settings (Engine's docstring says what each does).

    Raises ValueError, naming the setting, for one out of its range."""

    stream_buffer: int = 1024
    lease_seconds: float = 15.0
    shutdown_grace: float = 10.0
    retention_seconds: float | None = None
    task_timeout: float | None = None
    stall_timeout: float | None = None  # a turn quiet this long is failed (stalls.py)
    push_policy: PushPolicy | None = None
    allow_private_webhooks: bool = False
    expose_internal_parts: bool = False
    max_history: int = MAX_HISTORY
    max_artifacts: int = MAX_ARTIFACTS
    max_tasks_per_principal: int = 0
    runs_agents: bool = True
    deliver_push: bool = True
    agent_threads: int = 0
    no_worker_wait: float = NO_WORKER_WAIT  # a front's blocking send, without a worker

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        if not 1 <= self.max_history <= MAX_HISTORY:
            raise ValueError(f"max_history must be 1..{MAX_HISTORY}, not {self.max_history!r}")
        if not 1 <= self.max_artifacts <= MAX_ARTIFACTS:
            raise ValueError(
                f"max_artifacts must be 1..{MAX_ARTIFACTS}, not {self.max_artifacts!r}"
            )
        if self.max_tasks_per_principal < 0:
            raise ValueError("max_tasks_per_principal must be 0 (no limit) or more")
        if self.stall_timeout is not None and not self.stall_timeout > 0:
            raise ValueError("stall_timeout must be positive, or None for none")
        if self.no_worker_wait <= 0:
            raise ValueError("no_worker_wait must be positive")
        if self.agent_threads < 0:
            raise ValueError("agent_threads must be 0 (the loop's default executor) or more")
