"""An A2AError as a google.rpc status: the canonical code the spec's table gives
it, and the ``google.rpc.Status`` message that carries it with its details.

HTTP+JSON names the code in its error body (server/errors.py); gRPC answers
with it as the call's status and sends the Status, serialized, in the
``grpc-status-details-bin`` trailer (issue 26). The table is the spec's from
1.0.1 on (``TABLE_1_0_1``, the default); A2A v1.0.0 answered three errors
UNIMPLEMENTED that 1.0.1 answers FAILED_PRECONDITION (``TABLE_1_0_0``), kept
for clients written to it. An error the table does not name takes the code of
its HTTP status. ``status_message`` needs googleapis-common-protos (the ``grpc``
extra); nothing else here imports protobuf.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .errors import ERROR_DOMAIN, A2AError

__all__ = ["RPC_CODES", "TABLES", "TABLE_1_0_0", "TABLE_1_0_1", "rpc_status", "status_message"]

# google.rpc.Code: each canonical code's name and number.
RPC_CODES: Mapping[str, int] = MappingProxyType(
    {
        name: number
        for number, name in enumerate(
            (
                "OK",
                "CANCELLED",
                "UNKNOWN",
                "INVALID_ARGUMENT",
                "DEADLINE_EXCEEDED",
                "NOT_FOUND",
                "ALREADY_EXISTS",
                "PERMISSION_DENIED",
                "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION",
                "ABORTED",
                "OUT_OF_RANGE",
                "UNIMPLEMENTED",
                "INTERNAL",
                "UNAVAILABLE",
                "DATA_LOSS",
                "UNAUTHENTICATED",
            )
        )
    }
)

# By ErrorInfo reason, where the spec's table names a code other than the HTTP status's.
TABLE_1_0_1: Mapping[str, str] = MappingProxyType(
    {
        "TASK_NOT_CANCELABLE": "FAILED_PRECONDITION",
        "PUSH_NOTIFICATION_NOT_SUPPORTED": "FAILED_PRECONDITION",
        "UNSUPPORTED_OPERATION": "FAILED_PRECONDITION",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED": "FAILED_PRECONDITION",
        "EXTENSION_SUPPORT_REQUIRED": "FAILED_PRECONDITION",
        "VERSION_NOT_SUPPORTED": "FAILED_PRECONDITION",
    }
)
TABLE_1_0_0: Mapping[str, str] = MappingProxyType(
    {
        **TABLE_1_0_1,
        "PUSH_NOTIFICATION_NOT_SUPPORTED": "UNIMPLEMENTED",
        "UNSUPPORTED_OPERATION": "UNIMPLEMENTED",
        "VERSION_NOT_SUPPORTED": "UNIMPLEMENTED",
    }
)
_BY_HTTP: Mapping[int, str] = MappingProxyType(
    {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        405: "UNIMPLEMENTED",
        413: "INVALID_ARGUMENT",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
)


# The tables by the spec release that gave them (``a2ad serve --grpc-error-table``).
TABLES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {"1.0.1": TABLE_1_0_1, "1.0.0": TABLE_1_0_0}
)


def rpc_status(
    error: A2AError, http_status: int | None = None, *, table: Mapping[str, str] = TABLE_1_0_1
) -> str:
    """The google.rpc.Code name of ``error``: the ``table``'s for its reason, else
    that of ``http_status`` (default: the error's own), else UNKNOWN."""
    named = table.get(error.reason)
    if named is not None:
        return named
    status = error.http_status if http_status is None else http_status
    return _BY_HTTP.get(status, "UNKNOWN")


def status_message(error: A2AError, *, table: Mapping[str, str] = TABLE_1_0_1) -> Any:
    """A ``google.rpc.Status`` of ``error``: its code, its message, and its
    details (an ErrorInfo: reason, the A2A domain, metadata; a BadRequest naming
    the field, when the error is about one). ``SerializeToString()`` gives the
    ``grpc-status-details-bin`` trailer."""
    from google.protobuf import any_pb2  # type: ignore[import-untyped]
    from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

    name = rpc_status(error, table=table)
    status = status_pb2.Status(code=code_pb2.Code.Value(name), message=error.message)
    info = error_details_pb2.ErrorInfo(
        reason=error.reason, domain=ERROR_DOMAIN, metadata=error.metadata
    )
    details = [info]
    if error.field is not None:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=error.field, description=error.message
        )
        details.append(error_details_pb2.BadRequest(field_violations=[violation]))
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return status
