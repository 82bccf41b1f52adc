"""Whether a front's agents have a live worker (``a2ad serve --no-run``): read
from the store's roll of workers (store/worker_roll.py) when the front starts
and every ``CHECK_SECONDS``, one small query for all its agents.

A front whose agent has no worker takes and stores tasks that nothing runs.
What it says so with:

- the log: a warning once turns of the agent wait and no worker runs it (once,
  until a worker runs the agent again, which is logged too);
- ``/readyz`` (server/health.py) and the serve banner: each agent's live
  workers, and the same warning (``problem``);
- a blocking SendMessage (engine/remote.py): once the task's agent has had no
  live worker for ``wait`` seconds (``NO_WORKER_WAIT``), its wait ends with
  ``NoWorkerError``; the task stays queued, and runs when a worker connects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence

from ..protocol.errors import NoWorkerError
from ..protocol.types import Clock
from ..store.base import StoreUnavailableError, TaskStore
from ..store.worker_roll import AgentWorkers, WorkerRoll

__all__ = ["CHECK_SECONDS", "NO_WORKER_WAIT", "WorkerPresence", "presence_of"]

log = logging.getLogger("a2ad.engine")

CHECK_SECONDS = 2.0  # between reads of the roll
FRESH_SECONDS = 0.5  # a read this recent is read again for no follower
NO_WORKER_WAIT = 10.0  # seconds without a worker before a blocking send stops waiting
START_WORKER = "start `a2ad worker` with this front's --store and --agent"


def called(agent: str) -> str:
    """The agent as messages name it ("" is a server's one unnamed agent)."""
    return f"agent {agent}" if agent else "this server's agent"


class WorkerPresence:
    """The live workers of ``agents``, as last read from ``roll``; ``start``
    reads once and then every ``every`` seconds until ``aclose``."""

    def __init__(
        self,
        roll: WorkerRoll,
        agents: Sequence[str],
        *,
        clock: Clock,
        wait: float = NO_WORKER_WAIT,
        every: float = CHECK_SECONDS,
    ) -> None:
        self._roll = roll
        self._agents = list(agents)
        self._clock = clock
        self.wait = wait
        self.every = every
        self.alive: dict[str, int] = {}  # each agent's live workers, as last read
        self._missing: dict[str, float] = {}  # agents without a worker, since (monotonic)
        self._warned: set[str] = set()
        self._loop: asyncio.Task[None] | None = None
        self._reading = asyncio.Lock()
        self._read_at = -1.0  # when the roll was last read (monotonic)

    async def start(self) -> None:
        try:
            await self.check()
        except StoreUnavailableError:
            pass  # the store logs its outage; the loop reads again
        self._loop = asyncio.ensure_future(self._run())

    async def aclose(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.wait({self._loop})
            self._loop = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.check()
            except StoreUnavailableError:
                pass
            except Exception:
                log.exception("reading the roll of workers failed; reading again")

    async def check(self) -> None:
        """Read the roll; log the agents whose turns wait with no worker (once),
        and those that have one again."""
        read = await self._roll.agent_workers(self._agents, now=self._clock())
        now = self._read_at = time.monotonic()
        for agent in self._agents:
            seen = read.get(agent, AgentWorkers(0, False))
            self.alive[agent] = seen.alive
            if seen.alive:
                self._missing.pop(agent, None)
                if agent in self._warned:
                    self._warned.discard(agent)
                    log.info(
                        "%s has a worker again (%d alive): its waiting tasks run",
                        called(agent),
                        seen.alive,
                        extra={"agent": agent},
                    )
                continue
            self._missing.setdefault(agent, now)
            if seen.waiting and agent not in self._warned:
                self._warned.add(agent)
                log.warning(
                    "tasks of %s wait, and no worker runs it: %s (they run once one connects)",
                    called(agent),
                    START_WORKER,
                    extra={"agent": agent},
                )

    def without_worker(self, agent: str) -> float:
        """Seconds ``agent`` has been read without a live worker (0: it has one)."""
        since = self._missing.get(agent)
        return 0.0 if since is None else time.monotonic() - since

    async def stalled(self, task_id: str, agent: str) -> bool:
        """Whether the task's turn waits and ``agent`` has had no live worker for
        ``wait`` seconds, the roll read again to be sure (False when it can't be
        read). A turn taken is not stalled: its worker's lease covers it."""
        if self.without_worker(agent) < self.wait:
            return False
        try:
            async with self._reading:  # the followers that ask at once share one read
                if time.monotonic() - self._read_at > FRESH_SECONDS:
                    await self.check()
            if self.without_worker(agent) < self.wait:
                return False
            return await self._roll.turn_queued(task_id)
        except Exception:
            return False  # can't tell: keep waiting

    def problem(self) -> str:
        """What the operator should know ("" if every agent has a live worker)."""
        missing = [agent for agent in self._agents if agent in self._missing]
        if not missing:
            return ""
        named = ", ".join(called(agent) for agent in missing)
        return f"no worker is connected for {named}: tasks sent to it wait; {START_WORKER}"

    def no_worker(self, task_id: str, agent: str) -> NoWorkerError:
        """The error that ends a blocking send whose task waits with no worker."""
        waited = self.without_worker(agent)
        return NoWorkerError(
            f"Task {task_id} is queued, and no worker that runs {called(agent)} has been "
            f"connected for the last {waited:.0f} s: {START_WORKER}. The task runs once one "
            "connects; read it with GetTask, or send with returnImmediately not to wait.",
            metadata={"taskId": task_id, "agent": agent},
        )


def presence_of(
    store: TaskStore, agents: Iterable[str], *, clock: Clock, front: bool, wait: float
) -> WorkerPresence | None:
    """A front's presence of workers, if its store keeps their roll (else None)."""
    if not front or not isinstance(store, WorkerRoll):
        return None
    return WorkerPresence(store, list(agents), clock=clock, wait=wait)
