"""The JSON-RPC binding: a thin adapter over the serve skeleton (skeleton.py).

Read the body, decode the envelope, look up (dialect, operation) from the
method and the ``A2A-Version`` header (or query parameter of that name): that
is the neutral request, which the skeleton hands to the ``Dispatcher`` (decode
with the dialect, call the handler); its answer goes back as one JSON-RPC
result, or an SSE stream of them for the streaming operations. a2ad's own
``a2ad/GetUsage`` (reads/usage.py) is answered beside them, whatever the
version. Every A2AError becomes a JSON-RPC error in the dialect's terms, with
the request's ``id`` whenever it can be read; anything else is logged with an
incident id and answered -32603 with that id, never a traceback. A
notification (no ``id``) is not run and gets no answer: HTTP 204
(docs/protocol.md says why).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from msgspec import UNSET

from ...protocol.dialect import Operation, resolve_asked
from ...protocol.errors import A2AError, JSONParseError
from ...protocol.jsonrpc import (
    Request,
    RequestId,
    decode_request,
    encode_error,
    encode_result,
    readable_id,
)
from ...protocol.types import StreamItem
from ...protocol.usage import USAGE_METHOD
from .. import audit
from ..dialect import ServerDialect
from ..handler import RequestHandler
from ..limits import Limits, StreamSlots, refusal
from ..reads.usage import UsageEndpoint
from ..request import A2ARequest, ReplyValue
from ..types import Receive, Scope, Send, caller_of, respond, respond_empty
from .skeleton import BindingEndpoint, Exchange, Refusal, json_reply, serve
from .sse import KEEPALIVE_SECONDS

__all__ = ["JsonRpcEndpoint"]

log = logging.getLogger("a2ad.server")


async def _ignore_notification(send: Send, method: str) -> None:
    # A2A has no notifications (every method answers, and requires an id), and
    # JSON-RPC 2.0 forbids answering one: so it is neither run nor answered.
    log.info(
        "ignored a JSON-RPC notification (a request without an id) for %r; "
        "A2A requests need an id to be answered",
        method[:200],
        extra={"method": method[:200]},
    )
    await respond_empty(send, 204)


class JsonRpcEndpoint(BindingEndpoint):
    binding = "JSONRPC"

    def __init__(
        self,
        handler: RequestHandler,
        *,
        limits: Limits | None = None,
        streams: StreamSlots | None = None,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        super().__init__(
            handler, limits=limits, streams=streams, keepalive_seconds=keepalive_seconds
        )
        self.usage = UsageEndpoint(handler.engine)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        return serve(_JsonRpcExchange(self, scope, receive, send))  # no coroutine of its own


class _JsonRpcExchange(Exchange):
    """One JSON-RPC request: what is known of it so far decides how an error reads."""

    endpoint: JsonRpcEndpoint
    # What ``read`` learned of the request so far (class defaults: no __init__ to run).
    body_read = b""
    envelope: Request | None = None
    request_id: RequestId = None
    dialect: ServerDialect | None = None
    method = ""

    async def read(self) -> A2ARequest | None:
        self.body_read = body = await self.body()
        self.envelope = envelope = decode_request(body)
        if envelope.id is UNSET:
            await _ignore_notification(self.send, envelope.method)
            return None
        self.request_id = envelope.id
        self.method = method = envelope.method
        record = self.record
        if method == USAGE_METHOD:
            if record is not None:
                record.method = "GetUsage"
            report = await self.endpoint.usage.rpc(envelope.params, caller_of(self.scope))
            await respond(self.send, 200, encode_result(self.request_id, report))
            return None
        dialect, operation = resolve_asked(self.version_asked(), method)
        self.dialect = dialect
        if record is not None:
            record.operation(operation, dialect.version)
        return self.request(dialect, operation, method, envelope.params)

    def too_large(self, error: A2AError) -> tuple[str, bytes]:
        return "POST " + self.scope["path"], encode_error(None, error)

    def refusal(self, error: A2AError) -> Refusal:
        dialect, envelope = self.dialect, self.envelope
        wire = dialect.wire_error(error, self.method) if dialect is not None else error
        # Not a valid request object: its id, if readable. Not JSON (or not
        # UTF-8) is a parse error, whose id is null (JSON-RPC 2.0 §5).
        if envelope is None and not isinstance(error, JSONParseError):
            self.request_id = readable_id(self.body_read)
        task_id, tenant = audit.task_id_in(envelope.params) if envelope else ("", "")
        return Refusal(wire, self.method, task_id, tenant)

    def error_answer(self, wire: A2AError) -> tuple[int, bytes]:
        # A quota or rate refusal is HTTP 429 here too, for clients and proxies
        # that back off on the status alone (limits.refusal); any other error is 200.
        return refusal(wire)[0], encode_error(self.request_id, wire)

    def result(self, operation: Operation, value: ReplyValue) -> bytes:
        assert self.dialect is not None
        return encode_result(self.request_id, json_reply(self.dialect, operation, value))

    def stream_codec(
        self, request: A2ARequest
    ) -> tuple[Callable[[StreamItem, bool], bytes], Callable[[A2AError], bytes]]:
        request_id, method = self.request_id, self.method
        encode_item, wire_error = request.dialect.encode_stream_item, request.dialect.wire_error

        def encode(item: StreamItem, last: bool) -> bytes:
            return encode_result(request_id, encode_item(item, last))

        def fail(error: A2AError) -> bytes:
            return encode_error(request_id, wire_error(error, method))

        return encode, fail
