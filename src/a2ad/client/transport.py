"""What the client's operations need of a binding: JSON-RPC over HTTP
(``rpc.py``'s ``JsonRpc``) or gRPC (``grpc_transport.py``'s ``GrpcTransport``).

Both take an operation's params as the 1.0 dialect's JSON (0.3's too, over
JSON-RPC) and give back its result as that JSON, so ``Client`` encodes and
decodes the same way whichever carries them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeVar

from ..protocol.dialect import Dialect, Operation
from ..protocol.types import StreamItem

__all__ = ["Transport"]

T = TypeVar("T")


class Transport(Protocol):
    """Calls of A2A operations to one server. ``dialect`` is None until the
    client has chosen it (from the card, or forced), and set before any call."""

    url: str
    dialect: Dialect | None

    async def aclose(self) -> None: ...

    async def call(self, op: Operation, params: bytes) -> bytes:
        """One call; returns the raw JSON of its result, or raises the A2A error
        the server answered (``ClientError`` when none came, or not A2A)."""
        ...

    def events(
        self, op: Operation, params: bytes, *, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[str, StreamItem]]:
        """A streaming call: (event id, item) for each event the server sends;
        the id is "" when the server gives none. ``last_event_id`` asks for the
        events after that one."""
        ...

    def decode(self, decode: Callable[[bytes], T], raw: bytes) -> T:
        """``decode(raw)``, a result that does not decode being a ``ClientError``."""
        ...
