"""Writing an EventStream as Server-Sent Events.

Four things run together and the first to finish ends the response: the writer,
a watcher for the client's disconnect, a watcher for the subscriber being
dropped (its buffer filled because the client stopped reading; then the writer
may be stuck in ``send`` and must be cancelled, not awaited), and at shutdown a
watcher that gives the writer a moment to send what is buffered (the task's
final event) before it is cancelled the same way. A stream whose reader fell
behind ends with a JSON-RPC error event naming the last event it carried, so
the reader knows the task is not over and where to resubscribe from; so does a
stream the task store's outage cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ...engine import EventStream
from ...protocol.errors import A2AError, StreamFellBehindError
from ...protocol.types import Seq, StreamItem
from ...store.base import StoreUnavailableError
from ..errors import store_unavailable
from ..types import Receive, Send, response_start

__all__ = [
    "KEEPALIVE_SECONDS",
    "fell_behind_error",
    "log_fell_behind",
    "stream_over",
    "stream_sse",
]

log = logging.getLogger("a2ad.server")

KEEPALIVE_SECONDS = 15.0
_FINISH_SECONDS = 1.0
_SHUTDOWN_FLUSH_SECONDS = 2.0  # at shutdown, the writer's time to send what is buffered
_WATCHER_GRACE_SECONDS = 1.0  # a finished stream's disconnect watcher, left to end by itself
# How long a reader that fell behind has to take the error that says so. The
# server's cost meanwhile is one idle coroutine and what the socket already holds.
_BEHIND_SECONDS = 10.0

# JSON allows these raw in strings, but they end a line for readers that split
# lines the way str.splitlines does (httpx-sse before 0.4.2, among others), which
# cuts a data line in two. In valid UTF-8 each sequence is that character alone.
_LINE_BREAKS = (
    (b"\xc2\x85", b"\\u0085"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)


def _one_line(data: bytes) -> bytes:
    """Non-ASCII JSON (as msgspec writes it: control characters already escaped)
    with the Unicode line breaks escaped too, so it stays one ``data:`` line for
    any reader. Callers skip ASCII data, the common case, without a call."""
    for raw, escaped in _LINE_BREAKS:
        data = data.replace(raw, escaped)
    return data


def fell_behind_error(events: EventStream, last_id: Seq | None) -> StreamFellBehindError:
    task_id = events.task_id or ""
    metadata = {"taskId": task_id}
    if last_id is None:
        resume = "resubscribe (SubscribeToTask, or tasks/resubscribe in 0.3) to get the task anew"
    else:
        metadata["lastEventId"] = str(last_id)
        resume = (
            "resubscribe (SubscribeToTask, or tasks/resubscribe in 0.3) with the header "
            f"Last-Event-ID: {last_id} to get the events after the last one it carried"
        )
    return StreamFellBehindError(
        f"Task {task_id}: this stream's reader fell too far behind, so the server stopped "
        f"holding events for it and ended the stream; the task goes on: {resume}",
        metadata=metadata,
    )


class _Writer:
    """Writes a stream's events as frames, and remembers how far it got: the id
    of the last frame handed to the server (uvicorn waits for the socket to
    drain before it writes, so a frame whose send was cancelled was not sent)
    and whether the last event went."""

    __slots__ = ("encode", "ended", "events", "keepalive", "last_id", "send")

    def __init__(
        self,
        send: Send,
        events: EventStream,
        encode: Callable[[StreamItem, bool], bytes],
        keepalive: float,
    ) -> None:
        self.send = send
        self.events = events
        self.encode = encode
        self.keepalive = keepalive
        self.last_id: Seq | None = None  # None only in the stream of a single Message
        self.ended = False

    async def write(self) -> None:
        send, events, encode = self.send, self.events, self.encode
        while True:
            try:
                step = await events.next(timeout=self.keepalive)
            except TimeoutError:
                await send(
                    {"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True}
                )
                continue
            if step is None:
                return
            seq, item, last = step
            head = b"id: %d\n" % seq if seq is not None else b""
            data = encode(item, last)
            if not data.isascii():
                data = _one_line(data)
            frame = b"%sdata: %s\n\n" % (head, data)
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            self.last_id = seq
            if last:
                self.ended = True
                return


async def stream_sse(
    send: Send,
    receive: Receive,
    events: EventStream,
    encode: Callable[[StreamItem, bool], bytes],
    fail: Callable[[A2AError], bytes],
    *,
    keepalive: float = KEEPALIVE_SECONDS,
    headers: list[tuple[bytes, bytes]] | None = None,
    client: Any = None,
) -> None:
    """Send ``events`` as ``id:``/``data:`` frames; ``encode(item, last)`` makes a
    data line, ``fail(error)`` the error event that ends a stream cut short.
    ``headers`` go with the response's own; ``client`` is the reader's address
    (the ASGI scope's ``client``), named by the warning logged if it falls behind."""
    await send(
        response_start(
            200,
            [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
                *(headers or []),
            ],
        )
    )
    writer = _Writer(send, events, encode, keepalive)

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    # The stream ends at the first of: the writer done, the client gone, the reader
    # dropped, the server's shutdown flush over.
    loop = asyncio.get_running_loop()
    writing: asyncio.Future[None] = asyncio.ensure_future(writer.write())
    watching: asyncio.Future[None] = asyncio.ensure_future(disconnected())
    over = stream_over(events, writing, watching)
    try:
        try:
            await over
        finally:
            events.close()
        done = {job for job in (writing, watching) if job.done()}
        if not writing.done():  # stuck in a send: the reader was dropped, or the client left
            writing.cancel()
            await asyncio.wait({writing})
        closing = _closing(writer, fail, done, client, connected=watching not in done)
        # A stalled client may never take the closing chunk; don't wait on it forever.
        with contextlib.suppress(TimeoutError, OSError):
            async with asyncio.timeout(_BEHIND_SECONDS if closing else _FINISH_SECONDS):
                for body in closing:
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
    except BaseException:
        writing.cancel()
        watching.cancel()
        raise
    if not watching.done():
        # The response is complete, so the server's receive() says http.disconnect
        # (uvicorn does at once) and the watcher ends by itself: cancelling it, its
        # error thrown through receive(), cost more than the rest of the stream's
        # ending. A server whose receive() waits on has it cancelled shortly.
        watching.add_done_callback(_retrieved)
        loop.call_later(_WATCHER_GRACE_SECONDS, watching.cancel)


def stream_over(events: EventStream, *jobs: asyncio.Future[None]) -> asyncio.Future[None]:
    """What a stream's writer awaits: done at the first of ``jobs`` done (the
    writer, a watcher for the client), the reader dropped (its buffer filled),
    or, once the server shuts down, the moment it has to send what is buffered
    (the task's final event). The last two are callbacks, not tasks: two tasks a
    stream, each made, waited on and cancelled, cost a SendStreamingMessage
    about 2% (bench/inprocess.py)."""
    loop = asyncio.get_running_loop()
    over: asyncio.Future[None] = loop.create_future()

    def end(_: object = None) -> None:
        if not over.done():
            over.set_result(None)

    def cut(dropped: bool) -> None:
        if dropped:
            end()
        else:  # the server is shutting down: what is buffered may still go
            loop.call_later(_SHUTDOWN_FLUSH_SECONDS, end)

    for job in jobs:
        job.add_done_callback(end)
    events.watch(cut)
    return over


def _retrieved(job: asyncio.Future[None]) -> None:
    """A job nobody awaits: its error, if any, is counted as read (a receive()
    that failed once the response was over is nothing to report)."""
    if not job.cancelled():
        job.exception()


def _closing(
    writer: _Writer,
    fail: Callable[[A2AError], bytes],
    done: set[asyncio.Future[None]],
    client: Any,
    *,
    connected: bool,
) -> list[bytes]:
    """The frames that end a stream whose jobs are ``done``: an error event when
    the store's outage cut it short, or its reader fell behind (and is still
    there to be told). Raises what a job failed with, any other exception."""
    cut: StoreUnavailableError | None = None
    for job in done:
        failed = None if job.cancelled() else job.exception()
        if isinstance(failed, StoreUnavailableError):
            cut = failed
        elif failed is not None:
            raise failed
    last_id = writer.last_id
    if cut is not None:  # its reader can resubscribe, as after falling behind
        return [b"data: %s\n\n" % _one_line(fail(store_unavailable(cut, last_event_id=last_id)))]
    events = writer.events
    if events.fell_behind and not writer.ended:
        log_fell_behind(events, last_id, client)
        if connected:  # still connected: tell it
            return [b"data: %s\n\n" % _one_line(fail(fell_behind_error(events, last_id)))]
    return []


def log_fell_behind(events: EventStream, last_id: Seq | None, client: Any) -> None:
    """One line for a stream whose reader was dropped (its buffer filled), naming
    the task, the reader's address and the last event it was sent."""
    remote = f"{client[0]}:{client[1]}" if client else ""
    log.warning(
        "a stream's reader at %s fell too far behind: its stream was ended, the task goes on",
        remote or "an unknown address",
        extra={"task_id": events.task_id or "", "remote": remote, "last_event_id": last_id},
    )
