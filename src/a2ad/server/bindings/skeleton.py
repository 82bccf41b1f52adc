"""How an ASGI binding serves a request, written once: the bindings fill in their wire.

Every A2A request over HTTP goes the same way, whichever binding reads it: its
body is read up to ``Limits.max_body_bytes`` (past it: 413), the binding reads its
wire form into the transport-neutral ``A2ARequest`` (server/request.py), a
streaming operation takes one of its caller's stream slots, the ``Dispatcher``
answers, and the answer goes back: a result's JSON, or the EventStream as SSE
(sse.py). An A2AError becomes the binding's error in its dialect's terms, with
one audit line (server/audit.py); anything else is ``errors.internal_error``,
never a traceback. The request's ``RequestRecord`` learns the error code.

A binding is a ``BindingEndpoint`` (its configuration: the handler, the limits,
the stream slots) whose requests are ``Exchange`` objects: ``read`` parses the
wire form into the neutral request (or answers by itself and returns None: a
JSON-RPC notification), and the rest says how this binding writes what the
skeleton hands it: an error, a result, a stream's events.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, cast

import msgspec

from ...agent import ANONYMOUS, Caller, RequestContext
from ...protocol.dialect import Op, Operation
from ...protocol.errors import A2AError, QuotaExceededError
from ...protocol.model import (
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Task,
    TaskPushNotificationConfig,
)
from ...protocol.types import StreamItem
from .. import audit
from ..card import base_url
from ..dialect import ServerDialect
from ..dispatch import Dispatcher, parse_event_id, version_text
from ..errors import internal_error
from ..extensions import EXTENSIONS_HEADERS, echo_headers, requested_extensions
from ..handler import RequestHandler
from ..limits import Limits, StreamSlots, body_too_large, caller_key, retry_headers
from ..observed import RECORD_KEY, RequestRecord
from ..request import A2ARequest, Headers, Peer, ReplyValue
from ..types import (
    CALLER_KEY,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    caller_of,
    read_body,
    request_headers,
    respond,
)
from .sse import KEEPALIVE_SECONDS, stream_sse

__all__ = ["BindingEndpoint", "BodyTooLarge", "Exchange", "Refusal", "json_reply", "serve"]

_EXTENSIONS, _EXTENSIONS_03 = EXTENSIONS_HEADERS


class Refusal(NamedTuple):
    """How a binding answers an A2AError: the error as its dialect says it
    (``wire``), and how the audit line names the request."""

    wire: A2AError
    method: str
    task_id: str = ""
    tenant: str = ""


class BindingEndpoint:
    """What a binding's requests share: the handler and its dispatcher, the
    limits, the callers' stream slots, the SSE keep-alive interval."""

    binding = ""  # as RequestContext.binding says it: "JSONRPC", "HTTP+JSON"

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
        self.dispatcher = Dispatcher(handler)
        self.limits = limits if limits is not None else Limits()
        self.streams = streams if streams is not None else StreamSlots(0)
        self.keepalive_seconds = keepalive_seconds
        # By version: the context of an anonymous request that asks for no extension.
        self.plain: dict[str, RequestContext] = {}


class Exchange(ABC):
    """One request on a binding, from its wire form to its answer."""

    __slots__ = ("endpoint", "first", "headers", "receive", "record", "scope", "send")

    def __init__(self, endpoint: BindingEndpoint, scope: Scope, receive: Receive, send: Send):
        self.endpoint = endpoint
        self.scope = scope
        self.receive = receive
        self.send = send
        self.first = request_headers(scope)  # each header's first value, by lowercase name
        self.headers = Headers(scope["headers"], self.first)
        self.record: RequestRecord | None = scope.get(RECORD_KEY)

    @property
    def caller(self) -> Caller:
        """Who sent the request, as authentication found (the audit names them)."""
        return caller_of(self.scope)

    @property
    def peer(self) -> Peer | None:
        """The remote address and port, if the server knows them."""
        return self.scope.get("client")

    @abstractmethod
    async def read(self) -> A2ARequest | None:
        """The request, read from the wire (``body``, ``context`` and ``request``
        help); None once the binding answered it itself. Raises A2AError."""

    @abstractmethod
    def too_large(self, error: A2AError) -> tuple[str, bytes]:
        """How the audit line names a request whose body was too large, and its 413 body."""

    @abstractmethod
    def refusal(self, error: A2AError) -> Refusal:
        """The binding's form of an A2AError the request was refused with."""

    @abstractmethod
    def error_answer(self, wire: A2AError) -> tuple[int, bytes]:
        """The HTTP status and body of an error answer (a refusal's, or an internal error's)."""

    @abstractmethod
    def result(self, operation: Operation, value: ReplyValue) -> bytes:
        """The body of a non-streaming operation's answer, its Reply's value."""

    @abstractmethod
    def stream_codec(
        self, request: A2ARequest
    ) -> tuple[Callable[[StreamItem, bool], bytes], Callable[[A2AError], bytes]]:
        """How a stream's events are written: ``encode(item, last)`` a data line,
        ``fail(error)`` the event that ends a stream cut short."""

    def body(self) -> Coroutine[Any, Any, bytes]:
        """The request body (to await); raises BodyTooLarge past the limit,
        ClientGone if the client left before it ended."""
        return read_body(self.receive, self.endpoint.limits.max_body_bytes)

    def version_asked(self) -> str:
        """The request's ``A2A-Version``: the header, else the query parameter of
        that name (dispatch.version_text, called only when the header is not
        there: most requests carry no query)."""
        asked = self.first.get(b"a2a-version")
        text = asked.decode("latin-1").strip() if asked else ""
        if text or not self.scope.get("query_string"):
            return text
        return version_text(self.headers, self.scope["query_string"])

    def context(self, dialect: ServerDialect) -> RequestContext:
        """The request's context: its caller, the extensions its headers activate.
        Raises ExtensionSupportRequiredError (server/handler.py)."""
        endpoint = self.endpoint
        first = self.first
        asked = _EXTENSIONS in first or _EXTENSIONS_03 in first  # most requests ask none
        caller = self.scope.get(CALLER_KEY, ANONYMOUS)  # as caller_of, without the call
        if not asked and caller is ANONYMOUS:  # most requests: one context a version
            plain = endpoint.plain.get(dialect.version)
            if plain is not None:
                return plain
        handler = endpoint.handler
        requested = requested_extensions(self.headers) if asked and handler.extensions else ()
        context = handler.request_context(dialect.version, endpoint.binding, requested, caller)
        if not asked and caller is ANONYMOUS:  # the same for every such request (or refused)
            endpoint.plain[dialect.version] = context
        return context

    def request(
        self,
        dialect: ServerDialect,
        operation: Operation,
        method: str,
        params: msgspec.Raw,
        context: RequestContext | None = None,
    ) -> A2ARequest:
        """The neutral request of this exchange (the skeleton adds a stream's
        ``last_event_id``); its context is ``context``'s made now, if not given."""
        scope = self.scope
        if context is None:
            context = self.context(dialect)
        return A2ARequest(
            self.headers,
            scope.get("client"),
            dialect=dialect,
            operation=operation,
            method=method,
            params=params,
            context=context,
            record=self.record,
            base_url=base_url(scope) if operation is Op.EXTENDED_CARD else "",
        )


async def serve(exchange: Exchange) -> None:
    """Serve one request on its binding: see the module docstring."""
    endpoint, send = exchange.endpoint, exchange.send
    # A stream's slot, held until its response ends. Entered by hand, not with an
    # ExitStack: every other request would pay for one (three calls in Python).
    slot: AbstractContextManager[None] | None = None
    try:
        try:
            request = await exchange.read()
            if request is None:
                return
            operation = request.operation
            if streaming := operation.streaming:
                hold = endpoint.streams.hold(caller_key(request.caller, request.peer))
                hold.__enter__()
                slot = hold
                request.last_event_id = parse_event_id(exchange.headers.first(b"last-event-id"))
                events = await endpoint.dispatcher.open_stream(request)
            else:
                value = await endpoint.dispatcher.call(request)
        except ClientGone:
            return
        except BodyTooLarge as exc:
            await _too_large(exchange, body_too_large(exc.limit))
            return
        except A2AError as exc:
            await _refuse(exchange, exc)
            return
        except Exception:
            await _failed(exchange, internal_error())
            return
        extensions = request.context.extensions
        echo = echo_headers(request.version, extensions) if extensions else None
        if not streaming:
            await respond(send, 200, exchange.result(operation, value), headers=echo)
            return
        encode, fail = exchange.stream_codec(request)
        await stream_sse(
            send,
            exchange.receive,
            events,
            encode,
            fail,
            keepalive=endpoint.keepalive_seconds,
            headers=echo,
            client=request.peer,
        )
    finally:
        if slot is not None:
            slot.__exit__(None, None, None)


async def _failed(exchange: Exchange, failed: A2AError) -> None:
    """Answer the error ``internal_error`` made of an exception no A2AError."""
    if exchange.record is not None:
        exchange.record.code = failed.code
    status, body = exchange.error_answer(failed)
    await respond(exchange.send, status, body)


async def _too_large(exchange: Exchange, error: A2AError) -> None:
    method, body = exchange.too_large(error)
    audit.refused(exchange.caller, exchange.peer, error, method=method)
    if exchange.record is not None:
        exchange.record.code = error.code
    await respond(exchange.send, 413, body)


async def _refuse(exchange: Exchange, error: A2AError) -> None:
    refusal = exchange.refusal(error)
    wire = refusal.wire
    audit.refused(
        exchange.caller,
        exchange.peer,
        wire,
        method=refusal.method,
        task_id=refusal.task_id,
        tenant=refusal.tenant,
    )
    if (record := exchange.record) is not None:
        record.code = wire.code
        if refusal.task_id:
            record.task_id = refusal.task_id
    status, body = exchange.error_answer(wire)
    # A quota or rate refusal says when to retry, on every binding.
    headers = retry_headers(wire) if isinstance(wire, QuotaExceededError) else None
    await respond(exchange.send, status, body, headers=headers)


def json_reply(dialect: ServerDialect, operation: Operation, value: ReplyValue) -> bytes:
    """The JSON in ``dialect`` of the value of a Reply to ``operation`` (the result
    member of JSON-RPC, the body of HTTP+JSON)."""
    if (operation is Op.GET or operation is Op.CANCEL) and isinstance(value, Task):
        return dialect.encode_task(value)
    if operation is Op.SEND:
        return dialect.encode_send_result(cast(Task | Message, value))
    if operation is Op.LIST:
        return dialect.encode_page(cast(ListTasksResponse, value))
    if operation is Op.CREATE_PUSH_CONFIG or operation is Op.GET_PUSH_CONFIG:
        return dialect.encode_push_config(cast(TaskPushNotificationConfig, value))
    if operation is Op.LIST_PUSH_CONFIGS:
        page = cast(ListTaskPushNotificationConfigsResponse, value)
        return dialect.encode_push_config_page(page)
    if operation is Op.DELETE_PUSH_CONFIG:
        return dialect.encode_deleted()
    return msgspec.json.encode(value)  # the extended card, rendered
