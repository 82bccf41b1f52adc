"""The quota of turns a tenant's principal may have running at once
(``max_tasks_per_principal``): a message that would start one more is refused,
QuotaExceededError, before anything is stored.

A turn counts from before it is stored until it ends, whether the request that
started it still waits or not: the turn starter follows every counted turn
(``TurnRequest.counted``) to learn when it ends."""

from __future__ import annotations

import msgspec

from .new_tasks import too_many_in_flight
from .turns import StartedTurn, TurnRequest, TurnStarter

__all__ = ["Quota"]


class Quota:
    """At most ``limit`` turns running at once per (tenant, principal)."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("a quota's limit must be positive")
        self.limit = limit
        # Turns running (or starting) per owner.
        self._in_flight: dict[tuple[str, str], int] = {}

    async def start(self, turns: TurnStarter, turn: TurnRequest) -> StartedTurn:
        """Start ``turn`` with ``turns`` if its owner is under the limit, counted
        until it ends; raises QuotaExceededError otherwise."""
        owner = (turn.access.tenant, turn.access.principal)
        self._admit(owner)  # the turn counts from here, before anything is stored
        try:
            started, job = await turns.start(
                msgspec.structs.replace(turn, follow=True, counted=True)
            )
        except BaseException:
            self._leave(owner)
            raise
        assert job is not None  # a counted turn is followed
        job.add_done_callback(lambda _: self._leave(owner))
        return started

    def _admit(self, owner: tuple[str, str]) -> None:
        count = self._in_flight.get(owner, 0)
        if count >= self.limit:
            raise too_many_in_flight(*owner, count, self.limit)
        self._in_flight[owner] = count + 1

    def _leave(self, owner: tuple[str, str]) -> None:
        count = self._in_flight[owner] - 1
        if count:
            self._in_flight[owner] = count
        else:
            del self._in_flight[owner]
