"""What one HTTP request was, for those who watch the server: metrics, access
logs and tracing.

The app makes a ``RequestRecord`` for every request and leaves it in the scope
(``record_of``); the bindings fill in what only they know (the A2A method, the
version, the error code, the task), and the response notes its status as it
starts (types.py ``response_start``, where every response of the app's starts).
A ``RequestObserver`` is told when a request begins and when it has ended (for
a stream: when the stream has). With no observer the app does nothing more than
make the record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec

from ..protocol.dialect import Operation, method_name
from ..protocol.v1 import V1
from .types import REQUEST_ID_HEADER, Scope

__all__ = [
    "OPERATION_NAMES",
    "RECORD_KEY",
    "REQUEST_ID_HEADER",
    "RequestObserver",
    "RequestRecord",
    "observing",
    "record_of",
]

RECORD_KEY = "a2ad.record"

# An operation as metrics, logs and spans name it, whichever version or binding
# asked: its A2A 1.0 method name. A bounded set, so fit for a metric label.
OPERATION_NAMES: dict[Operation, str] = {op: method_name(V1, op) for op in Operation}


class RequestRecord(msgspec.Struct, eq=False, gc=False):
    """One request, filled in as it is served.

    ``binding``: ``JSONRPC`` or ``HTTP+JSON`` for A2A requests; ``card``,
    ``usage``, ``health``, ``metrics``, ``dashboard`` (its page and files) and
    ``a2ad`` (the reads under /a2ad/ the dashboard uses) for a2ad's own paths;
    ``none`` for a path nothing serves. ``method``: the A2A operation's 1.0 name
    (``OPERATION_NAMES``), ``GetUsage``, or "" when the request named none the
    server knows. ``version``: ``1.0`` or ``0.3`` once known. ``code``: the A2A
    (JSON-RPC) error code the request was answered with, or None. ``status``:
    the HTTP status (0 until the response starts). ``agent``: the served agent's
    name ("" for the one at /). ``principal``: who the request authenticated as
    ("" without auth, or before). ``task_id``, ``context_id``: the task the
    request named or got, once known. ``request_id``: the request's id, if an
    observer gave it one (access_log.py); the response echoes it in its
    ``X-Request-ID`` header. ``started``: ``time.perf_counter()`` at arrival.

    A msgspec Struct, made in C: every request makes one, and a class setting
    twelve attributes in ``__init__`` cost a GetTask 1% of its instructions.
    Equal only to itself, as a plain object is (observers keep records in sets)."""

    path: str
    binding: str = "none"
    method: str = ""
    version: str = ""
    agent: str = ""
    code: int | None = None
    status: int = 0
    task_id: str = ""
    context_id: str = ""
    request_id: str = ""
    principal: str = ""
    started: float = msgspec.field(default_factory=time.perf_counter)

    def operation(self, operation: Operation, version: str) -> None:
        """The binding decoded which A2A operation, in which version, this is."""
        self.method = OPERATION_NAMES[operation]
        self.version = version

    def __repr__(self) -> str:
        return (
            f"RequestRecord({self.binding} {self.method or self.path!r} status={self.status} "
            f"code={self.code})"
        )


def record_of(scope: Scope) -> RequestRecord | None:
    """The request's record (None for a scope the app didn't make, e.g. a test
    calling an endpoint directly)."""
    return scope.get(RECORD_KEY)


class RequestObserver(Protocol):
    """Told of every request the app serves. ``began`` runs before routing, in
    the request's own asyncio task (what it sets in context variables holds for
    the request, and for tasks the request starts); what it returns is given
    back to ``ended``, which runs in the same task once the response is over
    (or the client is gone), whatever happened. Neither may raise."""

    def began(self, record: RequestRecord, scope: Scope) -> Any: ...

    def ended(self, record: RequestRecord, token: Any) -> None: ...


Began = Callable[[RequestRecord, Scope], Any]
Ended = Callable[[RequestRecord, Any], None]


def observing(observers: Sequence[RequestObserver]) -> tuple[Began | None, Ended | None]:
    """The app's two calls for ``observers`` (None, None for none): ``began``
    tells each in order and gives back what ``ended`` needs; ``ended`` tells
    each in reverse. One observer's own methods, with no call between; for
    more, one closure each (no loop over them on every request)."""
    if not observers:
        return None, None
    if len(observers) == 1:
        return observers[0].began, observers[0].ended
    if len(observers) == 2:
        began_1, began_2 = observers[0].began, observers[1].began
        ended_1, ended_2 = observers[0].ended, observers[1].ended

        def began_both(record: RequestRecord, scope: Scope) -> tuple[Any, Any]:
            return began_1(record, scope), began_2(record, scope)

        def ended_both(record: RequestRecord, tokens: tuple[Any, Any]) -> None:
            ended_2(record, tokens[1])
            ended_1(record, tokens[0])

        return began_both, ended_both
    began_each = tuple(observer.began for observer in observers)
    ended_each = tuple(observer.ended for observer in reversed(observers))

    def began_all(record: RequestRecord, scope: Scope) -> list[Any]:
        return [began(record, scope) for began in began_each]

    def ended_all(record: RequestRecord, tokens: list[Any]) -> None:
        for ended, token in zip(ended_each, reversed(tokens), strict=True):
            ended(record, token)

    return began_all, ended_all
