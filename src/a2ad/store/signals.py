"""How processes sharing one store tell each other what happened: small signals
("task T has events up to seq N", "stop T"), never the events themselves, which
every process reads from the store. A store shared by several processes offers
its ``Signals`` (``TaskStore.signals()``); the engine's bus (engine/signal_bus.py)
uses them."""

from __future__ import annotations

import abc

from ..protocol.types import Seq, TaskId

__all__ = ["SignalReceiver", "Signals"]


class SignalReceiver(abc.ABC):
    """What a transport calls when a signal comes in (on the bus's event loop)."""

    @abc.abstractmethod
    def stored(self, task_id: TaskId, seq: Seq) -> None:
        """Another process stored the task's events up to ``seq``."""

    @abc.abstractmethod
    def cancelled(self, task_id: TaskId) -> None:
        """Another process ended the task: stop its agent if it runs here."""

    @abc.abstractmethod
    def reconnected(self) -> None:
        """Signals may have been missed: read every followed task again."""


class Signals(abc.ABC):
    """How signals reach the other processes sharing the store."""

    @abc.abstractmethod
    async def start(self, receiver: SignalReceiver) -> None:
        """Start listening; signals go to ``receiver`` from now on."""

    @abc.abstractmethod
    def stored(self, task_id: TaskId, seq: Seq) -> None:
        """This process stored the task's events up to ``seq`` (a transport whose
        store signals its own writes, such as PostgreSQL's, ignores it)."""

    @abc.abstractmethod
    def cancel(self, task_id: TaskId) -> None:
        """Tell every other process to stop the task's agent."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop listening."""
