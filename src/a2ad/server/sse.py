"""Writing an EventStream as Server-Sent Events.

Four things run together and the first to finish ends the response: the writer,
a watcher for the client's disconnect, a watcher for the subscriber being
dropped (its buffer filled because the client stopped reading; then the writer
may be stuck in ``send`` and must be cancelled, not awaited), and at shutdown a
watcher that gives the writer a moment to send what is buffered (the task's
final event) before it is cancelled the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from ..engine import EventStream
from ..protocol.types import StreamItem
from .types import Receive, Send

__all__ = ["KEEPALIVE_SECONDS", "stream_sse"]

KEEPALIVE_SECONDS = 15.0
_FINISH_SECONDS = 1.0
_SHUTDOWN_FLUSH_SECONDS = 2.0  # at shutdown, the writer's time to send what is buffered


async def stream_sse(
    send: Send,
    receive: Receive,
    events: EventStream,
    encode: Callable[[StreamItem, bool], bytes],
    *,
    keepalive: float = KEEPALIVE_SECONDS,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Send ``events`` as ``id:``/``data:`` frames; ``encode(item, last)`` makes a data line.
    ``headers`` go with the response's own."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
                *(headers or []),
            ],
        }
    )

    async def write() -> None:
        while True:
            try:
                step = await events.next(timeout=keepalive)
            except TimeoutError:
                await send(
                    {"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True}
                )
                continue
            if step is None:
                return
            seq, item, last = step
            head = b"id: %d\n" % seq if seq is not None else b""
            frame = b"%sdata: %s\n\n" % (head, encode(item, last))
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            if last:
                return

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    jobs: list[asyncio.Future[object]] = [
        asyncio.ensure_future(write()),
        asyncio.ensure_future(disconnected()),
    ]
    if events.dropped is not None:
        jobs.append(asyncio.ensure_future(events.dropped.wait()))
    if events.ending is not None:
        jobs.append(asyncio.ensure_future(_after(events.ending, _SHUTDOWN_FLUSH_SECONDS)))
    try:
        done, _pending = await asyncio.wait(jobs, return_when=asyncio.FIRST_COMPLETED)
    finally:
        events.close()
        for job in jobs:
            job.cancel()
        for job in jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job
    for job in done:
        if not job.cancelled() and job.exception() is not None:
            raise job.exception()  # type: ignore[misc]
    # A stalled client may never take the closing chunk; don't wait on it forever.
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(_FINISH_SECONDS):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _after(event: asyncio.Event, seconds: float) -> None:
    await event.wait()
    await asyncio.sleep(seconds)
