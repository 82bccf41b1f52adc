"""A request and its answer as the dispatcher and the authenticators see them,
whatever the transport: no ASGI scope, no HTTP.

``Inbound`` is what any request carries before it is read: its headers (HTTP's,
or gRPC's metadata: both are lowercase names with values) and the peer it came
from. Authenticators take it (server/auth.py). ``A2ARequest`` is a request once a
binding has read its wire form: the dialect (so the A2A version), the
``Operation``, the method name that messages say, the params as JSON, and the
``RequestContext`` (the caller, the activated extensions). The dispatcher
(server/dispatch.py) takes one and answers a ``Reply`` (the result as a model
value) or the ``EventStream`` of a streaming operation, or raises the A2AError
that is its third answer; each binding puts these on its own wire.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from ..agent import Caller, RequestContext
from ..engine import EventStream
from ..protocol.dialect import Operation
from ..protocol.model import (
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Task,
    TaskPushNotificationConfig,
)
from .dialect import ServerDialect
from .observed import RequestRecord

__all__ = ["A2ARequest", "Answer", "Headers", "Inbound", "Peer", "Reply", "ReplyValue"]

Peer = tuple[str, int]  # the remote address and port


class Headers(Mapping[str, str]):
    """A request's headers (or gRPC metadata), looked up case-insensitively.

    A view over ``(name, value)`` byte pairs with lowercase names, as ASGI and
    HTTP/2 give them. A name given more than once is one key whose value is its
    first; ``all`` gives every value. ``first`` looks names up in a dict of the
    first values, made at the first lookup unless given (the ASGI bindings hand
    over the request's, types.request_headers)."""

    __slots__ = ("_first", "pairs")

    def __init__(
        self, pairs: Sequence[tuple[bytes, bytes]] = (), first: dict[bytes, bytes] | None = None
    ) -> None:
        self.pairs = pairs  # as given: read it for a pass over them all
        self._first = first

    @classmethod
    def of(cls, items: Mapping[str, str] | Sequence[tuple[str, str]]) -> Headers:
        """Headers from text names and values (any case), e.g. gRPC metadata."""
        pairs = items.items() if isinstance(items, Mapping) else items
        return cls([(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs])

    def first(self, name: bytes) -> str:
        """The value of the lowercase ``name`` (its first), or "": the fast lookup."""
        found = self._first
        if found is None:
            found = self._first = dict(reversed(self.pairs))  # the first wins
        value = found.get(name)
        return "" if value is None else value.decode("latin-1")

    def all(self, name: str) -> list[str]:
        """Every value given for ``name``, in order."""
        wanted = name.lower().encode("latin-1")
        return [value.decode("latin-1") for key, value in self.pairs if key == wanted]

    def __getitem__(self, name: str) -> str:
        wanted = name.lower().encode("latin-1")
        for key, value in self.pairs:
            if key == wanted:
                return value.decode("latin-1")
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(key.decode("latin-1") for key, _ in self.pairs))

    def __len__(self) -> int:
        return len({key for key, _ in self.pairs})

    def __repr__(self) -> str:
        return f"Headers({list(self.keys())!r})"


class Inbound(msgspec.Struct, eq=False):
    """A request as it arrives: its headers and the peer it came from (None when
    the transport does not say). What an Authenticator reads. (Structs, made in
    C: every request makes one.)"""

    headers: Headers
    peer: Peer | None = None

    @property
    def remote(self) -> str:
        """``host:port`` of the peer, or "" (as the audit and access logs name it)."""
        peer = self.peer
        return f"{peer[0]}:{peer[1]}" if peer else ""


class A2ARequest(Inbound, kw_only=True):
    """One A2A request, read from its wire by a binding.

    ``method``: how messages name the operation (``tasks/get``, ``GET
    /tasks/{id}``); ``params``: its params as the JSON-RPC binding carries them
    (a binding of another form writes them so), which the dialect decodes;
    ``context``: from ``RequestHandler.request_context`` (the caller, the version,
    the binding, the activated extensions); ``record``: the request's record, if
    it is observed, which learns the task it names or gets; ``last_event_id``:
    where a subscription resumes; ``base_url``: where the client reached the
    server (the extended card's URLs start with it; only that operation reads it)."""

    dialect: ServerDialect
    operation: Operation
    method: str
    params: msgspec.Raw
    context: RequestContext
    record: RequestRecord | None = None
    last_event_id: int | None = None
    base_url: str = ""

    @property
    def version(self) -> str:
        """The A2A version the request speaks (``1.0``, ``0.3``)."""
        return self.dialect.version

    @property
    def caller(self) -> Caller:
        return self.context.caller

    def __repr__(self) -> str:
        return f"A2ARequest({self.context.binding} {self.method!r} A2A {self.version})"


# What a non-streaming operation answers, by operation: SendMessage a Task or a
# Message; GetTask and CancelTask a Task; ListTasks a page; the push config
# operations a config, a page of them, or None (deleted); GetExtendedAgentCard the
# card as JSON-ready data, rendered for the request's version and base URL.
ReplyValue = (
    Task
    | Message
    | ListTasksResponse
    | TaskPushNotificationConfig
    | ListTaskPushNotificationConfigsResponse
    | dict[str, Any]
    | None
)


class Reply(NamedTuple):
    """The result of a non-streaming operation, as a model value (what callers
    may see of it: internal parts hidden as the dispatcher decided)."""

    operation: Operation
    value: ReplyValue


Answer = Reply | EventStream
