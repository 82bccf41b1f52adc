"""A2A 1.0 over gRPC, its unary rpcs: the gRPC binding's first part (issue 26).

Each rpc of ``lf.a2a.v1.A2AService`` that answers once (all but the two
streams) is a generic ``grpc.aio`` handler over the same ``Dispatcher`` the
HTTP bindings use: the request message is read as ProtoJSON, which is what the
1.0 dialect decodes (JSON-RPC's params are that same JSON), and the answer is
the dialect's JSON parsed into the rpc's response message. An A2AError is the
call's status by the spec's table (protocol/rpc_status.py), with its
google.rpc.Status, ErrorInfo and BadRequest, in the ``grpc-status-details-bin``
trailer; anything else is ``errors.internal_error``'s, never a traceback.

Not yet served by ``a2ad serve``: streams, authentication, limits and the
request's observers come with the rest of the binding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc  # type: ignore[import-untyped]
import msgspec
from google.protobuf import json_format  # type: ignore[import-untyped]

from ...agent import ANONYMOUS
from ...protocol.dialect import Operation, resolve_asked
from ...protocol.errors import A2AError
from ...protocol.grpc_schema import SERVICES, Schema, Version
from ...protocol.rpc_status import TABLE_1_0_1, rpc_status, status_message
from ..dialect import ServerDialect
from ..dispatch import Dispatcher
from ..errors import internal_error
from ..extensions import requested_extensions
from ..handler import RequestHandler
from ..request import A2ARequest, Headers
from .skeleton import json_reply

__all__ = ["GrpcService"]

_VERSION: Version = "1.0"
_EMPTY = "google.protobuf.Empty"

Context = Any  # grpc.aio.ServicerContext: what the call's handler is given
Unary = Callable[[Any, Context], Awaitable[Any]]


class GrpcService:
    """The unary rpcs of A2A 1.0's gRPC service, answered through ``handler``;
    errors by ``table`` (protocol/rpc_status.py: 1.0.1's by default)."""

    def __init__(self, handler: RequestHandler, *, table: Mapping[str, str] = TABLE_1_0_1):
        self.handler = handler
        self.dispatcher = Dispatcher(handler)
        self.table = table
        self.schema = Schema(_VERSION)

    def generic_handler(self) -> Any:
        """What a ``grpc.aio`` server adds (``add_generic_rpc_handlers``)."""
        handlers = {}
        for name, (request_type, response_type, streams) in self.schema.methods().items():
            if streams:
                continue  # SendStreamingMessage, SubscribeToTask: the binding's next part
            request_class = self.schema.message(request_type)
            response_class = self.schema.message(response_type)
            dialect, operation = resolve_asked(_VERSION, name)
            handlers[name] = grpc.unary_unary_rpc_method_handler(
                self._unary(name, dialect, operation, response_class),
                request_deserializer=request_class.FromString,
                response_serializer=response_class.SerializeToString,
            )
        return grpc.method_handlers_generic_handler(SERVICES[_VERSION], handlers)

    def _unary(
        self, name: str, dialect: ServerDialect, operation: Operation, response_class: Any
    ) -> Unary:
        empty = response_class.DESCRIPTOR.full_name == _EMPTY

        async def answer(message: Any, context: Context) -> Any:
            try:
                request = self._request(name, dialect, operation, message, context)
                value = await self.dispatcher.call(request)
                if empty:
                    return response_class()
                reply = json_reply(dialect, operation, value)
                return json_format.Parse(reply, response_class(), ignore_unknown_fields=True)
            except A2AError as exc:
                await self._abort(context, exc)
            except Exception:
                await self._abort(context, internal_error())
            raise AssertionError("unreachable: abort raises")  # pragma: no cover

        return answer

    def _request(
        self,
        name: str,
        dialect: ServerDialect,
        operation: Operation,
        message: Any,
        context: Context,
    ) -> A2ARequest:
        # Text metadata only: a binary key ("-bin") carries bytes, which no A2A header is.
        pairs = [(k, v) for k, v in context.invocation_metadata() or () if isinstance(v, str)]
        headers = Headers.of(pairs)
        requested = requested_extensions(headers) if self.handler.extensions else ()
        a2a_context = self.handler.request_context(_VERSION, "GRPC", requested, ANONYMOUS)
        params = msgspec.Raw(msgspec.json.encode(json_format.MessageToDict(message)))
        return A2ARequest(
            headers,
            None,
            dialect=dialect,
            operation=operation,
            method=name,
            params=params,
            context=a2a_context,
        )

    async def _abort(self, context: Context, error: A2AError) -> None:
        status = status_message(error, table=self.table)
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        await context.abort(grpc.StatusCode[rpc_status(error, table=self.table)], error.message)
