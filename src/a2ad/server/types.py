"""The ASGI vocabulary every server module shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .. import log_context
from ..agent import ANONYMOUS, Caller

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = [
    "CALLER_KEY",
    "REQUEST_ID_HEADER",
    "ASGIApp",
    "BodyTooLarge",
    "Caller",
    "ClientGone",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "caller_of",
    "header",
    "read_body",
    "request_headers",
    "respond",
    "respond_empty",
    "response_start",
]


CALLER_KEY = "a2ad.caller"  # the scope key under which authentication leaves the Caller
HEADERS_KEY = "a2ad.headers"  # the scope key of request_headers' dict
REQUEST_ID_HEADER = b"x-request-id"  # the request's id, as the client may give it and is echoed


def caller_of(scope: Scope) -> Caller:
    """The caller that authentication found for this request (the anonymous one
    when auth is off)."""
    return scope.get(CALLER_KEY, ANONYMOUS)  # type: ignore[no-any-return]


def request_headers(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by lowercase name, each its first value: made once a
    request (in C) and kept in the scope, for every lookup that follows (the
    request id, the version, the extensions, the credential, the card's host)."""
    found: dict[bytes, bytes] | None = scope.get(HEADERS_KEY)
    if found is None:
        found = scope[HEADERS_KEY] = dict(reversed(scope["headers"]))  # the first wins
    return found


def header(scope: Scope, name: bytes) -> str:
    """A request header's value (the first one), or ""."""
    value = request_headers(scope).get(name)
    return "" if value is None else value.decode("latin-1")


class BodyTooLarge(Exception):
    """The request body grew past ``limit`` bytes: answered 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over {limit} bytes")
        self.limit = limit


class ClientGone(Exception):
    """The client disconnected before its request body was complete: there is
    no one to answer, and half a body must not be acted on."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The request body. Raises BodyTooLarge once it grows past ``limit`` bytes
    (the rest is not read), ClientGone if the client leaves before it ends."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    chunk: bytes = message.get("body", b"")
    size = len(chunk)
    if size > limit:
        raise BodyTooLarge(limit)
    if not message.get("more_body", False):  # most bodies: one message
        return chunk
    chunks = [chunk]
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def response_start(status: int, headers: list[tuple[bytes, bytes]]) -> Message:
    """The message that starts a response (every response of the app's starts
    with one made here). On an observed request (the app has observers; see
    log_context.request) it notes ``status`` in the request's record and echoes
    the request's id in ``X-Request-ID``, appended to ``headers``."""
    record = log_context.request.get()
    if record is not None:
        record.status = status
        if record.request_id:
            headers.append((REQUEST_ID_HEADER, record.request_id.encode("latin-1")))
    return {"type": "http.response.start", "status": status, "headers": headers}


async def respond(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: bytes = b"application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    start = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    if headers:
        start += headers
    await send(response_start(status, start))
    await send({"type": "http.response.body", "body": body})


async def respond_empty(
    send: Send, status: int, *, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A response without a body (204, 304): no content headers either."""
    await send(response_start(status, [*headers] if headers else []))
    await send({"type": "http.response.body", "body": b""})
