"""A watchdog for the event loop: it says when sync code blocks it, and whose code.

Every request, stream and agent of a server shares one event loop, so an agent
that calls blocking code (``time.sleep``, a sync HTTP client, long CPU work)
stops all of them until it returns. The loop beats every ``period`` (a timer);
a daemon thread looks at the beats, and once none has come for ``threshold``
seconds it logs a warning, once per stall, naming the asyncio task that runs
(an agent's turn is the task ``a2ad-task-<task id>``, named so by the runner) and
the line its code is blocked on. When the loop turns again, the loop itself
logs how long it was blocked.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from typing import Any, NamedTuple

__all__ = ["LoopWatchdog"]

log = logging.getLogger("a2ad.engine")

TURN_PREFIX = "a2ad-task-"  # the asyncio task of an agent's turn (runner.py names it)
STACK_DEPTH = 8  # frames logged, innermost last


class _Culprit(NamedTuple):
    """What ran on the loop's thread while the loop was late."""

    since: float  # the last beat before the stall (monotonic seconds)
    task: str  # the asyncio task's name ("" outside any task)
    task_id: str  # the a2ad task whose agent that is ("" if it is none)
    stack: list[str]  # "file:line in function", innermost last

    def who(self) -> str:
        if self.task_id:
            return f"the agent of task {self.task_id}"
        return f"asyncio task {self.task}" if self.task else "code outside any asyncio task"

    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"asyncio_task": self.task, "where": self.where}
        if self.task_id:
            fields["task_id"] = self.task_id
        return fields

    @property
    def where(self) -> str:
        return self.stack[-1] if self.stack else "?"


class LoopWatchdog:
    """Watches the event loop it is started on; ``threshold`` is how long (seconds)
    the loop may go without turning before a warning is logged."""

    def __init__(self, *, threshold: float = 1.0) -> None:
        if not threshold > 0:
            raise ValueError(f"threshold must be a positive number of seconds, not {threshold!r}")
        self.threshold = threshold
        self._period = min(0.1, threshold / 5)  # the beat; a stall is measured to within it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0  # when the loop last beat (monotonic), written by the loop only
        self._suspect: _Culprit | None = None  # the latest sample of a late loop
        self._warned = -1.0  # ``since`` of the stall last warned about

    def start(self) -> None:
        """Start watching the running loop; call it on that loop. Idempotent;
        raises RuntimeError once stopped."""
        if self._stopping.is_set():
            raise RuntimeError("this LoopWatchdog was stopped; make a new one")
        if self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._last = time.monotonic()
        self._timer = self._loop.call_later(self._period, self._beat)
        self._thread = threading.Thread(target=self._watch, name="a2ad-loop-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, and end the thread; call it on the loop. Idempotent."""
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._thread is not None:
            self._thread.join()  # at once: it waits on the event just set

    # --- on the loop ---

    def _beat(self) -> None:
        now = time.monotonic()
        gap, self._last = now - self._last, now
        if gap > self.threshold:
            self._ended(now - gap, gap)
        assert self._loop is not None
        self._timer = self._loop.call_later(self._period, self._beat)

    def _ended(self, since: float, gap: float) -> None:
        suspect = self._suspect if self._suspect and self._suspect.since == since else None
        self._suspect = None
        # No sample: the blocking code held the GIL, so the watchdog could not look.
        who = suspect.who() if suspect else "code the watchdog could not see"
        log.warning(
            "the event loop was blocked for %.1f s by %s; every request waited for it",
            gap,
            who,
            extra={"blocked_seconds": round(gap, 3), **(suspect.fields() if suspect else {})},
        )

    # --- on the watchdog's thread ---

    def _watch(self) -> None:
        loop = self._loop
        assert loop is not None
        while not self._stopping.wait(self._period):
            if loop.is_closed():
                return  # nobody stopped it: the loop is gone, and so is the job
            since = self._last
            blocked = time.monotonic() - since
            if blocked <= 2 * self._period or not loop.is_running():
                continue
            suspect = self._sample(loop, since)
            if self._last != since:
                continue  # the loop turned while it was sampled: this is no stall
            self._suspect = suspect
            if blocked > self.threshold and self._warned != since:
                self._warned = since
                log.warning(
                    "the event loop has been blocked for %.1f s by %s, at %s: sync code in an "
                    "agent stops every request; await instead, or use asyncio.to_thread",
                    blocked,
                    suspect.who(),
                    suspect.where,
                    extra={
                        "blocked_seconds": round(blocked, 3),
                        "stack": suspect.stack,
                        **suspect.fields(),
                    },
                )

    def _sample(self, loop: asyncio.AbstractEventLoop, since: float) -> _Culprit:
        # current_task(loop) reads the loop's entry in a dict, safe from this thread.
        task = asyncio.current_task(loop)
        name = task.get_name() if task is not None else ""
        task_id = name[len(TURN_PREFIX) :] if name.startswith(TURN_PREFIX) else ""
        frame = sys._current_frames().get(self._loop_thread)
        stack = []
        if frame is not None:
            summary = traceback.extract_stack(frame, limit=STACK_DEPTH)
            stack = [f"{f.filename}:{f.lineno} in {f.name}" for f in summary]
        return _Culprit(since, name, task_id, stack)
