"""The JSON-RPC binding: a thin adapter over the request handler.

Read the body, decode the envelope, look up (dialect, operation) from the
method and the ``A2A-Version`` header (or query parameter of that name), decode
the params with the dialect, call the handler, encode the answer: one JSON
result, or an SSE stream for the streaming operations. Every A2AError becomes a
JSON-RPC error in the dialect's terms; anything else is logged with an incident
id and answered -32603 with that id, never a traceback.
"""

from __future__ import annotations

import logging
import uuid
from urllib.parse import parse_qsl

import msgspec

from ..engine import EventStream
from ..protocol.dialect import Dialect, Operation, requested_version, resolve
from ..protocol.errors import A2AError, InternalError, InvalidRequestError
from ..protocol.jsonrpc import RequestId, decode_request, encode_error, encode_result
from ..protocol.types import StreamItem
from .handler import RequestHandler
from .sse import KEEPALIVE_SECONDS, stream_sse
from .types import Receive, Scope, Send, header, respond

__all__ = ["MAX_BODY_BYTES", "JsonRpcEndpoint"]

log = logging.getLogger("a2ad.server")

MAX_BODY_BYTES = 10 * 1024 * 1024


def _version_text(scope: Scope) -> str:
    value = header(scope, b"a2a-version").strip()
    if not value and scope.get("query_string"):
        query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
        value = query.get("A2A-Version", "")
    return value


def _event_id(text: str) -> int | None:
    """A ``Last-Event-ID`` as we issue them (a sequence number), or None to ignore it."""
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


class JsonRpcEndpoint:
    def __init__(
        self,
        handler: RequestHandler,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        if not keepalive_seconds > 0:
            raise ValueError(f"keepalive_seconds must be positive, not {keepalive_seconds!r}")
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.keepalive_seconds = keepalive_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await self._read_body(receive)
        if body is None:
            error: A2AError = InvalidRequestError(
                f"Request body is larger than {self.max_body_bytes} bytes; send less"
            )
            await respond(send, 413, encode_error(None, error))
            return
        request_id: RequestId = None
        dialect: Dialect | None = None
        method = ""
        try:
            request = decode_request(body)
            request_id, method = request.id, request.method  # type: ignore[assignment]
            dialect, operation = resolve(requested_version(_version_text(scope)), method)
            if operation.streaming:
                events = await self._open_stream(scope, dialect, operation, method, request.params)
            else:
                result = await self._call(dialect, operation, method, request.params)
        except A2AError as exc:
            wire = dialect.wire_error(exc, method) if dialect is not None else exc
            await respond(send, 200, encode_error(request_id, wire))
            return
        except Exception:
            incident = uuid.uuid4().hex[:12]
            log.exception("request failed", extra={"incident": incident})
            internal = InternalError(
                f"Internal error (incident {incident}); the server log has the details"
            )
            await respond(send, 200, encode_error(request_id, internal))
            return
        if not operation.streaming:
            await respond(send, 200, encode_result(request_id, result))
            return
        encode_item = dialect.encode_stream_item

        def encode(item: StreamItem, last: bool) -> bytes:
            return encode_result(request_id, encode_item(item, last))

        await stream_sse(send, receive, events, encode, keepalive=self.keepalive_seconds)

    async def _read_body(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _call(
        self, dialect: Dialect, operation: Operation, method: str, params: msgspec.Raw
    ) -> bytes:
        handler = self.handler
        match operation:
            case Operation.SEND:
                request = dialect.decode_send(params, method)
                result = await handler.send_message(request, dialect=dialect)
                return dialect.encode_send_result(result)
            case Operation.GET:
                task = await handler.get_task(dialect.decode_get(params, method))
                return dialect.encode_task(task)
            case Operation.LIST:
                page = await handler.list_tasks(dialect.decode_list(params, method))
                return dialect.encode_page(page)
            case Operation.CANCEL:
                task = await handler.cancel_task(dialect.decode_task_id(params, method))
                return dialect.encode_task(task)
            case Operation.CREATE_PUSH_CONFIG:
                config = dialect.decode_push_config(params, method)
                created = await handler.create_push_config(config, dialect=dialect)
                return dialect.encode_push_config(created)
            case Operation.GET_PUSH_CONFIG:
                config_id = dialect.decode_push_config_id(params, method)
                return dialect.encode_push_config(await handler.get_push_config(config_id))
            case Operation.LIST_PUSH_CONFIGS:
                listing = dialect.decode_list_push_configs(params, method)
                return dialect.encode_push_config_page(await handler.list_push_configs(listing))
            case Operation.DELETE_PUSH_CONFIG:
                await handler.delete_push_config(dialect.decode_push_config_id(params, method))
                return dialect.encode_deleted()
        assert operation is Operation.EXTENDED_CARD, operation
        await handler.get_extended_agent_card(method)

    async def _open_stream(
        self,
        scope: Scope,
        dialect: Dialect,
        operation: Operation,
        method: str,
        params: msgspec.Raw,
    ) -> EventStream:
        """The stream's events, or an A2AError before anything is sent (then the
        answer is an ordinary JSON-RPC error, not a stream)."""
        if operation is Operation.STREAM:
            request = dialect.decode_send(params, method)
            return await self.handler.send_streaming_message(request, dialect=dialect)
        last = header(scope, b"last-event-id").strip()
        return await self.handler.subscribe_to_task(
            dialect.decode_task_id(params, method), last_event_id=_event_id(last)
        )
