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

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from ...protocol.dialect import METHODS, Operation, Version, requested_version
from ...protocol.errors import (
    A2AError,
    InvalidRequestError,
    MethodNotFoundError,
    VersionNotSupportedError,
)
from ...protocol.types import StreamItem
from ...protocol.v03_rest import V03Rest
from ...protocol.v1 import V1
from .. import audit
from ..dialect import ServerDialect
from ..errors import error_body
from ..observed import record_of
from ..request import A2ARequest, ReplyValue
from ..types import Receive, Scope, Send, caller_of, respond
from .rest_params import query_params, request_params
from .skeleton import BindingEndpoint, Exchange, Refusal, json_reply, serve

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


class RestEndpoint(BindingEndpoint):
    """Serves the HTTP+JSON paths; ``serve`` takes the path with any mount prefix removed."""

    binding = "HTTP+JSON"

    async def serve(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        found = _find(path, scope["method"])
        if not isinstance(found, _Found):
            await _no_route(scope, send, path, scope["method"], found)
            return
        await serve(_RestExchange(self, found, scope, receive, send))


class _RestExchange(Exchange):
    """One HTTP+JSON request on a route: the neutral request is its path's,
    query's and body's params as JSON-RPC would carry them."""

    __slots__ = ("found", "v03")

    def __init__(
        self, endpoint: RestEndpoint, found: _Found, scope: Scope, receive: Receive, send: Send
    ):
        super().__init__(endpoint, scope, receive, send)
        self.found = found
        self.v03 = found.route.dialect.version == "0.3"

    async def read(self) -> A2ARequest:
        route, path_params = self.found
        dialect = route.dialect
        if (record := self.record) is not None:
            record.operation(route.operation, dialect.version)
            record.task_id = path_params.get("id", "")
        self._check_version()
        context = self.context(dialect)
        query = query_params(self.scope.get("query_string", b""), route.label, route.operation)
        body = await self.body() if route.body else b""
        params = request_params(body, route.label, path_params, query, proto=dialect is V1)
        return self.request(dialect, route.operation, route.label, params, context)

    def too_large(self, error: A2AError) -> tuple[str, bytes]:
        return self.found.route.label, error_body(error, 413, v03=self.v03)

    def refusal(self, error: A2AError) -> Refusal:
        route, path_params = self.found
        wire = route.dialect.wire_error(error, route.rpc_method)
        return Refusal(wire, route.label, path_params.get("id", ""), path_params.get("tenant", ""))

    def error_answer(self, wire: A2AError) -> tuple[int, bytes]:
        return wire.http_status, error_body(wire, v03=self.v03)

    def result(self, operation: Operation, value: ReplyValue) -> bytes:
        return json_reply(self.found.route.dialect, operation, value)

    def stream_codec(
        self, request: A2ARequest
    ) -> tuple[Callable[[StreamItem, bool], bytes], Callable[[A2AError], bytes]]:
        dialect, rpc_method, v03 = request.dialect, self.found.route.rpc_method, self.v03

        def fail(error: A2AError) -> bytes:  # a stream cut short: its last event says why
            return error_body(dialect.wire_error(error, rpc_method), v03=v03)

        return dialect.encode_stream_item, fail

    def _check_version(self) -> None:
        route = self.found.route
        text = self.version_asked()
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


async def _no_route(scope: Scope, send: Send, path: str, method: str, allowed: list[str]) -> None:
    if allowed:
        methods = ", ".join(sorted(set(allowed)))
        error: A2AError = InvalidRequestError(
            f"{method} {path}: this path takes {methods}",
            metadata={"allow": methods},
        )
        audit.refused(caller_of(scope), scope.get("client"), error, method=f"{method} {path}")
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
    audit.refused(caller_of(scope), scope.get("client"), error, method=f"{method} {path}")
    if (record := record_of(scope)) is not None:
        record.code = error.code
    await respond(send, 404, error_body(error, v03=path.startswith("/v1/")))
