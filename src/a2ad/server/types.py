"""The ASGI vocabulary every server module shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..agent import ANONYMOUS, Caller

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = [
    "CALLER_KEY",
    "ASGIApp",
    "Caller",
    "ClientGone",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "caller_of",
    "header",
    "read_body",
    "respond",
    "respond_empty",
]


CALLER_KEY = "a2ad.caller"  # the scope key under which authentication leaves the Caller


def caller_of(scope: Scope) -> Caller:
    """The caller that authentication found for this request (the anonymous one
    when auth is off)."""
    return scope.get(CALLER_KEY, ANONYMOUS)  # type: ignore[no-any-return]


def header(scope: Scope, name: bytes) -> str:
    """A request header's value (the first one), or ""."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")  # type: ignore[no-any-return]
    return ""


class ClientGone(Exception):
    """The client disconnected before its request body was complete: there is
    no one to answer, and half a body must not be acted on."""


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None once it grows past ``limit`` bytes (the rest is
    not read). Raises ClientGone if the client leaves before the body ends."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: bytes = b"application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def respond_empty(
    send: Send, status: int, *, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A response without a body (204, 304): no content headers either."""
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": b""})
