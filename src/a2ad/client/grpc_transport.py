"""A2A 1.0 or 0.3 over gRPC to one server: the client's other transport
(``rpc.py`` is JSON-RPC's).

``GrpcTransport`` calls ``lf.a2a.v1.A2AService`` (A2A 1.0, with
``a2a-version: 1.0``) or ``a2a.v1.A2AService`` (0.3, with no version, as 0.3
has none) at a ``host:port``, plaintext or TLS (the system's roots), with the
client's credentials as call metadata (``authorization``, ``x-api-key``:
gRPC's names are lowercase). Its dialect's JSON is ProtoJSON of the version's
request messages (1.0's ``V1``; 0.3's ``V03Grpc``, whose rpcs have 0.3's names
and whose tasks are resource names), so an operation's params parse into the
rpc's request message and its reply prints back as the JSON the dialect
decodes (protobuf's ``json_format``). The messages come from a2ad's copy of
the spec's schema, in a descriptor pool of its own (protocol/grpc_schema): the
official SDK, which may be loaded in the same process, registers the same
names in protobuf's default pool.

Streams ask for each event's id (``a2ad-event-ids: 1``: a2ad puts it in the
event's ``metadata.a2ad.eventId``, taken out here so the item is what
JSON-RPC carries) and resume after one with ``last-event-id``, as SSE does
with ``Last-Event-ID``; another server sends no ids, and a stream opened again
starts with the task anew. An error's google.rpc.Status (the
``grpc-status-details-bin`` trailer) names its A2A error by ErrorInfo reason,
and is raised as the class, message and ``data`` JSON-RPC would give. A 0.3
error's message starts with its A2A name (``TaskNotFoundError: ...``), which
names it when there is no ErrorInfo (the official SDK's 0.3 service sends
none), and is taken off the message.
Failing to reach the server, a deadline passed, or an answer that is not A2A
is a ``ClientError``. grpc is imported when a transport is made: it comes
with the ``grpc`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

import msgspec

from ..protocol.dialect import DIALECTS, Op, Operation, method_name
from ..protocol.errors import (
    ERROR_DOMAIN,
    ERRORS_BY_REASON,
    A2AError,
    InternalError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from ..protocol.grpc_schema import SERVICES, Version, whole_numbers
from ..protocol.types import StreamItem
from ..protocol.v03_grpc import V03Grpc
from .errors import ClientError, RemoteError, error_from
from .traced import CALL_TRACER
from .transport import Codec

__all__ = ["GrpcAddress", "GrpcTransport", "card_grpc_address", "is_grpc_url", "parse_grpc_url"]

T = TypeVar("T")
Metadata = list[tuple[str, str]]

_V1 = DIALECTS["1.0"]
_CODECS: Mapping[Version, Codec] = {"1.0": _V1, "0.3": V03Grpc}
# The rpc of each operation the client calls, in 0.3's service (1.0's have the
# names of its JSON-RPC methods); it has no ListTasks.
_RPCS_03: Mapping[Operation, str] = {
    Op.SEND: "SendMessage",
    Op.STREAM: "SendStreamingMessage",
    Op.GET: "GetTask",
    Op.CANCEL: "CancelTask",
    Op.SUBSCRIBE: "TaskSubscription",
}
# The A2A errors by name, which a 0.3 error's message starts with.
_BY_NAME: Mapping[str, type[A2AError]] = {cls.__name__: cls for cls in ERRORS_BY_REASON.values()}
_AGENT_KEY = "a2ad-agent"  # which of an a2ad server's agents a call is for
_EVENT_IDS = ("a2ad-event-ids", "1")
_DETAILS_KEY = "grpc-status-details-bin"
# An answer of any size, as over HTTP (grpc's own default stops at 4 MiB).
_OPTIONS = (("grpc.max_receive_message_length", -1),)
# Statuses that mean the same without an ErrorInfo (a proxy's, an interceptor's).
_BY_STATUS: Mapping[str, type[A2AError]] = {
    "UNAUTHENTICATED": UnauthenticatedError,
    "PERMISSION_DENIED": PermissionDeniedError,
}
_USAGE = (
    "a gRPC URL is grpc://HOST:PORT (plaintext) or grpcs://HOST:PORT (TLS), "
    "with /agents/NAME after it for one agent of an a2ad server"
)


class GrpcAddress(NamedTuple):
    """Where a gRPC server listens (``host:port``), whether over TLS, and the
    agent of an a2ad server the calls are for ("": the one served by default)."""

    address: str
    tls: bool
    agent: str = ""

    @property
    def url(self) -> str:
        return f"{'grpcs' if self.tls else 'grpc'}://{self.address}"


def is_grpc_url(url: str) -> bool:
    return url.lower().startswith(("grpc://", "grpcs://"))


def parse_grpc_url(url: str) -> GrpcAddress:
    """``grpc://HOST:PORT`` (plaintext) or ``grpcs://HOST[:PORT]`` (TLS; port
    443 by default), then ``/agents/NAME`` for one agent of an a2ad server
    (sent as ``a2ad-agent``); raises ValueError naming the forms."""
    parts = urlsplit(url.strip())
    tls = parts.scheme.lower() == "grpcs"
    try:
        port = parts.port or (443 if tls else None)
    except ValueError:  # not a number, or out of range
        port = None
    path = parts.path.strip("/")
    agent = path.removeprefix("agents/")
    bad_path = bool(path) and (agent == path or not agent or "/" in agent)
    if not is_grpc_url(url.strip()) or not parts.hostname or port is None or bad_path:
        raise ValueError(f"{url}: {_USAGE}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return GrpcAddress(f"{host}:{port}", tls, agent if path else "")


def card_grpc_address(
    card: Mapping[str, Any], base: str, version: Version = "1.0"
) -> GrpcAddress | None:
    """The GRPC interface of A2A ``version`` that an agent card offers, or None.
    For 1.0 a ``supportedInterfaces`` entry of version 1.x; for 0.3 one of
    version 0.3, else the 0.3 card's ``additionalInterfaces`` entry of
    transport GRPC, else its ``url`` if its ``preferredTransport`` is GRPC. Its
    ``url`` is a bare ``host:port`` (a2ad's cards, the SDK's), as secure as the
    card's own URL ``base`` (TLS for https), or a URL whose scheme says
    (``grpcs``/``https``: TLS; ``grpc``/``http``: plaintext). Raises
    ClientError for one that names no host and port."""
    url = _card_grpc_url(card, version)
    if url is None:
        return None
    scheme, found, rest = url.partition("://")
    if not found:
        scheme, rest = ("https" if base.lower().startswith("https:") else "http"), url
    secure = scheme.lower() in ("grpcs", "https")
    address = urlsplit(f"//{rest}").netloc  # a path, if any, is no part of a gRPC target
    try:
        return parse_grpc_url(f"{'grpcs' if secure else 'grpc'}://{address}")
    except ValueError:
        raise ClientError(
            f"{base}'s agent card names its gRPC interface {url!r}, which is no host:port",
            url=base,
        ) from None


def _card_grpc_url(card: Mapping[str, Any], version: Version) -> str | None:
    """The ``url`` of the card's GRPC interface of ``version`` (as
    ``card_grpc_address`` says where it is found), or None."""
    prefix = "1." if version == "1.0" else "0.3"
    interfaces = card.get("supportedInterfaces")
    for entry in interfaces if isinstance(interfaces, list) else []:
        if (
            isinstance(entry, dict)
            and str(entry.get("protocolBinding", "")).upper() == "GRPC"
            and str(entry.get("protocolVersion", "")).startswith(prefix)
            and isinstance(entry.get("url"), str)
            and entry["url"]
        ):
            return str(entry["url"])
    if version != "0.3":
        return None
    more = card.get("additionalInterfaces")
    for entry in more if isinstance(more, list) else []:
        if (
            isinstance(entry, dict)
            and str(entry.get("transport", "")).upper() == "GRPC"
            and isinstance(entry.get("url"), str)
            and entry["url"]
        ):
            return str(entry["url"])
    url = card.get("url")
    if str(card.get("preferredTransport", "")).upper() == "GRPC" and isinstance(url, str) and url:
        return url
    return None


class _Grpc:
    """grpc and protobuf's ``json_format``."""

    def __init__(self) -> None:
        import grpc  # type: ignore[import-untyped]
        import grpc.aio  # type: ignore[import-untyped]
        from google.protobuf import json_format  # type: ignore[import-untyped]

        # ErrorInfo and BadRequest print by name only once their module is loaded.
        from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]  # noqa: F401

        self.grpc = grpc
        self.json_format = json_format
        self.status = status_pb2.Status


@functools.cache
def _loaded() -> _Grpc:
    return _Grpc()


@functools.cache
def _rpcs(version: Version) -> dict[str, tuple[Any, Any, bool]]:
    """Each rpc of ``version``'s service: its request class, response class
    and whether it streams."""
    from ..protocol.grpc_schema import Schema

    schema = Schema(version)
    return {
        name: (schema.message(request), schema.message(response), streams)
        for name, (request, response, streams) in schema.methods().items()
    }


class GrpcTransport:
    """Calls of A2A 1.0's or 0.3's gRPC service for the client of ``url`` (what
    its errors name), to ``target`` in ``version`` once they are known
    (``aim``). ``metadata``
    (credentials, headers) goes with every call. ``timeout`` bounds each unary
    call; a stream has no deadline, and ``stream_timeout``, if set, bounds its
    silences. Raises ClientError when the ``grpc`` extra is not installed."""

    def __init__(
        self,
        url: str,
        *,
        metadata: Mapping[str, str],
        timeout: float,
        stream_timeout: float | None,
        target: GrpcAddress | None = None,
        version: Version = "1.0",
    ) -> None:
        try:
            self._g = _loaded()
        except ModuleNotFoundError as exc:
            raise ClientError(
                f"A2A over gRPC needs the grpc extra ({exc}): pip install 'a2ad[grpc]'",
                url=url,
            ) from None
        self.url = url
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self.dialect: Codec | None = None
        self.target: GrpcAddress | None = None
        self._metadata = {key.lower(): value for key, value in metadata.items()}
        self._channel: Any = None
        if target is not None:
            self.aim(target, version)

    def aim(self, target: GrpcAddress, version: Version) -> Codec:
        """Call ``target`` from now on, in A2A ``version``; returns its dialect."""
        self.target = target
        if target.agent:
            self._metadata.setdefault(_AGENT_KEY, target.agent)
        self.dialect = _CODECS[version]
        return self.dialect

    async def aclose(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    async def call(self, op: Operation, params: bytes) -> bytes:
        name, request, response = self._request(op, params)
        rpc = self._open().unary_unary(
            f"/{self._service}/{name}",
            request_serializer=_serialize,
            response_deserializer=response.FromString,
        )
        with self._traced(name, ()) as (metadata, answered):
            try:
                reply = await rpc(request, metadata=metadata, timeout=self.timeout)
            except self._g.grpc.aio.AioRpcError as exc:
                raise self._failed(exc, name) from None
            answered(200)
        return self._json(reply)

    async def events(
        self, op: Operation, params: bytes, *, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[str, StreamItem]]:
        name, request, response = self._request(op, params)
        decode = self._codec.decode_stream_item
        rpc = self._open().unary_stream(
            f"/{self._service}/{name}",
            request_serializer=_serialize,
            response_deserializer=response.FromString,
        )
        extra = [_EVENT_IDS]
        if last_event_id is not None:
            extra.append(("last-event-id", last_event_id))
        eof = self._g.grpc.aio.EOF
        with self._traced(name, extra) as (metadata, answered):
            call = rpc(request, metadata=metadata)
            try:
                started = False
                while (message := await self._read(call)) is not eof:
                    if not started:
                        started = True
                        answered(200)
                    event = self._dict(message)
                    event_id = _take_event_id(event)
                    raw = msgspec.json.encode(event)
                    yield event_id, self.decode(decode, raw)
            except self._g.grpc.aio.AioRpcError as exc:
                raise self._failed(exc, name) from None
            finally:
                call.cancel()  # a reader that stopped early: the server stops sending

    def decode(self, decode: Callable[[bytes], T], raw: bytes) -> T:
        try:
            return decode(raw)
        except (msgspec.DecodeError, A2AError, ValueError) as exc:
            raise ClientError(
                f"{self._where} answered a result that is not valid A2A "
                f"{self._codec.version}: {exc}",
                url=self.url,
            ) from None

    # --- plumbing ---

    @property
    def _codec(self) -> Codec:
        assert self.dialect is not None  # aimed before any call
        return self.dialect

    @property
    def _service(self) -> str:
        return SERVICES[self._codec.version]

    @property
    def _where(self) -> str:
        """The server as errors name it: its gRPC URL (and the card that gave it)."""
        assert self.target is not None  # aimed before any call
        if self.target.url == self.url:
            return self.url
        return f"{self.target.url} (gRPC, from {self.url}'s agent card)"

    def _open(self) -> Any:
        """The channel, opened at the first call (inside the event loop it serves)."""
        if self._channel is None:
            assert self.target is not None
            aio = self._g.grpc.aio
            if self.target.tls:
                credentials = self._g.grpc.ssl_channel_credentials()
                self._channel = aio.secure_channel(self.target.address, credentials, _OPTIONS)
            else:
                self._channel = aio.insecure_channel(self.target.address, _OPTIONS)
        return self._channel

    def _request(self, op: Operation, params: bytes) -> tuple[str, Any, Any]:
        """(rpc name, request message, response class) of a call of ``op``. 1.0's
        rpcs have its JSON-RPC methods' names; an operation 0.3's service lacks
        (ListTasks) is a ClientError."""
        version = self._codec.version
        name = method_name(_V1, op) if version == "1.0" else _RPCS_03.get(op, "")
        if not name:
            raise ClientError(
                f"{self._where} is called in A2A 0.3 over gRPC, and 0.3's gRPC service "
                f"({self._service}) has no {method_name(_V1, op)}: call it over JSON-RPC, "
                "or over gRPC in A2A 1.0",
                url=self.url,
            )
        request_class, response_class, _ = _rpcs(version)[name]
        try:
            request = self._g.json_format.Parse(params, request_class(), ignore_unknown_fields=True)
        except self._g.json_format.ParseError as exc:
            raise ClientError(f"can't put {name}'s request in gRPC: {exc}", url=self.url) from None
        return name, request, response_class

    @contextlib.contextmanager
    def _traced(
        self, name: str, extra: Sequence[tuple[str, str]]
    ) -> Iterator[tuple[Metadata, Callable[[int], None]]]:
        """(metadata, answered) of one call, in a span of the call tracer if one
        is set (which adds its trace context to the metadata)."""
        headers = dict(self._metadata)
        if self._codec.version == "1.0":  # 0.3 names no version (its service says it)
            headers["a2a-version"] = "1.0"
        tracer = CALL_TRACER.get()
        if tracer is None:
            yield [*headers.items(), *extra], _unnoted
            return
        assert self.target is not None
        where = f"{self.target.url}/{self._service}/{name}"
        with tracer(name, "POST", where, headers) as answered:
            yield [*((key.lower(), value) for key, value in headers.items()), *extra], answered

    async def _read(self, call: Any) -> Any:
        if self.stream_timeout is None:
            return await call.read()
        try:
            return await asyncio.wait_for(call.read(), self.stream_timeout)
        except TimeoutError:
            raise self._waited(self.stream_timeout) from None

    def _dict(self, message: Any) -> dict[str, Any]:
        printed = self._g.json_format.MessageToDict(
            message, always_print_fields_with_no_presence=True
        )
        whole: dict[str, Any] = whole_numbers(printed)
        return whole

    def _json(self, message: Any) -> bytes:
        return msgspec.json.encode(self._dict(message))

    def _failed(self, exc: Any, name: str) -> Exception:
        """What a call that ended with status ``exc`` (an AioRpcError) raises."""
        code: str = exc.code().name
        message: str = exc.details() or code
        data = self._details(exc.trailing_metadata())
        named = self._named(message)
        if named is not None:
            message = named[1]
        for detail in data:
            known = ERRORS_BY_REASON.get(str(detail.get("reason")))
            if detail.get("domain") == ERROR_DOMAIN and known is not None:
                return error_from({"code": known.code, "message": message, "data": data}, self.url)
        if named is not None:
            error = named[0](message)
            error.data = data or None  # type: ignore[attr-defined]  # as error_from sets it
            return error
        if code == "DEADLINE_EXCEEDED":
            return self._timed_out()
        if code == "UNAVAILABLE":
            said = "connection refused" if "refused" in message.lower() else message
            return ClientError(
                f"can't reach {self._where}: {said}; is the server running, and is the URL right?",
                url=self.url,
            )
        if code == "UNIMPLEMENTED":
            return ClientError(
                f"{self._where} does not serve {self._service}/{name} ({message}); "
                f"is it an A2A {self._codec.version} gRPC server?",
                url=self.url,
            )
        if code == "CANCELLED":  # the server stopped the call (shutting down)
            return ClientError(f"{self._where} ended the call: {message}", url=self.url)
        fallback = _BY_STATUS.get(code)
        error = (
            fallback(message)
            if fallback is not None
            else RemoteError(f"{message} (gRPC status {code})", code=InternalError.code)
        )
        error.data = data or None  # type: ignore[attr-defined]  # as error_from sets it
        return error

    def _named(self, message: str) -> tuple[type[A2AError], str] | None:
        """(class, message) of a 0.3 error's message that starts with its A2A
        name (``TaskNotFoundError: Task ... not found``); None for another."""
        name, found, rest = message.partition(": ")
        known = _BY_NAME.get(name)
        if self._codec.version != "0.3" or not found or known is None:
            return None
        return known, rest

    def _details(self, trailers: Any) -> list[dict[str, Any]]:
        """The details of the google.rpc.Status in ``trailers``, as JSON-RPC's
        ``error.data`` carries them (``@type`` and the fields); [] without one."""
        for key, value in trailers or ():
            if key != _DETAILS_KEY or not isinstance(value, bytes):
                continue
            try:
                status = self._g.status.FromString(value)
            except Exception:  # protobuf's DecodeError: a trailer that is not a Status
                return []
            details = []
            for detail in status.details:
                with contextlib.suppress(Exception):  # a type this process can't print
                    details.append(whole_numbers(self._g.json_format.MessageToDict(detail)))
            return details
        return []

    def _timed_out(self) -> ClientError:
        grpc = self._g.grpc
        state = self._channel.get_state() if self._channel is not None else None
        if state != grpc.ChannelConnectivity.READY:
            return ClientError(
                f"can't reach {self._where}: no connection within {self.timeout:g} s; "
                "is the URL right?",
                url=self.url,
            )
        return self._waited(self.timeout)

    def _waited(self, seconds: float) -> ClientError:
        return ClientError(
            f"waited on {self._where}: no answer within {seconds:g} s (the server took the "
            "request; a task may still be running: raise the timeout, or send without waiting)",
            url=self.url,
        )


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _take_event_id(event: dict[str, Any]) -> str:
    """The id a2ad put in a stream event's ``metadata.a2ad.eventId``, taken out
    with what it leaves empty, so the event is the one JSON-RPC carries; "" if
    it has none."""
    for payload in event.values():
        metadata = payload.get("metadata") if isinstance(payload, dict) else None
        if not isinstance(metadata, dict):
            continue
        ours = metadata.get("a2ad")
        if not isinstance(ours, dict) or "eventId" not in ours:
            continue
        event_id = str(ours.pop("eventId"))
        if not ours:
            del metadata["a2ad"]
        if not metadata:
            del payload["metadata"]
        return event_id
    return ""


def _unnoted(status: int) -> None:
    """What an untraced call does with its status."""
