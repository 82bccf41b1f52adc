"""The JSON-RPC binding: a thin adapter over the request handler.

Read the body, decode the envelope, look up (dialect, operation) from the
method and the ``A2A-Version`` header (or query parameter of that name), and
hand the params to the ``Dispatcher`` (decode with the dialect, call the
handler, encode): one JSON result, or an SSE stream for the streaming
operations. a2ad's own ``a2ad/GetUsage`` (reads/usage.py) is answered beside them,
whatever the version. Every A2AError becomes a JSON-RPC error in the dialect's terms,
with the request's ``id`` whenever it can be read; anything else is logged with
an incident id and answered -32603 with that id, never a traceback. A
notification (no ``id``) is not run and gets no answer: HTTP 204
(docs/protocol.md says why).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack

from msgspec import UNSET

from ...protocol.dialect import Dialect, requested_version, resolve
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
from ..dispatch import Dispatcher, parse_event_id, version_text
from ..errors import internal_error
from ..extensions import echo_headers, requested_extensions
from ..handler import RequestHandler
from ..limits import Limits, StreamSlots, body_too_large, caller_key, refusal
from ..observed import record_of
from ..reads.usage import UsageEndpoint
from ..types import (
    ClientGone,
    Receive,
    Scope,
    Send,
    caller_of,
    header,
    read_body,
    respond,
    respond_empty,
)
from .sse import KEEPALIVE_SECONDS, stream_sse

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


class JsonRpcEndpoint:
    def __init__(
        self,
        handler: RequestHandler,
        *,
        limits: Limits | None = None,
        streams: StreamSlots | None = None,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        if not keepalive_seconds > 0:
            raise ValueError(f"keepalive_seconds must be positive, not {keepalive_seconds!r}")
        self.handler = handler
        self._dispatch = Dispatcher(handler)
        self._usage = UsageEndpoint(handler.engine)
        self.limits = limits if limits is not None else Limits()
        self.streams = streams if streams is not None else StreamSlots(0)
        self.keepalive_seconds = keepalive_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with ExitStack() as held:  # a stream's slot, held until its response ends
            await self._serve(scope, receive, send, held)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, held: ExitStack) -> None:
        try:
            body = await read_body(receive, self.limits.max_body_bytes)
        except ClientGone:
            return
        if body is None:
            error = body_too_large(self.limits.max_body_bytes)
            audit.refused(scope, error, method="POST " + scope["path"])
            if (record := record_of(scope)) is not None:
                record.code = error.code
            await respond(send, 413, encode_error(None, error))
            return
        record = record_of(scope)
        request_id: RequestId = None
        request: Request | None = None
        dialect: Dialect | None = None
        method = ""
        try:
            request = decode_request(body)
            if request.id is UNSET:
                await _ignore_notification(send, request.method)
                return
            request_id, method = request.id, request.method
            if method == USAGE_METHOD:
                if record is not None:
                    record.method = "GetUsage"
                report = await self._usage.rpc(request.params, caller_of(scope))
                await respond(send, 200, encode_result(request_id, report))
                return
            dialect, operation = resolve(requested_version(version_text(scope)), method)
            if record is not None:
                record.operation(operation, dialect.version)
            requested = requested_extensions(scope) if self.handler.extensions else ()
            caller = caller_of(scope)
            context = self.handler.request_context(dialect.version, "JSONRPC", requested, caller)
            if operation.streaming:
                held.enter_context(self.streams.hold(caller_key(caller, scope)))
                events = await self._dispatch.open_stream(
                    dialect,
                    operation,
                    method,
                    request.params,
                    context,
                    last_event_id=parse_event_id(header(scope, b"last-event-id")),
                    record=record,
                )
            else:
                result = await self._dispatch.call(
                    dialect, operation, method, request.params, context, scope
                )
        except A2AError as exc:
            wire = dialect.wire_error(exc, method) if dialect is not None else exc
            # Not a valid request object: its id, if readable. Not JSON (or not
            # UTF-8) is a parse error, whose id is null (JSON-RPC 2.0 §5).
            if request is None and not isinstance(exc, JSONParseError):
                request_id = readable_id(body)
            task_id, tenant = audit.task_id_in(request.params) if request else ("", "")
            audit.refused(scope, wire, method=method, task_id=task_id, tenant=tenant)
            if record is not None:
                record.code, record.task_id = wire.code, task_id
            # A quota or rate refusal is HTTP 429 here too, for clients and proxies
            # that back off on the status alone.
            status, headers = refusal(wire)
            await respond(send, status, encode_error(request_id, wire), headers=headers)
            return
        except Exception:
            failed = internal_error()
            if record is not None:
                record.code = failed.code
            await respond(send, 200, encode_error(request_id, failed))
            return
        echo = echo_headers(dialect.version, context.extensions) if context.extensions else None
        if not operation.streaming:
            await respond(send, 200, encode_result(request_id, result), headers=echo)
            return
        encode_item, wire_error = dialect.encode_stream_item, dialect.wire_error

        def encode(item: StreamItem, last: bool) -> bytes:
            return encode_result(request_id, encode_item(item, last))

        def fail(error: A2AError) -> bytes:
            return encode_error(request_id, wire_error(error, method))

        await stream_sse(
            send,
            receive,
            events,
            encode,
            fail,
            keepalive=self.keepalive_seconds,
            headers=echo,
            client=scope.get("client"),
        )
