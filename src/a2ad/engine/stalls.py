"""Turns that went quiet: ``--stall-timeout`` (EngineConfig.stall_timeout, or an
agent's own ``stall_timeout``).

A turn whose agent, local or fronted elsewhere, has stored nothing (no status,
no artifact, no chunk) for that long is failed, saying so, and its agent is
interrupted as by a cancel: apart from the task's whole deadline, which bounds
a turn that keeps talking. The engine's maintenance round (upkeep.py) asks,
about every second, for the turns that run here; nothing is done per event or
per request, and nothing at all without a timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from ..agent import Agent
from ..protocol.types import TaskId
from .runner import Runner

__all__ = ["STALLED", "StallWatch"]

log = logging.getLogger("a2ad.engine")

STALLED = "stalled: its agent sent nothing for {seconds:g} s"


class StallWatch:
    """Fails the turns in ``runner`` quiet for longer than their agent's
    ``stall_timeout`` (else ``default``, None for none) through ``fail``."""

    def __init__(
        self,
        runner: Runner,
        agents: Mapping[str, Agent],
        default: float | None,
        fail: Callable[[TaskId, str], Awaitable[bool]],
    ) -> None:
        self._runner = runner
        self._timeouts = {
            name: getattr(agent, "stall_timeout", None) or default for name, agent in agents.items()
        }
        self._fail = fail
        self._seen: dict[TaskId, tuple[int, float]] = {}  # task: (its last seq, since when)

    @property
    def watching(self) -> bool:
        """Some agent has a stall timeout."""
        return any(timeout is not None for timeout in self._timeouts.values())

    async def round(self, now: float) -> None:
        """Note each running turn's progress; fail those quiet too long."""
        seen, running = self._seen, self._runner.task_ids()
        for task_id in list(seen):
            if task_id not in running:
                del seen[task_id]  # over
        for task_id in running:
            invocation = self._runner.get(task_id)
            if invocation is None:
                continue
            timeout = self._timeouts.get(invocation.agent_name)
            if timeout is None:
                continue
            current = invocation.current
            seq = current.seq if current is not None else -1
            last = seen.get(task_id)
            if last is None or last[0] != seq:
                seen[task_id] = (seq, now)
                continue
            if now - last[1] >= timeout:
                del seen[task_id]
                if await self._fail(task_id, STALLED.format(seconds=timeout)):
                    log.warning(
                        "task failed: its agent stalled",
                        extra={"task_id": task_id, "stall_timeout": timeout},
                    )
