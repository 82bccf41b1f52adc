"""One gRPC call as the rest of a2ad sees it: its metadata as headers, its peer,
its record for the observers, its caller, its end as a status.

gRPC's call metadata and HTTP's headers are one namespace (lowercase names,
text values), so a call is read the way a request is: ``authorization`` and
``x-api-key`` prove the caller (the app's authenticator, before anything is
looked up), ``a2a-version`` and ``a2a-extensions`` say what the caller speaks,
``x-request-id`` and ``traceparent`` go to the observers, ``last-event-id``
resumes a subscription. What only gRPC has: ``a2ad-agent`` names which of the
server's agents the call is for (the one at / when absent), as the path's
``/agents/<name>/`` does over HTTP. An error ends the call with the status the
spec's table gives its A2A error (protocol/rpc_status.py), its google.rpc.Status
(ErrorInfo, and BadRequest for a field) in the ``grpc-status-details-bin``
trailer, and the same message as the status's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from ...agent import ANONYMOUS, Caller
from ...protocol.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    UnauthenticatedError,
)
from ...protocol.grpc_schema import whole_numbers
from ...protocol.rpc_status import rpc_status, status_message
from .. import audit
from ..auth import AuthenticationFailed
from ..gate import log_refused
from ..limits import caller_key
from ..observed import RequestRecord
from ..request import Headers, Inbound, Peer

__all__ = [
    "AGENT_KEY",
    "Context",
    "abort",
    "admit",
    "bounded",
    "call_headers",
    "message_json",
    "no_agent",
    "peer_of",
    "read_message",
    "scope_of",
]

Context = Any  # grpc.aio.ServicerContext: what a call's handler is given

AGENT_KEY = b"a2ad-agent"  # the metadata naming the agent a call is for


def call_headers(context: Context) -> list[tuple[bytes, bytes]]:
    """The call's text metadata as header pairs (a ``-bin`` key carries bytes,
    which no A2A header is: left out)."""
    return [
        (key.encode("latin-1"), value.encode("latin-1"))
        for key, value in context.invocation_metadata() or ()
        if isinstance(value, str)
    ]


def read_message(request_class: Any, raw: bytes, rpc: str) -> Any:
    """The request message of ``raw``; raises InvalidRequestError for bytes that
    are not one (a corrupt encoding, text that is not UTF-8, nesting too deep)."""
    try:
        return request_class.FromString(raw)
    except DecodeError as exc:
        name = request_class.DESCRIPTOR.full_name
        raise InvalidRequestError(f"{rpc}: the request is not a valid {name}: {exc}") from None


def message_json(message: Any, rpc: str) -> Any:
    """A request message as ProtoJSON values, with every whole number a
    ``google.protobuf.Struct`` holds (a data part's, metadata's) an int again:
    Struct keeps numbers as doubles, so ``{"n": 1}`` arrives as ``1.0``, and
    would be stored and answered over JSON-RPC so. Raises InvalidParamsError
    for a value ProtoJSON has no form for (a timestamp outside years 1-9999, a
    number that is not finite)."""
    try:
        return whole_numbers(json_format.MessageToDict(message))
    except (json_format.Error, ValueError) as exc:  # json_format's names the field
        raise InvalidParamsError(f"Invalid params for {rpc}: {exc}") from None


def peer_of(context: Context) -> Peer | None:
    """The caller's address and port, from gRPC's ``ipv4:1.2.3.4:5``,
    ``ipv6:[::1]:5``; None for another kind (a Unix socket)."""
    peer = context.peer() or ""
    kind, _, address = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def scope_of(
    record: RequestRecord, pairs: Sequence[tuple[bytes, bytes]], peer: Peer | None
) -> dict[str, Any]:
    """What observers read of a request (server/observed.py): its method
    (HTTP/2's, which gRPC's always is), path, headers and client."""
    return {"type": "grpc", "method": "POST", "path": record.path, "headers": pairs, "client": peer}


async def admit(app: Any, headers: Headers, peer: Peer | None, record: RequestRecord) -> Caller:
    """The call's caller, proved by the app's authenticator (anonymous without
    one) and within the rate limit; raises UnauthenticatedError (logged as over
    HTTP) or QuotaExceededError (audited)."""
    caller = ANONYMOUS
    authenticator = app.authenticator
    if authenticator is not None:
        try:
            caller = await authenticator.authenticate(Inbound(headers, peer))
        except AuthenticationFailed as exc:
            log_refused(exc, peer, "POST", record.path)
            raise UnauthenticatedError(exc.message) from None
        record.principal = caller.principal
    rate = app.rate
    if rate is not None:
        try:
            rate.take(caller_key(caller, peer))
        except A2AError as exc:
            audit.refused(caller, peer, exc, method=record.method or record.path)
            raise
    return caller


def no_agent(name: str, names: Sequence[str]) -> MethodNotFoundError:
    """A call for an agent the server lacks: named, with the ones it has."""
    listed = ", ".join(names) or "none (one agent, served when a2ad-agent is not sent)"
    return MethodNotFoundError(
        f"a2ad-agent {name[:256]!r}: this server has no such agent; its agents: {listed}",
        metadata={"agent": name[:256]},
    )


# How much of an error a status carries. gRPC clients refuse trailers past 8 KiB
# (16 at most), and an error that repeats a long value of the request (a task
# id, a tenant) would lose the client the status itself: its message is cut
# to 512 bytes of UTF-8 (three times that in grpc-message's escapes) and each
# ErrorInfo value to 128 characters.
_MESSAGE_BYTES = 512
_VALUE_CHARS = 128


def bounded(error: A2AError) -> A2AError:
    """``error``, or a copy of it whose message and metadata fit a status."""
    long_message = len(error.message.encode()) > _MESSAGE_BYTES
    long_values = any(len(value) > _VALUE_CHARS for value in error.metadata.values())
    if not long_message and not long_values:
        return error
    short = copy.copy(error)
    if long_message:
        cut = error.message.encode()[: _MESSAGE_BYTES - 3].decode(errors="ignore")
        short.message = cut + "…"
    short.metadata = {key: value[:_VALUE_CHARS] for key, value in error.metadata.items()}
    return short


async def abort(
    context: Context,
    error: A2AError,
    said: str,
    table: Mapping[str, str],
    trailers: Sequence[tuple[str, str]] = (),
) -> None:
    """End the call with ``error``'s status by ``table`` and the message
    ``said`` (the google.rpc.Status's too: clients compare the two); raises
    (grpc's abort)."""
    status = status_message(error, table=table)
    status.message = said
    context.set_trailing_metadata(
        (*trailers, ("grpc-status-details-bin", status.SerializeToString()))
    )
    await context.abort(grpc.StatusCode[rpc_status(error, table=table)], said)
