"""What the engine tells whoever counts (``a2ad serve``'s /metrics): the few
things only it knows. ``NULL_METRICS`` is the default and does nothing, so an
engine without metrics pays one attribute lookup and an empty call per
event. The server layer plugs a real one in (server/metrics.py); this layer
never imports a metrics library.

Each method is called on the event loop, on the path it counts: it must be
cheap, and may not raise or block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..protocol.model import TaskState
from ..protocol.types import TaskId

__all__ = ["NULL_METRICS", "Change", "EngineMetrics", "NullMetrics"]

Change = tuple[TaskState | None, TaskState]  # a task's state before and after a change


class EngineMetrics(Protocol):
    """``on`` is False only for the null object (callers may skip work, such
    as reading the clock, that only feeds metrics)."""

    on: bool

    def changed(self, task_id: TaskId, agent: str, changes: Sequence[Change]) -> None:
        """One write changed the task's state: each ``(before, after)`` of
        ``changes`` in turn (``before`` is None for the task created, in state
        ``after``). Told once a write, not once a change: a new task's first write
        often makes three."""

    def store_op(self, op: str, seconds: float) -> None:
        """A store call the engine made (``create``, ``append``, ``get``, ...) took
        ``seconds``; only for a store that is ``timed`` (store/base.py)."""

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

    def changed(self, task_id: TaskId, agent: str, changes: Sequence[Change]) -> None:
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
