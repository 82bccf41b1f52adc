"""Where the client's calls meet tracing, without importing it.

While a traced request or agent turn runs (``a2ad.server.tracing``), the
context variable ``CALL_TRACER`` holds a ``CallTracer``, which the client hands
each call it makes: it opens a span for the call and adds the call's trace
context (``traceparent``) to its headers. Outside one (tracing off, or a script
of its own) it is None and the client adds nothing, at the cost of one lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["CALL_TRACER", "CallTracer"]


class CallTracer(Protocol):
    """``with tracer(rpc_method, method, url, headers) as answered:`` around one
    HTTP exchange: ``rpc_method`` the A2A method called ("" for the agent
    card), ``method`` the HTTP one, ``headers`` the request's own, which it adds
    the trace context to; call ``answered(status)`` once the response starts.
    An exception leaving the block marks the call failed."""

    def __call__(
        self, rpc_method: str, method: str, url: str, headers: dict[str, str]
    ) -> AbstractContextManager[Callable[[int], None]]: ...


CALL_TRACER: ContextVar[CallTracer | None] = ContextVar("a2ad_call_tracer", default=None)
