"""A2A over gRPC: 1.0's ``lf.a2a.v1.A2AService`` and 0.3's ``a2a.v1.A2AService``,
served beside the HTTP app.

Each rpc is a generic ``grpc.aio`` handler over the same ``Dispatcher``, the
same agents, callers and limits as the HTTP bindings (the app's: server/app.py),
so a task sent by one binding is read, followed and canceled by any. The
request message is read as ProtoJSON, which its version's dialect decodes (1.0:
JSON-RPC's params are that same JSON; 0.3: the 0.3 HTTP+JSON dialect's, with
resource names made ids: grpc_versions.py); the answer is the dialect's JSON
parsed into the rpc's response message. How a call is admitted and ended
(metadata, auth, the agent, errors as statuses): grpc_call.py.

The two streams (SendStreamingMessage, SubscribeToTask; 0.3's TaskSubscription) carry the events SSE
carries, in its order, each call holding one of its caller's stream slots. A
call the client cancels ends at once and leaves the task running. HTTP/2 pings
keep an idle call open (the server's options: server/grpc_server.py), and a
quiet task is checked every keep-alive interval as SSE does. To resume after a
cut, ``SubscribeToTask`` takes ``last-event-id`` in its metadata; the call's
trailing metadata says ``last-event-id`` (the last event it carried) whenever it
ends, and a call that sends ``a2ad-event-ids: 1`` gets each event's id in that
event's own metadata (``a2ad.eventId``) too, for a client cut off with no
trailer. A stream whose reader fell behind, or that a store outage cut short,
ends with that error's status naming the last event it carried.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, NoReturn

import grpc  # type: ignore[import-untyped]
import msgspec

from ... import log_context
from ...agent import ANONYMOUS, Caller
from ...engine import EventStream
from ...protocol.dialect import Op, Operation, requested_version
from ...protocol.errors import A2AError, VersionNotSupportedError
from ...protocol.grpc_schema import Schema, Version
from ...protocol.grpc_schema.fill import fill
from ...protocol.rpc_status import TABLE_1_0_1
from ...protocol.types import Seq
from ...store.base import StoreUnavailableError
from .. import audit
from ..card import render_card, with_security
from ..dialect import ServerDialect
from ..dispatch import Dispatcher, parse_event_id
from ..errors import internal_error, store_unavailable
from ..extensions import echo_headers, requested_extensions
from ..limits import caller_key
from ..observed import RequestRecord
from ..request import A2ARequest, Headers, Peer
from .grpc_call import (
    AGENT_KEY,
    Context,
    abort,
    admit,
    bounded,
    call_headers,
    message_json,
    no_agent,
    peer_of,
    read_message,
    scope_of,
)
from .grpc_versions import VERSIONS, GrpcVersion, with_call_deadline
from .skeleton import json_reply
from .sse import KEEPALIVE_SECONDS, fell_behind_error, log_fell_behind, stream_over

__all__ = ["GrpcService"]

_EMPTY = "google.protobuf.Empty"
_EVENT_IDS_KEY = b"a2ad-event-ids"
_LAST_EVENT_ID = "last-event-id"

Handler = Callable[[Any, Context], Awaitable[Any]]


class GrpcService:
    """A2A's gRPC service of ``version`` ("1.0", "0.3"), answered by ``app``'s
    agents (an A2AApp: its handlers, authenticator, rate limit, stream slots and
    observers); errors by ``table`` (protocol/rpc_status.py: 1.0.1's by
    default). ``base_url``: the HTTP URL the cards' HTTP interfaces name."""

    def __init__(
        self,
        app: Any,
        *,
        version: Version = "1.0",
        table: Mapping[str, str] = TABLE_1_0_1,
        base_url: str = "",
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.app = app
        self.spec: GrpcVersion = VERSIONS[version]
        self.table = table
        self.base_url = base_url
        self.keepalive_seconds = keepalive_seconds
        self.schema = Schema(version)
        self.service = self.spec.service
        self._dispatchers: dict[str, Dispatcher] = {}

    def generic_handler(self) -> Any:
        """What a ``grpc.aio`` server adds (``add_generic_rpc_handlers``)."""
        handlers = {}
        for name, (request_type, response_type, streams) in self.schema.methods().items():
            request_class = self.schema.message(request_type)
            response_class = self.schema.message(response_type)
            operation = self.spec.rpcs[name]
            if streams:
                assert operation is not None
                handlers[name] = grpc.unary_stream_rpc_method_handler(
                    self._streaming(name, operation, request_class, response_class),
                    response_serializer=response_class.SerializeToString,
                )
            else:
                # The request's bytes are parsed in the call, not by grpc: bytes that
                # are no such message are the caller's INVALID_ARGUMENT, once its
                # credential is proved (grpc would answer UNKNOWN and log a traceback).
                handlers[name] = grpc.unary_unary_rpc_method_handler(
                    self._unary(name, operation, request_class, response_class),
                    response_serializer=response_class.SerializeToString,
                )
        return grpc.method_handlers_generic_handler(self.service, handlers)

    def _unary(
        self, name: str, operation: Operation | None, request_class: Any, response_class: Any
    ) -> Handler:
        empty = response_class.DESCRIPTOR.full_name == _EMPTY
        dialect = self.spec.dialect

        async def answer(raw: bytes, context: Context) -> Any:
            call = _Call(self, name, context, request_class)
            try:
                try:
                    if operation is None:  # 0.3's GetAgentCard: the card, not an operation
                        return fill(response_class(), await call.card(raw))
                    request, dispatcher = await call.open(raw, operation)
                    value = await dispatcher.call(request)
                    if empty:
                        reply = response_class()
                    else:
                        json = json_reply(dialect, operation, value)
                        reply = fill(response_class(), msgspec.json.decode(json))
                except A2AError as exc:
                    await call.refuse(exc)
                except Exception:
                    await call.fail()
                await call.answered(request)
                return reply
            finally:
                call.end()

        return answer

    def _streaming(
        self, name: str, operation: Operation, request_class: Any, response_class: Any
    ) -> Handler:
        dialect = self.spec.dialect

        async def stream(raw: bytes, context: Context) -> None:
            call = _Call(self, name, context, request_class)
            slot: AbstractContextManager[None] | None = None
            try:
                try:
                    request, dispatcher = await call.open(raw, operation)
                    hold = self.app.streams.hold(caller_key(request.caller, request.peer))
                    hold.__enter__()
                    slot = hold
                    last = call.headers.first(_LAST_EVENT_ID.encode())
                    request.last_event_id = parse_event_id(last)
                    events = await dispatcher.open_stream(request)
                except A2AError as exc:
                    await call.refuse(exc)
                except Exception:
                    await call.fail()
                await call.answered(request)
                ids = call.headers.first(_EVENT_IDS_KEY).strip().lower() in ("1", "true")
                await self._send_events(call, events, dialect, response_class, ids=ids)
            finally:
                if slot is not None:
                    slot.__exit__(None, None, None)
                call.end()

        return stream

    async def _send_events(
        self,
        call: _Call,
        events: EventStream,
        dialect: ServerDialect,
        response_class: Any,
        *,
        ids: bool,
    ) -> None:
        """Write ``events`` until the first of: the stream's end, its reader
        dropped, the shutdown's flush over, the client gone (this call is
        cancelled then). Ends the call with the status of a stream cut short."""
        writer = _Writer(call.context, events, dialect, response_class, ids)
        writing = asyncio.ensure_future(writer.write(self.keepalive_seconds))
        over = stream_over(events, writing)
        try:
            await over
        finally:
            events.close()
            if not writing.done():  # stuck in a write: the reader was dropped
                writing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({writing})
        failed = None if writing.cancelled() else writing.exception()
        last_id = writer.last_id
        trailers = ((_LAST_EVENT_ID, str(last_id)),) if last_id is not None else ()
        if isinstance(failed, StoreUnavailableError):
            await call.cut_short(store_unavailable(failed, last_event_id=last_id), trailers)
        elif failed is not None:
            raise failed
        if events.fell_behind and not writer.ended:
            log_fell_behind(events, last_id, call.peer)
            await call.cut_short(fell_behind_error(events, last_id), trailers)
        if trailers:
            call.context.set_trailing_metadata(trailers)

    def dispatcher(self, agent: str) -> Dispatcher:
        """The dispatcher of the app's agent ``agent`` ("": the one at /);
        raises MethodNotFoundError naming the agents there are."""
        found = self._dispatchers.get(agent)
        if found is None:
            handler = self.app.handler(agent)
            if handler is None:
                raise no_agent(agent, self.app.agent_names)
            found = self._dispatchers[agent] = Dispatcher(handler)
        return found


class _Writer:
    """Writes a stream's events as StreamResponse messages and remembers how far
    it got: the id of the last one written, and whether the last event went."""

    __slots__ = ("context", "dialect", "ended", "events", "ids", "last_id", "response")

    def __init__(
        self,
        context: Context,
        events: EventStream,
        dialect: ServerDialect,
        response: Any,
        ids: bool,
    ) -> None:
        self.context = context
        self.events = events
        self.dialect = dialect
        self.response = response
        self.ids = ids
        self.last_id: Seq | None = None
        self.ended = False

    async def write(self, keepalive: float) -> None:
        events, encode, context = self.events, self.dialect.encode_stream_item, self.context
        while True:
            try:
                step = await events.next(timeout=keepalive)
            except TimeoutError:
                continue  # HTTP/2 pings keep the call; the wait checks a quiet task
            if step is None:
                return
            seq, item, last = step
            message = fill(self.response(), msgspec.json.decode(encode(item, last)))
            if self.ids and seq is not None:
                payload = getattr(message, message.WhichOneof("payload"))
                payload.metadata.get_or_create_struct("a2ad")["eventId"] = str(seq)
            await context.write(message)
            self.last_id = seq
            if last:
                self.ended = True
                return


class _Call:
    """One call, from its metadata to its status: its record, told to the app's
    observers from ``__init__`` to ``end``, its headers, its peer."""

    __slots__ = (
        "caller",
        "context",
        "headers",
        "message",
        "name",
        "peer",
        "record",
        "request_class",
        "service",
        "serving",
        "token",
    )

    def __init__(
        self, service: GrpcService, name: str, context: Context, request_class: Any
    ) -> None:
        self.service = service
        self.context = context
        self.name = name
        self.request_class = request_class
        self.message: Any = None  # the request message, once read
        pairs = call_headers(context)
        self.headers = Headers(pairs)
        self.peer: Peer | None = peer_of(context)
        self.caller: Caller = ANONYMOUS  # until the call's credential proves another
        self.record = record = RequestRecord(f"/{service.service}/{name}", binding="GRPC")
        self.serving = log_context.request.set(record)
        began = service.app.began
        self.token = began(record, scope_of(record, pairs, self.peer)) if began else None

    def end(self) -> None:
        ended = self.service.app.ended
        if ended is not None:
            ended(self.record, self.token)
        log_context.request.reset(self.serving)

    async def _admitted(self) -> Dispatcher:
        """The dispatcher of the agent the call is for, once its caller is proved
        and its version is the service's; raises A2AError."""
        service, headers, record = self.service, self.headers, self.record
        self.caller = await admit(service.app, headers, self.peer, record)
        agent = headers.first(AGENT_KEY)
        record.agent = agent
        dispatcher = service.dispatcher(agent)
        asked = headers.first(b"a2a-version").strip()
        version = service.spec.version
        if asked and requested_version(asked) != version:
            others = " or ".join(
                f"{one.service} (A2A {one.version})"
                for one in VERSIONS.values()
                if one.version != version
            )
            raise VersionNotSupportedError(
                f"A2A-Version {asked[:32]}: {service.service} is A2A {version}; send "
                f"a2a-version: {version}, or none, or call {others}",
                metadata={"requestedVersion": asked[:32], "supportedVersions": version},
            )
        return dispatcher

    async def open(self, raw: bytes, operation: Operation) -> tuple[A2ARequest, Dispatcher]:
        """The call as a request, its caller proved and its agent found; raises A2AError."""
        spec, record = self.service.spec, self.record
        record.operation(operation, spec.version)
        dispatcher = await self._admitted()
        self.message = message = read_message(self.request_class, raw, self.name)
        handler, headers = dispatcher.handler, self.headers
        requested = requested_extensions(headers) if handler.extensions else ()
        context = handler.request_context(spec.version, "GRPC", requested, self.caller)
        body = spec.params(self.name, message_json(message, self.name))
        if operation is Op.SEND or operation is Op.STREAM:
            remaining = self.context.time_remaining()
            body = with_call_deadline(spec.version, operation, body, remaining)
        params = msgspec.Raw(msgspec.json.encode(body))
        request = A2ARequest(
            headers,
            self.peer,
            dialect=spec.dialect,
            operation=operation,
            method=self.name,
            params=params,
            context=context,
            record=record,
            base_url=self.service.base_url if operation is Op.EXTENDED_CARD else "",
        )
        return request, dispatcher

    async def card(self, raw: bytes) -> dict[str, Any]:
        """0.3's GetAgentCard: the agent's card in 0.3's form, as its HTTP card
        says it (the server's auth schemes, its interfaces)."""
        record = self.record
        record.method, record.version = "GetAgentCard", self.service.spec.version
        handler = (await self._admitted()).handler
        self.message = read_message(self.request_class, raw, self.name)
        info = with_security(handler.agent.card_info(), handler.security_schemes)
        record.status = 200
        return render_card(
            info,
            self.service.base_url,
            self.service.spec.version,
            extended_card=handler.agent.has_extended_card,
            push=handler.engine.push is not None,
            interfaces=handler.interfaces,
        )

    async def answered(self, request: A2ARequest) -> None:
        """The call is answered: its status noted, its activated extensions named
        in the response's metadata."""
        self.record.status = 200
        extensions = request.context.extensions
        if extensions:
            echo = echo_headers(self.service.spec.version, extensions)
            await self.context.send_initial_metadata(
                [(key.decode("latin-1"), value.decode("latin-1")) for key, value in echo]
            )

    async def refuse(self, error: A2AError) -> NoReturn:
        """End the call with ``error``, audited as the HTTP bindings' refusals are."""
        message = self.message
        task_id = getattr(message, "id", "") or getattr(message, "task_id", "")
        if not isinstance(task_id, str):
            task_id = ""
        audit.refused(
            self.caller,
            self.peer,
            error,
            method=self.name,
            task_id=task_id,
            tenant=getattr(message, "tenant", "") or "",
        )
        await self.cut_short(error, ())

    async def fail(self) -> NoReturn:
        """End the call as ``errors.internal_error`` answers an unexpected failure."""
        await self.cut_short(internal_error(), ())

    async def cut_short(self, error: A2AError, trailers: tuple[tuple[str, str], ...]) -> NoReturn:
        """End the call with ``error``'s status (and ``trailers``)."""
        error = bounded(error)
        record = self.record
        record.code = error.code
        record.status = error.http_status
        said = self.service.spec.said(error)
        await abort(self.context, error, said, self.service.table, trailers)
        raise AssertionError("unreachable: grpc's abort raises")  # pragma: no cover
