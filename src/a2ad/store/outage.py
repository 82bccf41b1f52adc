"""Whether a store that lives apart from the process is answering, so that an
outage is logged when it begins, while it lasts (once a minute) and when it
ends, instead of once for every call that fails meanwhile."""

from __future__ import annotations

import logging
import time

from ..wording import plural

__all__ = ["Outage"]

log = logging.getLogger("a2ad.store")

REMIND_SECONDS = 60.0  # while an outage lasts, a line this often


class Outage:
    """The outage of the store ``where`` names (e.g. "PostgreSQL at db:5432"):
    ``failed`` for each call that could not reach it, ``answered`` for each that
    did. Cheap when nothing is wrong: one attribute test per call."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._since: float | None = None  # monotonic time it began; None: no outage
        self._failed = 0  # calls failed since it began
        self._reminded = 0.0

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, why: str) -> None:
        now = time.monotonic()
        if self._since is None:
            self._since = self._reminded = now
            self._failed = 1
            log.warning(
                "the task store is unavailable: %s: %s; requests that need it are answered "
                "-32603 (task store unavailable) until it answers again",
                self.where,
                why,
                extra={"store": self.where, "error": why},
            )
            return
        self._failed += 1
        if now - self._reminded >= REMIND_SECONDS:
            self._reminded = now
            log.warning(
                "the task store is still unavailable after %.0f s: %s: %s",
                now - self._since,
                self.where,
                why,
                extra={
                    "store": self.where,
                    "error": why,
                    "outage_seconds": round(now - self._since, 1),
                    "failed_calls": self._failed,
                },
            )

    def answered(self) -> None:
        if self._since is None:
            return
        lasted = time.monotonic() - self._since
        failed, self._since = self._failed, None
        log.warning(
            "the task store answers again after %.1f s: %s (%s failed meanwhile)",
            lasted,
            self.where,
            plural(failed, "call"),
            extra={"store": self.where, "outage_seconds": round(lasted, 1), "failed_calls": failed},
        )
