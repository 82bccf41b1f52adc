"""What every binding does once it knows the operation: decode, call, encode.

A binding (JSON-RPC, HTTP+JSON) reads its request into a dialect, an
``Operation``, a method name (for messages: ``tasks/get``, ``GET /tasks/{id}``)
and the params as JSON; ``Dispatcher`` decodes the params with the dialect, so
validation and its errors are the same whichever binding a request came by,
calls the request handler, and encodes the answer: one result's JSON, or the
EventStream of a streaming operation. A2AErrors pass through for the binding to
put on its wire; ``errors.internal_error`` is how a binding answers anything
else (a store outage as TaskStoreUnavailableError, a bug with an incident id).

Every task, message and event leaves through here, so here internal parts are
hidden (protocol/internal.py) from callers without the ``operator`` role,
unless the server exposes them (``RequestHandler.expose_internal_parts``).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import msgspec

from ..agent import RequestContext
from ..engine import EventStream
from ..protocol.dialect import Operation
from ..protocol.internal import visible, visible_page, visible_reply, visible_task
from ..protocol.model import (
    Message,
    Task,
)
from .card import base_url, render_card
from .dialect import ServerDialect
from .handler import RequestHandler
from .observed import RequestRecord, record_of
from .types import Scope, header

__all__ = [
    "Dispatcher",
    "parse_event_id",
    "version_text",
]


def version_text(scope: Scope) -> str:
    """The request's ``A2A-Version``: the header, else the query parameter of that name."""
    value = header(scope, b"a2a-version").strip()
    if not value and scope.get("query_string"):
        query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
        value = query.get("A2A-Version", "").strip()
    return value


def parse_event_id(text: str) -> int | None:
    """A ``Last-Event-ID`` as we issue them (a sequence number), or None to ignore it."""
    text = text.strip()
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


class Dispatcher:
    def __init__(self, handler: RequestHandler) -> None:
        self.handler = handler

    async def call(
        self,
        dialect: ServerDialect,
        operation: Operation,
        method: str,
        params: msgspec.Raw,
        context: RequestContext,
        scope: Scope,
    ) -> bytes:
        """The result's JSON for a non-streaming operation; raises A2AError.
        ``context``: the request's, from ``RequestHandler.request_context``;
        ``scope``: its ASGI scope (the extended card's URLs follow its Host)."""
        handler = self.handler
        hide = not self._shows_internal(context)
        match operation:
            case Operation.SEND:
                request = dialect.decode_send(params, method)
                result = await handler.send_message(request, context, dialect=dialect)
                _note_task(scope, result)
                if hide:
                    result = (
                        visible_task(result) if isinstance(result, Task) else visible_reply(result)
                    )
                return dialect.encode_send_result(result)
            case Operation.GET:
                task = await handler.get_task(dialect.decode_get(params, method), context)
                _note_task(scope, task)
                return dialect.encode_task(visible_task(task) if hide else task)
            case Operation.LIST:
                page = await handler.list_tasks(dialect.decode_list(params, method), context)
                return dialect.encode_page(visible_page(page) if hide else page)
            case Operation.CANCEL:
                task = await handler.cancel_task(dialect.decode_task_id(params, method), context)
                _note_task(scope, task)
                return dialect.encode_task(visible_task(task) if hide else task)
            case Operation.CREATE_PUSH_CONFIG:
                config = dialect.decode_push_config(params, method)
                created = await handler.create_push_config(config, context, dialect=dialect)
                return dialect.encode_push_config(created)
            case Operation.GET_PUSH_CONFIG:
                config_id = dialect.decode_push_config_id(params, method)
                got = await handler.get_push_config(config_id, context)
                return dialect.encode_push_config(got)
            case Operation.LIST_PUSH_CONFIGS:
                listing = dialect.decode_list_push_configs(params, method)
                configs = await handler.list_push_configs(listing, context)
                return dialect.encode_push_config_page(configs)
            case Operation.DELETE_PUSH_CONFIG:
                config_id = dialect.decode_push_config_id(params, method)
                await handler.delete_push_config(config_id, context)
                return dialect.encode_deleted()
        assert operation is Operation.EXTENDED_CARD, operation
        info = await handler.get_extended_agent_card(method, context)
        push = handler.engine.push is not None
        card = render_card(info, base_url(scope), dialect.version, extended_card=True, push=push)
        return msgspec.json.encode(card)

    async def open_stream(
        self,
        dialect: ServerDialect,
        operation: Operation,
        method: str,
        params: msgspec.Raw,
        context: RequestContext,
        *,
        last_event_id: int | None = None,
        record: RequestRecord | None = None,
    ) -> EventStream:
        """The stream's events, or an A2AError before anything is sent (then the
        binding answers with an ordinary error, not a stream). ``last_event_id``
        resumes a subscription after that event. ``record`` (the request's) learns
        the task and context the request names."""
        if operation is Operation.STREAM:
            request = dialect.decode_send(params, method)
            if record is not None:
                record.task_id = request.message.task_id
                record.context_id = request.message.context_id
            events = await self.handler.send_streaming_message(request, context, dialect=dialect)
        else:
            assert operation is Operation.SUBSCRIBE, operation
            subscribe = dialect.decode_task_id(params, method)
            if record is not None:
                record.task_id = subscribe.id
            events = await self.handler.subscribe_to_task(
                subscribe, context, last_event_id=last_event_id
            )
        if not self._shows_internal(context):
            events.view = visible
        return events

    def _shows_internal(self, context: RequestContext) -> bool:
        """Whether the request's caller sees internal parts: an operator, or
        anyone on a server that exposes them."""
        return self.handler.expose_internal_parts or context.caller.operator


def _note_task(scope: Scope, result: Task | Message) -> None:
    """The request's record names the task it got (for access logs, spans)."""
    record = record_of(scope)
    if record is not None:
        if isinstance(result, Task):
            record.task_id = result.id
        record.context_id = result.context_id
