"""What the engine tells whoever counts (``a2ad serve``'s /metrics): the few
things only it knows. ``NULL_METRICS`` is the default and does nothing, so an
engine without metrics pays one attribute lookup and an empty call per
event. The server layer plugs a real one in (server/metrics.py); this layer
never imports a metrics library.

Each method is called on the event loop, on the path it counts: it must be
cheap, and may not raise or block."""

from __future__ import annotations

from typing import Protocol

from ..protocol.model import TaskState
from ..protocol.types import TaskId

__all__ = ["NULL_METRICS", "EngineMetrics", "NullMetrics"]


class EngineMetrics(Protocol):
    """``on`` is False only for the null object (callers may skip work, such
    as reading the clock, that only feeds metrics)."""

    on: bool

    def transition(
        self, task_id: TaskId, agent: str, before: TaskState | None, after: TaskState
    ) -> None:
        """A task's state changed from ``before`` to ``after`` (``before`` is None
        when the task was just created, in state ``after``)."""

    def store_op(self, op: str, seconds: float) -> None:
        """A store call the engine made (``create``, ``append``, ``get``, ...) took ``seconds``."""

    def subscriber_dropped(self) -> None:
        """A slow subscriber's buffer filled and it was dropped."""

    def overdue_failed(self) -> None:
        """A task past its deadline was failed."""

    def orphan_failed(self) -> None:
        """A task whose runner's lease expired was failed."""

    def retention_deleted(self, count: int) -> None:
        """Retention deleted ``count`` finished tasks."""

    def push_failed(self, final: bool) -> None:
        """A push delivery attempt failed; ``final``: it will not be retried."""


class NullMetrics:
    on = False

    def transition(
        self, task_id: TaskId, agent: str, before: TaskState | None, after: TaskState
    ) -> None:
        pass

    def store_op(self, op: str, seconds: float) -> None:
        pass

    def subscriber_dropped(self) -> None:
        pass

    def overdue_failed(self) -> None:
        pass

    def orphan_failed(self) -> None:
        pass

    def retention_deleted(self, count: int) -> None:
        pass

    def push_failed(self, final: bool) -> None:
        pass


NULL_METRICS: EngineMetrics = NullMetrics()
