"""What the client's operations need of a binding: JSON-RPC over HTTP
(``rpc.py``'s ``JsonRpc``) or gRPC (``grpc_transport.py``'s ``GrpcTransport``),
and of the codec of what it carries.

Each takes an operation's params as the JSON its ``dialect`` encodes and gives
back its result as the JSON that dialect decodes, so ``Client`` encodes and
decodes the same way whichever carries them: over JSON-RPC a ``Dialect`` (1.0's
or 0.3's), over gRPC 1.0's (its JSON is ProtoJSON) or ``V03Grpc`` (0.3's
proto).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeVar

from ..protocol.dialect import Operation, Version
from ..protocol.model import (
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
)
from ..protocol.types import StreamItem

__all__ = ["Codec", "Transport"]

T = TypeVar("T")


class Codec(Protocol):
    """The client's half of a dialect: its requests' params from the model,
    and its results back into it (raising ValueError or an A2AError for one
    that is not of this version)."""

    @property
    def version(self) -> Version: ...

    def encode_send(self, request: SendMessageRequest) -> bytes: ...

    def encode_get(self, request: GetTaskRequest) -> bytes: ...

    def encode_list(self, request: ListTasksRequest) -> bytes: ...

    def encode_task_id(self, request: TaskIdRequest) -> bytes: ...

    def decode_send_result(self, raw: bytes) -> Task | Message: ...

    def decode_task(self, raw: bytes) -> Task: ...

    def decode_page(self, raw: bytes) -> ListTasksResponse: ...

    def decode_stream_item(self, raw: bytes) -> StreamItem: ...


class Transport(Protocol):
    """Calls of A2A operations to one server. ``dialect`` is None until the
    client has chosen it (from the card, or forced), and set before any call."""

    url: str

    @property
    def dialect(self) -> Codec | None: ...

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
