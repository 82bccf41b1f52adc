"""``GET /a2ad/activity?minutes=60``: what the caller's tasks did lately, for the
dashboard's charts.

a2ad's own path. It reads, through the same access rules as ListTasks, the
tasks whose status changed in the last ``minutes`` (1 to 1440), newest first,
at most ``MAX_SAMPLE`` of them, and answers::

    {"since", "until", "minutes", "bucketSeconds",
     "buckets": [{"start", "counts": {state: n}}],   # by when each task last changed
     "durations": {"count", "p50", "p90", "max", "bins": [{"le", "count"}]},
     "finished": n, "changed": n, "sampled": bool}

``changed`` (tasks whose status changed in the window) and ``finished`` (of those,
the ones that ended: completed, failed, canceled or rejected) are exact counts.
Buckets and durations (created to the last change, for tasks that ended; the
creation time is read from the task id, a version 7 UUID, so tasks whose ids are
not are left out) come from the newest ``MAX_SAMPLE`` when more changed
(``sampled``). Nothing here is kept: each call reads the store again.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from urllib.parse import parse_qsl

import msgspec

from ...agent import RequestContext
from ...protocol.errors import InvalidParamsError, InvalidRequestError
from ...protocol.model import TaskState
from ...protocol.requests import TaskQuery, decode_page_token
from ...protocol.types import format_timestamp
from ..errors import respond_read
from ..handler import RequestHandler
from ..types import Scope, Send, caller_of

__all__ = ["ACTIVITY_PATH", "MAX_SAMPLE", "ActivityEndpoint", "created_ms"]

ACTIVITY_PATH = "/a2ad/activity"
MAX_SAMPLE = 2_000
BUCKETS = 12
PAGE = 100
# Duration bins' upper bounds, in seconds (the last is everything longer).
DURATION_BINS = (1.0, 10.0, 60.0, 600.0, 3600.0, math.inf)
_ENDED = (TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED)
_encode = msgspec.json.Encoder().encode


def created_ms(task_id: str) -> int | None:
    """When a task with a version 7 UUID id was made (Unix ms), else None."""
    if len(task_id) != 36 or task_id[14] != "7":
        return None
    try:
        return int(task_id[:8] + task_id[9:13], 16)
    except ValueError:
        return None


def _epoch_ms(timestamp: str) -> int | None:
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class ActivityEndpoint:
    def __init__(self, handler: RequestHandler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, send: Send) -> None:
        await respond_read(send, self._read(scope), headers=[(b"cache-control", b"no-store")])

    async def _read(self, scope: Scope) -> bytes:
        if scope["method"] != "GET":
            raise InvalidRequestError(f"{scope['method']} {ACTIVITY_PATH}: use GET")
        minutes = _minutes(scope)
        context = self.handler.request_context("1.0", "HTTP+JSON", (), caller_of(scope))
        return await self.report(minutes, context, now=time.time())

    async def report(self, minutes: int, context: RequestContext, *, now: float) -> bytes:
        since_s = now - minutes * 60
        since = format_timestamp(since_s)
        bucket_s = minutes * 60 / BUCKETS
        buckets: list[dict[str, int]] = [{} for _ in range(BUCKETS)]
        durations: list[float] = []
        read = 0
        changed = 0
        cursor = None
        while read < MAX_SAMPLE:
            page = await self.handler.list_tasks(
                TaskQuery(page_size=PAGE, updated_after=since, cursor=cursor, history_length=0),
                context,
            )
            if cursor is None:
                changed = page.total_size
            for task in page.tasks:
                read += 1
                state = task.status.state
                at = _epoch_ms(task.status.timestamp or "")
                if at is None:
                    continue
                slot = min(BUCKETS - 1, max(0, int((at / 1000 - since_s) / bucket_s)))
                counts = buckets[slot]
                counts[state.value] = counts.get(state.value, 0) + 1
                made = created_ms(task.id)
                if state in _ENDED and made is not None and made <= at:
                    durations.append((at - made) / 1000)
            if not page.next_page_token:
                break
            cursor = decode_page_token(page.next_page_token)
        finished = 0
        for state in _ENDED:
            ended = await self.handler.list_tasks(
                TaskQuery(page_size=1, updated_after=since, state=state, history_length=0),
                context,
            )
            finished += ended.total_size
        durations.sort()
        bins = [0] * len(DURATION_BINS)
        for seconds in durations:
            bins[next(i for i, bound in enumerate(DURATION_BINS) if seconds <= bound)] += 1
        return _encode(
            {
                "since": since,
                "until": format_timestamp(now),
                "minutes": minutes,
                "bucketSeconds": bucket_s,
                "buckets": [
                    {"start": format_timestamp(since_s + i * bucket_s), "counts": counts}
                    for i, counts in enumerate(buckets)
                ],
                "durations": {
                    "count": len(durations),
                    "p50": _percentile(durations, 0.5) if durations else None,
                    "p90": _percentile(durations, 0.9) if durations else None,
                    "max": durations[-1] if durations else None,
                    "bins": [
                        {"le": None if math.isinf(b) else b, "count": n}
                        for b, n in zip(DURATION_BINS, bins, strict=True)
                    ],
                },
                "finished": finished,
                "changed": changed,
                "sampled": changed > read,
            }
        )


def _minutes(scope: Scope) -> int:
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    text = query.get("minutes", "60")
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 1440:
        raise InvalidParamsError(
            f"minutes={text[:40]!r}: give a whole number of minutes from 1 to 1440",
            field="minutes",
        )
    return int(text)
