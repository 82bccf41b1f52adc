"""Which workers are alive, for the fronts that queue turns for them (the
``WorkerRoll`` contract; PostgreSQL: postgres_workers.py).

A worker (engine/worker.py) says it is alive, and which agents it runs, when it
starts and again every few seconds, each time until a moment a little later;
it strikes itself off when it stops. One killed meanwhile simply stops being
renewed, and is dead once its moment passes. A front (engine/worker_presence.py)
reads, for each of its agents, how many workers are alive and whether turns
wait: what tells "no worker is connected" from "the workers are busy".
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["AgentWorkers", "WorkerRoll"]


class AgentWorkers(NamedTuple):
    """One agent's workers, as a front reads them."""

    alive: int  # workers running the agent, alive now
    waiting: bool  # a queued turn of the agent's waits to be taken


class WorkerRoll(abc.ABC):
    """A store that keeps the roll of the workers taking its turns."""

    @abc.abstractmethod
    async def worker_seen(self, worker: str, agents: Sequence[str], *, until: float) -> None:
        """``worker`` (its engine's instance) runs ``agents`` and is alive until
        ``until`` (epoch seconds), unless seen again before."""

    @abc.abstractmethod
    async def worker_gone(self, worker: str) -> None:
        """``worker`` stopped: it is struck off at once. Nothing if it is not on the roll."""

    @abc.abstractmethod
    async def agent_workers(self, agents: Sequence[str], *, now: float) -> dict[str, AgentWorkers]:
        """For each of ``agents``: its workers alive at ``now`` (epoch seconds),
        and whether turns of it wait to be taken."""

    @abc.abstractmethod
    async def turn_queued(self, task_id: str) -> bool:
        """Whether the task has a turn queued that no worker has taken yet (a
        worker not on the roll, of an older a2ad, may have taken it)."""
