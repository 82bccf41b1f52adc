"""Wait for a log record, for tests whose only outside sign of a step is the
line a2ad logs for operators (a shutdown grace that began, an upkeep round that
failed)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

__all__ = ["LogWatch", "watch_log"]


class LogWatch(logging.Handler):
    """Keeps the records that ``match``; ``wait(n)`` returns once there are n."""

    def __init__(self, match: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__(logging.DEBUG)
        self.match = match
        self.records: list[logging.LogRecord] = []
        self._changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        # a2ad logs from its event loop's thread, the one the test waits on.
        if self.match(record):
            self.records.append(record)
            self._changed.set()

    async def wait(self, count: int = 1, *, timeout: float = 5.0) -> list[logging.LogRecord]:
        async with asyncio.timeout(timeout):
            while len(self.records) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.records


@contextlib.contextmanager
def watch_log(
    logger: str, match: Callable[[logging.LogRecord], bool], level: int = logging.INFO
) -> Iterator[LogWatch]:
    """Watch ``logger`` (at ``level`` and above) for records that ``match``."""
    log = logging.getLogger(logger)
    watch = LogWatch(match)
    old_level = log.level
    if log.getEffectiveLevel() > level:
        log.setLevel(level)
    log.addHandler(watch)
    try:
        yield watch
    finally:
        log.removeHandler(watch)
        log.setLevel(old_level)
