"""The JSON-RPC endpoint: pick the protocol version, decode, call the engine, answer.

Version selection (A2A 1.0 §3.6, and docs/protocol.md): the ``A2A-Version`` header
or query parameter; missing or empty means 0.3; ``1.0``/``1.0.x`` means 1.0. A
method of the other version gets VersionNotSupported naming the header to send;
a name in neither version is MethodNotFound.
"""

from __future__ import annotations

import logging
import uuid
from urllib.parse import parse_qsl

import msgspec

from ..engine import Engine
from ..engine.engine import StreamItem
from ..protocol.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidRequestError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from ..protocol.jsonrpc import RequestId, decode_request, encode_error, encode_result
from ..protocol.v03 import V03
from ..protocol.v1 import V1
from .sse import KEEPALIVE_SECONDS, stream_sse
from .types import Receive, Scope, Send, header, respond

__all__ = ["MAX_BODY_BYTES", "JsonRpcEndpoint"]

log = logging.getLogger("a2ad.server")

MAX_BODY_BYTES = 10 * 1024 * 1024
Dialect = type[V1] | type[V03]
_DIALECTS: dict[str, Dialect] = {"1.0": V1, "0.3": V03}


def requested_version(scope: Scope) -> str:
    value = header(scope, b"a2a-version").strip()
    if not value and scope.get("query_string"):
        query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
        value = query.get("A2A-Version", "").strip()
    if not value:
        return "0.3"
    return ".".join(value.split(".")[:2])


def pick_dialect(version: str, method: str) -> tuple[Dialect, str]:
    dialect = _DIALECTS.get(version)
    if dialect is None:
        raise VersionNotSupportedError(
            f"A2A-Version {version} is not supported; this server speaks 1.0 "
            "(send the header A2A-Version: 1.0) and 0.3 (send no A2A-Version header)",
            metadata={"requestedVersion": version, "supportedVersions": "1.0,0.3"},
        )
    operation = dialect.methods.get(method)
    if operation is not None:
        return dialect, operation
    for other in _DIALECTS.values():
        if method in other.methods:
            how = (
                "send the header A2A-Version: 1.0"
                if other is V1
                else "send it without an A2A-Version header (or with A2A-Version: 0.3)"
            )
            raise VersionNotSupportedError(
                f"{method} is an A2A {other.version} method but the request asked for "
                f"A2A {version}; {how}",
                metadata={
                    "method": method,
                    "methodVersion": other.version,
                    "requestedVersion": version,
                },
            )
    raise MethodNotFoundError(f"Method not found: {method}", metadata={"method": method})


def _event_id(text: str) -> int | None:
    """A ``Last-Event-ID`` as we issue them (a sequence number), or None to ignore it."""
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


class JsonRpcEndpoint:
    def __init__(
        self,
        engine: Engine,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        if not keepalive_seconds > 0:
            raise ValueError(f"keepalive_seconds must be positive, not {keepalive_seconds!r}")
        self.engine = engine
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
        try:
            request = decode_request(body)
            request_id = request.id  # type: ignore[assignment]
            dialect, operation = pick_dialect(requested_version(scope), request.method)
            if operation in ("stream", "subscribe"):
                await self._stream(
                    scope,
                    receive,
                    send,
                    dialect,
                    operation,
                    request.method,
                    request.params,
                    request_id,
                )
                return
            result = await self._call(dialect, operation, request.method, request.params)
        except A2AError as exc:
            await respond(send, 200, encode_error(request_id, exc))
            return
        except Exception:
            incident = uuid.uuid4().hex[:12]
            log.exception("request failed", extra={"incident": incident})
            internal = InternalError(
                f"Internal error (incident {incident}); the server log has the details"
            )
            await respond(send, 200, encode_error(request_id, internal))
            return
        await respond(send, 200, encode_result(request_id, result))

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
        self, dialect: Dialect, operation: str, method: str, params: msgspec.Raw
    ) -> bytes:
        engine = self.engine
        if operation == "send":
            return dialect.encode_send_result(
                await engine.send(dialect.decode_send(params, method))
            )
        if operation == "get":
            req = dialect.decode_get(params, method)
            return dialect.encode_task(await engine.get_task(req.id, req.history_length))
        if operation == "list":
            return dialect.encode_list(await engine.list_tasks(dialect.decode_list(params, method)))
        if operation == "cancel":
            req_id = dialect.decode_task_id(params, method).id
            return dialect.encode_task(await engine.cancel(req_id))
        if operation == "push_config":
            raise PushNotificationNotSupportedError(
                f"{method}: push notifications are not supported by this server "
                "(its agent card says capabilities.pushNotifications: false)"
            )
        if operation == "extended_card":
            if dialect is V03:
                raise ExtendedAgentCardNotConfiguredError(
                    f"{method}: this agent has no authenticated extended card"
                )
            raise UnsupportedOperationError(
                f"{method}: this agent has no extended agent card "
                "(its agent card does not set capabilities.extendedAgentCard)"
            )
        raise MethodNotFoundError(f"Method not found: {method}")

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        dialect: Dialect,
        operation: str,
        method: str,
        params: msgspec.Raw,
        request_id: RequestId,
    ) -> None:
        if operation == "stream":
            events = await self.engine.stream(dialect.decode_send(params, method))
        else:
            task_id = dialect.decode_task_id(params, method).id
            last = header(scope, b"last-event-id").strip()
            events = await self.engine.subscribe(task_id, last_event_id=_event_id(last))
        encode_item = dialect.encode_stream_item

        def encode(item: StreamItem, last: bool) -> bytes:
            return encode_result(request_id, encode_item(item, last))

        await stream_sse(send, receive, events, encode, keepalive=self.keepalive_seconds)
