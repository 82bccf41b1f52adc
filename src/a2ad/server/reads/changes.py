"""``GET /a2ad/changes``: a stream (SSE) of the caller's tasks as they change.

a2ad's own path, not A2A's: A2A streams one task's events (SubscribeToTask),
while a dashboard wants to hear of any task of the caller's that was created or
changed, to redraw what it shows. Each SSE event's data is
``{"tasks": [{"id", "contextId", "state", "timestamp"}, ...]}``: the tasks whose
status changed since the previous event, newest first, at most ``MAX_BATCH``
(more changed if ``"more": true``: read the list again).

The stream asks the store, through the same access rules as ListTasks, for
tasks whose status timestamp is at or after the newest one it has reported,
every ``poll_seconds`` (0.5 s): so it works on every store and across
instances, and it costs one small indexed query per interval per open stream,
nothing while nothing changes beyond that. A task that changes twice within an
interval is reported once, in its latest state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from contextlib import ExitStack

import msgspec

from ...agent import RequestContext
from ...protocol.errors import A2AError, InvalidRequestError, QuotaExceededError
from ...protocol.model import parse_timestamp
from ...protocol.requests import TaskQuery
from ...protocol.types import format_timestamp
from ..errors import error_body, internal_error
from ..handler import RequestHandler
from ..limits import StreamSlots, caller_key, retry_headers
from ..types import Receive, Scope, Send, caller_of, respond, response_start

__all__ = ["CHANGES_PATH", "MAX_BATCH", "ChangesEndpoint"]

log = logging.getLogger("a2ad.server")

CHANGES_PATH = "/a2ad/changes"
MAX_BATCH = 100
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
SLACK_SECONDS = 5.0  # how far back each read looks before the newest change reported

_encode = msgspec.json.Encoder().encode


class ChangesEndpoint:
    def __init__(
        self,
        handler: RequestHandler,
        *,
        streams: StreamSlots | None = None,
        poll_seconds: float = POLL_SECONDS,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.handler = handler
        # Counted with the caller's A2A streams (--max-streams-per-principal).
        self.streams = streams if streams is not None else StreamSlots(0)
        self.poll_seconds = poll_seconds
        self.keepalive_seconds = keepalive_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            error: A2AError = InvalidRequestError(f"{scope['method']} {CHANGES_PATH}: use GET")
            await respond(send, 405, error_body(error, 405), headers=[(b"allow", b"GET")])
            return
        caller = caller_of(scope)
        context = self.handler.request_context("1.0", "HTTP+JSON", (), caller)
        # From a second ago: a task made just before the stream opened is news too.
        since = format_timestamp(time.time() - 1.0)
        with ExitStack() as held:
            try:
                held.enter_context(self.streams.hold(caller_key(caller, scope.get("client"))))
                first = await self._changed(since, context)
            except A2AError as exc:
                headers = retry_headers(exc) if isinstance(exc, QuotaExceededError) else None
                await respond(send, exc.http_status, error_body(exc), headers=headers)
                return
            except Exception:
                failed = internal_error()
                await respond(send, failed.http_status, error_body(failed))
                return
            await self._serve(receive, send, context, since, first)

    async def _serve(
        self,
        receive: Receive,
        send: Send,
        context: RequestContext,
        since: str,
        first: list[tuple[str, str, str, str]],
    ) -> None:
        await send(
            response_start(
                200,
                [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                ],
            )
        )
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await self._stream(send, gone, context, since, first)
        except OSError:
            pass  # the client went away mid-write
        finally:
            gone.cancel()

    async def _stream(
        self,
        send: Send,
        gone: asyncio.Future[None],
        context: RequestContext,
        since: str,
        changed: list[tuple[str, str, str, str]],
    ) -> None:
        seen: dict[str, str] = {}  # task id -> the status timestamp last reported
        quiet = 0.0
        await send({"type": "http.response.body", "body": b": a2ad changes\n\n", "more_body": True})
        engine = self.handler.engine
        while not gone.done() and not engine.closing:
            news = [c for c in changed if seen.get(c[0]) != c[3]]
            if news:
                for task_id, _, _, timestamp in news:
                    seen[task_id] = timestamp
                    since = max(since, timestamp)
                # Forget what is older than the window the next query reads.
                low = _earlier(since)
                seen = {k: v for k, v in seen.items() if v >= low}
                body = _encode(
                    {
                        "tasks": [
                            {"id": i, "contextId": c, "state": s, "timestamp": t}
                            for i, c, s, t in news
                        ],
                        "more": len(changed) >= MAX_BATCH,
                    }
                )
                await send(
                    {
                        "type": "http.response.body",
                        "body": b"data: " + body + b"\n\n",
                        "more_body": True,
                    }
                )
                quiet = 0.0
            elif quiet >= self.keepalive_seconds:
                await send(
                    {"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True}
                )
                quiet = 0.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(gone), self.poll_seconds)
            if gone.done():
                break
            quiet += self.poll_seconds
            try:
                # From SLACK_SECONDS before the newest change reported: a write
                # stamped before it but committed after (or by an instance whose
                # clock is behind) is still found; ``seen`` drops the repeats.
                changed = await self._changed(_earlier(since), context)
            except Exception as exc:  # a store outage: say so and end; the page reconnects
                log.warning("the changes stream ended: %s", exc)
                await send({"type": "http.response.body", "body": b"event: error\ndata: {}\n\n"})
                return
        await send({"type": "http.response.body", "body": b""})

    async def _changed(
        self, since: str, context: RequestContext
    ) -> list[tuple[str, str, str, str]]:
        page = await self.handler.list_tasks(
            TaskQuery(page_size=MAX_BATCH, updated_after=since, history_length=0),
            context,
        )
        return [
            (t.id, t.context_id, t.status.state.value, t.status.timestamp or "") for t in page.tasks
        ]


def _earlier(timestamp: str) -> str:
    moment = parse_timestamp(timestamp)
    if moment is None:
        return timestamp
    return format_timestamp(moment.timestamp() - SLACK_SECONDS)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
