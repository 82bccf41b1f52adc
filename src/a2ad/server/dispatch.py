"""What every binding does once it has read a request: decode, call, answer.

A binding (JSON-RPC, HTTP+JSON, any other) reads its wire form into an
``A2ARequest`` (server/request.py: the dialect, the ``Operation``, the method
name for messages, the params as JSON, the request's context); ``Dispatcher``
decodes the params with the dialect, so validation and its errors are the same
whichever binding a request came by, calls the request handler, and answers a
``Reply`` (the result as a model value) or the ``EventStream`` of a streaming
operation. A2AErrors pass through for the binding to put on its wire;
``errors.internal_error`` is how a binding answers anything else (a store outage
as TaskStoreUnavailableError, a bug with an incident id).

Every task, message and event leaves through here, so here internal parts are
hidden (protocol/internal.py) from callers without the ``operator`` role,
unless the server exposes them (``RequestHandler.expose_internal_parts``).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from ..agent import ANONYMOUS, RequestContext
from ..engine import EventStream
from ..protocol.dialect import Op
from ..protocol.internal import visible, visible_page, visible_reply, visible_task
from ..protocol.model import Message, Task
from .card import render_card
from .handler import RequestHandler
from .observed import RequestRecord
from .request import A2ARequest, Answer, Headers, Reply, ReplyValue

__all__ = [
    "Dispatcher",
    "parse_event_id",
    "version_text",
]


def version_text(headers: Headers, query_string: bytes = b"") -> str:
    """The request's ``A2A-Version``: the header (or metadata), else the query
    parameter of that name (HTTP's ``?A2A-Version=``)."""
    value = headers.first(b"a2a-version").strip()
    if not value and query_string:
        query = dict(parse_qsl(query_string.decode("latin-1")))
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

    async def answer(self, request: A2ARequest) -> Answer:
        """The request's answer: a Reply, or for a streaming operation its
        EventStream (nothing sent yet). Raises A2AError, the third answer."""
        if request.operation.streaming:
            return await self.open_stream(request)
        return Reply(request.operation, await self.call(request))

    async def call(self, request: A2ARequest) -> ReplyValue:
        """The result of a non-streaming operation (the value of its Reply);
        raises A2AError."""
        handler = self.handler
        dialect, operation, method = request.dialect, request.operation, request.method
        params, context = request.params, request.context
        caller = context.caller  # the anonymous caller is no operator: no property call
        hide = not (handler.expose_internal_parts or (caller is not ANONYMOUS and caller.operator))
        if operation is Op.SEND:
            send = dialect.decode_send(params, method)
            result = await handler.send_message(send, context, dialect=dialect)
            _note_task(request.record, result)
            if hide:
                result = visible_task(result) if isinstance(result, Task) else visible_reply(result)
            return result
        if operation is Op.GET:
            task = await handler.get_task(dialect.decode_get(params, method), context)
            _note_task(request.record, task)
            return visible_task(task) if hide else task
        if operation is Op.LIST:
            page = await handler.list_tasks(dialect.decode_list(params, method), context)
            return visible_page(page) if hide else page
        if operation is Op.CANCEL:
            task = await handler.cancel_task(dialect.decode_task_id(params, method), context)
            _note_task(request.record, task)
            return visible_task(task) if hide else task
        if operation is Op.CREATE_PUSH_CONFIG:
            config = dialect.decode_push_config(params, method)
            created = await handler.create_push_config(config, context, dialect=dialect)
            return created
        if operation is Op.GET_PUSH_CONFIG:
            config_id = dialect.decode_push_config_id(params, method)
            return await handler.get_push_config(config_id, context)
        if operation is Op.LIST_PUSH_CONFIGS:
            listing = dialect.decode_list_push_configs(params, method)
            return await handler.list_push_configs(listing, context)
        if operation is Op.DELETE_PUSH_CONFIG:
            config_id = dialect.decode_push_config_id(params, method)
            await handler.delete_push_config(config_id, context)
            return None
        assert operation is Op.EXTENDED_CARD, operation
        info = await handler.get_extended_agent_card(method, context)
        push = handler.engine.push is not None
        return render_card(
            info,
            request.base_url,
            dialect.version,
            extended_card=True,
            push=push,
            interfaces=handler.interfaces,
        )

    async def open_stream(self, request: A2ARequest) -> EventStream:
        """The stream's events, or an A2AError before anything is sent (then the
        binding answers with an ordinary error, not a stream). The request's
        ``last_event_id`` resumes a subscription after that event; its record
        learns the task and context the request names."""
        dialect, method, params = request.dialect, request.method, request.params
        context, record = request.context, request.record
        if request.operation is Op.STREAM:
            send = dialect.decode_send(params, method)
            if record is not None:
                record.task_id = send.message.task_id
                record.context_id = send.message.context_id
            events = await self.handler.send_streaming_message(send, context, dialect=dialect)
        else:
            assert request.operation is Op.SUBSCRIBE, request.operation
            subscribe = dialect.decode_task_id(params, method)
            if record is not None:
                record.task_id = subscribe.id
            events = await self.handler.subscribe_to_task(
                subscribe, context, last_event_id=request.last_event_id
            )
        if not self._shows_internal(context):
            events.view = visible
        return events

    def _shows_internal(self, context: RequestContext) -> bool:
        """Whether the request's caller sees internal parts: an operator, or
        anyone on a server that exposes them."""
        return self.handler.expose_internal_parts or context.caller.operator


def _note_task(record: RequestRecord | None, result: Task | Message) -> None:
    """The request's record names the task it got (for access logs, spans)."""
    if record is not None:
        if isinstance(result, Task):
            record.task_id = result.id
        record.context_id = result.context_id
