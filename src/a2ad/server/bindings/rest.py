"""The HTTP+JSON (REST) binding: a thin adapter over the dispatcher, like JSON-RPC.

The path says the operation and the version: A2A 1.0 at the spec's paths
(``POST /message:send``, ``GET /tasks/{id}``, ...), each also under
``/{tenant}/``; A2A 0.3 under ``/v1/`` (its proto's paths). An ``A2A-Version``
that names the other version is VersionNotSupported, naming the path to use.

A request becomes the params JSON that the JSON-RPC binding would carry: the
body's fields, then the path's (``id``, ``tenant``) and the query's
(``historyLength=2`` as the number 2), so the same dialect decoders check it and
fail the same way (rest_params.py, which also refuses any body too deep or with
a number out of range before a decoder sees it). The answer is the result's
JSON, or SSE whose ``data:`` is a bare StreamResponse; an error is the spec's
HTTP status with a google.rpc.Status body carrying the ErrorInfo: for A2A
errors, unknown paths (404), wrong methods (405 and ``Allow``), bad JSON, bad
query parameters and bodies too large (413).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from types import MappingProxyType
from typing import NamedTuple

from ...protocol.dialect import METHODS, Operation, Version, requested_version
from ...protocol.errors import (
    A2AError,
    InvalidRequestError,
    MethodNotFoundError,
    QuotaExceededError,
    VersionNotSupportedError,
)
from ...protocol.types import StreamItem
from ...protocol.v03_rest import V03Rest
from ...protocol.v1 import V1
from .. import audit
from ..dialect import ServerDialect
from ..dispatch import Dispatcher, parse_event_id, version_text
from ..errors import error_body, internal_error
from ..extensions import echo_headers, requested_extensions
from ..handler import RequestHandler
from ..limits import Limits, StreamSlots, body_too_large, caller_key, retry_headers
from ..observed import record_of
from ..types import ClientGone, Receive, Scope, Send, caller_of, header, read_body, respond
from .rest_params import query_params, request_params
from .sse import KEEPALIVE_SECONDS, stream_sse

__all__ = ["RestEndpoint"]


class _Route(NamedTuple):
    method: str  # HTTP
    template: str  # as the docs write it: "/tasks/{id}:cancel"
    dialect: ServerDialect
    operation: Operation
    body: bool  # the body holds request fields (else it is not read)

    @property
    def label(self) -> str:
        """How messages name the route: ``GET /tasks/{id}``."""
        return f"{self.method} {self.template}"

    @property
    def rpc_method(self) -> str:
        """The JSON-RPC method of the same operation and version (where a dialect's
        errors differ by method, ``wire_error`` knows it by that name)."""
        return _RPC_METHODS[self.dialect.version, self.operation]


_RPC_METHODS: Mapping[tuple[Version, Operation], str] = MappingProxyType(
    {(d.version, op): name for name, (d, op) in METHODS.items()}
)


def _routes() -> tuple[_Route, ...]:
    v1 = [
        ("POST", "/message:send", Operation.SEND, True),
        ("POST", "/message:stream", Operation.STREAM, True),
        ("GET", "/tasks", Operation.LIST, False),
        ("GET", "/tasks/{id}", Operation.GET, False),
        ("POST", "/tasks/{id}:cancel", Operation.CANCEL, True),
        # The proto says GET, the spec's prose POST (A2A#1574): both are served.
        ("GET", "/tasks/{id}:subscribe", Operation.SUBSCRIBE, False),
        ("POST", "/tasks/{id}:subscribe", Operation.SUBSCRIBE, True),
        ("POST", "/tasks/{taskId}/pushNotificationConfigs", Operation.CREATE_PUSH_CONFIG, True),
        ("GET", "/tasks/{taskId}/pushNotificationConfigs", Operation.LIST_PUSH_CONFIGS, False),
        ("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", Operation.GET_PUSH_CONFIG, False),
        (
            "DELETE",
            "/tasks/{taskId}/pushNotificationConfigs/{id}",
            Operation.DELETE_PUSH_CONFIG,
            False,
        ),
        ("GET", "/extendedAgentCard", Operation.EXTENDED_CARD, False),
    ]
    # 0.3: the path ids carry the 0.3 JSON-RPC param names, as V03 decodes them.
    v03 = [
        ("POST", "/v1/message:send", Operation.SEND, True),
        ("POST", "/v1/message:stream", Operation.STREAM, True),
        ("GET", "/v1/tasks", Operation.LIST, False),  # as tasks/list: an a2ad extension
        ("GET", "/v1/tasks/{id}", Operation.GET, False),
        ("POST", "/v1/tasks/{id}:cancel", Operation.CANCEL, True),
        ("GET", "/v1/tasks/{id}:subscribe", Operation.SUBSCRIBE, False),
        ("POST", "/v1/tasks/{id}:subscribe", Operation.SUBSCRIBE, True),
        ("POST", "/v1/tasks/{taskId}/pushNotificationConfigs", Operation.CREATE_PUSH_CONFIG, True),
        ("GET", "/v1/tasks/{id}/pushNotificationConfigs", Operation.LIST_PUSH_CONFIGS, False),
        (
            "GET",
            "/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}",
            Operation.GET_PUSH_CONFIG,
            False,
        ),
        (
            "DELETE",
            "/v1/tasks/{id}/pushNotificationConfigs/{pushNotificationConfigId}",
            Operation.DELETE_PUSH_CONFIG,
            False,
        ),
        ("GET", "/v1/card", Operation.EXTENDED_CARD, False),
    ]
    return tuple(
        [_Route(m, t, V1, op, body) for m, t, op, body in v1]
        + [_Route(m, t, V03Rest, op, body) for m, t, op, body in v03]
    )


ROUTES = _routes()

# "1.0" paths are "/message:send"; "0.3" paths "/v1/message:send".
_PATH_OF: Mapping[tuple[str, Operation], str] = MappingProxyType(
    {(r.dialect.version, r.operation): r.template for r in reversed(ROUTES)}
)


_Pattern = tuple[tuple[str, str, str], ...]  # per segment: (literal, param name, verb)


def _pattern(template: str) -> _Pattern:
    out = []
    for segment in template.strip("/").split("/"):
        if segment.startswith("{"):
            name, _, verb = segment[1:].partition("}")
            out.append(("", name, verb))
        else:
            out.append((segment, "", ""))
    return tuple(out)


def _index() -> dict[tuple[int, str, str], list[tuple[_Pattern, _Route]]]:
    """The routes by segment count, first segment (literal in every template) and
    the verb suffix of the last (``:cancel`` in ``{id}:cancel``; "" for none)."""
    index: dict[tuple[int, str, str], list[tuple[_Pattern, _Route]]] = {}
    for route in ROUTES:
        pattern = _pattern(route.template)
        key = (len(pattern), pattern[0][0], pattern[-1][2])
        index.setdefault(key, []).append((pattern, route))
    return index


_ROUTE_INDEX = _index()


def _match(parts: list[str], pattern: _Pattern) -> dict[str, str] | None:
    """The path's parameters if ``parts`` (as many as the pattern has) fits
    ``pattern``, else None. ``{id}`` takes a whole segment, ``{id}:cancel`` one
    that ends so."""
    captured: dict[str, str] = {}
    for part, (literal, name, verb) in zip(parts, pattern, strict=True):
        if not name:
            if part != literal:
                return None
            continue
        if verb:
            part = part[: -len(verb)]
        if not part:
            return None
        captured[name] = part
    return captured


class _Found(NamedTuple):
    route: _Route
    params: dict[str, str]  # from the path, tenant included


def _find(path: str, method: str) -> _Found | list[str]:
    """The route for ``method`` on ``path``, or the methods the path takes (empty:
    no such path). A first segment that starts no route is a tenant (1.0 only:
    ``/v1/`` is 0.3's)."""
    parts = path.strip("/").split("/")
    allowed: list[str] = []
    found = _scan(parts, method, allowed)
    if found is None and not allowed and len(parts) > 1 and parts[0] != "v1":
        found = _scan(parts[1:], method, allowed, tenant=parts[0])
    return found if found is not None else allowed


def _scan(
    parts: list[str], method: str, allowed: list[str], tenant: str | None = None
) -> _Found | None:
    # A last segment "x:cancel" is tried as {id}:cancel, then as a bare {id}.
    verb = parts[-1][parts[-1].rfind(":") :] if ":" in parts[-1] else ""
    for key_verb in (verb, "") if verb else ("",):
        for pattern, route in _ROUTE_INDEX.get((len(parts), parts[0], key_verb), ()):
            if tenant is not None and route.dialect is not V1:
                continue
            captured = _match(parts, pattern)
            if captured is None:
                continue
            if route.method != method:
                allowed.append(route.method)
                continue
            if tenant is not None:
                captured["tenant"] = tenant
            return _Found(route, captured)
        if allowed:
            break
    return None


class RestEndpoint:
    """Serves the HTTP+JSON paths; ``serve`` takes the path with any mount prefix removed."""

    def __init__(
        self,
        handler: RequestHandler,
        *,
        limits: Limits | None = None,
        streams: StreamSlots | None = None,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.handler = handler
        self._dispatch = Dispatcher(handler)
        self.limits = limits if limits is not None else Limits()
        self.streams = streams if streams is not None else StreamSlots(0)
        self.keepalive_seconds = keepalive_seconds

    async def serve(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        with ExitStack() as held:  # a stream's slot, held until its response ends
            await self._serve(path, scope, receive, send, held)

    async def _serve(
        self, path: str, scope: Scope, receive: Receive, send: Send, held: ExitStack
    ) -> None:
        method = scope["method"]
        found = _find(path, method)
        if not isinstance(found, _Found):
            await self._no_route(scope, send, path, method, found)
            return
        route = found.route
        dialect = route.dialect
        v03 = dialect.version == "0.3"
        record = record_of(scope)
        if record is not None:
            record.operation(route.operation, dialect.version)
            record.task_id = found.params.get("id", "")
        try:
            self._check_version(scope, route)
            handler = self.handler
            requested = requested_extensions(scope) if handler.extensions else ()
            caller = caller_of(scope)
            context = handler.request_context(dialect.version, "HTTP+JSON", requested, caller)
            query = query_params(scope.get("query_string", b""), route.label, route.operation)
            body = b""
            if route.body:
                try:
                    read = await read_body(receive, self.limits.max_body_bytes)
                except ClientGone:
                    return
                if read is None:
                    error = body_too_large(self.limits.max_body_bytes)
                    audit.refused(scope, error, method=route.label)
                    if record is not None:
                        record.code = error.code
                    await respond(send, 413, error_body(error, 413, v03=v03))
                    return
                body = read
            params = request_params(body, route.label, found.params, query, proto=dialect is V1)
            if route.operation.streaming:
                held.enter_context(self.streams.hold(caller_key(caller, scope)))
                events = await self._dispatch.open_stream(
                    dialect,
                    route.operation,
                    route.label,
                    params,
                    context,
                    last_event_id=parse_event_id(header(scope, b"last-event-id")),
                    record=record,
                )
            else:
                result = await self._dispatch.call(
                    dialect, route.operation, route.label, params, context, scope
                )
        except A2AError as exc:
            wire = dialect.wire_error(exc, route.rpc_method)
            audit.refused(
                scope,
                wire,
                method=route.label,
                task_id=found.params.get("id", ""),
                tenant=found.params.get("tenant", ""),
            )
            if record is not None:
                record.code = wire.code
            headers = retry_headers(wire) if isinstance(wire, QuotaExceededError) else None
            await respond(send, wire.http_status, error_body(wire, v03=v03), headers=headers)
            return
        except Exception:
            failed = internal_error()  # 503 for a store outage, else 500
            if record is not None:
                record.code = failed.code
            await respond(send, failed.http_status, error_body(failed, v03=v03))
            return
        echo = echo_headers(dialect.version, context.extensions) if context.extensions else None
        if not route.operation.streaming:
            await respond(send, 200, result, headers=echo)
            return

        def encode(item: StreamItem, last: bool) -> bytes:
            return dialect.encode_stream_item(item, last)

        def fail(error: A2AError) -> bytes:  # a stream cut short: its last event says why
            return error_body(dialect.wire_error(error, route.rpc_method), v03=v03)

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

    @staticmethod
    def _check_version(scope: Scope, route: _Route) -> None:
        text = version_text(scope)
        if not text:
            return  # the path says the version
        asked = requested_version(text)
        ours = route.dialect.version
        if asked == ours:
            return
        other = _PATH_OF.get((asked, route.operation))
        hint = (
            f"A2A {asked} is served at {route.method} {other}"
            if other is not None
            else "this server speaks A2A 1.0 (at /message:send, ...) and 0.3 (at /v1/...)"
        )
        raise VersionNotSupportedError(
            f"{route.label} is an A2A {ours} path but the request asked for A2A {asked}; {hint}",
            metadata={"path": route.template, "pathVersion": ours, "requestedVersion": asked},
        )

    @staticmethod
    async def _no_route(
        scope: Scope, send: Send, path: str, method: str, allowed: list[str]
    ) -> None:
        if allowed:
            methods = ", ".join(sorted(set(allowed)))
            error: A2AError = InvalidRequestError(
                f"{method} {path}: this path takes {methods}",
                metadata={"allow": methods},
            )
            audit.refused(scope, error, method=f"{method} {path}")
            if (record := record_of(scope)) is not None:
                record.code = error.code
            body = error_body(error, 405, v03=path.startswith("/v1/"))
            await respond(send, 405, body, headers=[(b"allow", methods.encode())])
            return
        error = MethodNotFoundError(
            f"No route for {method} {path}. A2A 1.0 over HTTP+JSON: POST /message:send, "
            "POST /message:stream, GET /tasks, GET /tasks/{id}, POST /tasks/{id}:cancel, "
            "POST /tasks/{id}:subscribe (each also under /{tenant}/); A2A 0.3: the same "
            "under /v1/; JSON-RPC: POST / or /a2a; the agent card: "
            "GET /.well-known/agent-card.json",
            metadata={"method": method, "path": path},
        )
        audit.refused(scope, error, method=f"{method} {path}")
        if (record := record_of(scope)) is not None:
            record.code = error.code
        await respond(send, 404, error_body(error, v03=path.startswith("/v1/")))
