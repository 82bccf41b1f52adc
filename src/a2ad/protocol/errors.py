"""Errors that travel to the caller, each carrying its wire codes.

    A2AError
     ├── JSONParseError            -32700  body is not JSON
     ├── InvalidRequestError       -32600  not a JSON-RPC 2.0 request object
     ├── MethodNotFoundError       -32601
     ├── InvalidParamsError        -32602  params fail validation (names the field)
     ├── InternalError             -32603
     │    └── TaskStoreUnavailableError -32603  the task store can't be reached now (HTTP 503)
     ├── ServerBusyError           -32000  the store is full of work in flight
     │    ├── StreamFellBehindError  -32000  a stream's reader fell too far behind
     │    ├── QuotaExceededError     -32000  a caller's quota or rate is spent (HTTP 429)
     │    └── NoWorkerError          -32000  a front's task waits, and no worker runs its agent
     ├── TaskNotFoundError         -32001  unknown, evicted, or not the caller's
     ├── TaskNotCancelableError    -32002  the task is already terminal
     ├── PushNotificationNotSupportedError  -32003
     ├── UnsupportedOperationError -32004  e.g. a message to a terminal task
     ├── ContentTypeNotSupportedError      -32005
     ├── InvalidAgentResponseError -32006
     ├── ExtendedAgentCardNotConfiguredError -32007
     ├── ExtensionSupportRequiredError     -32008
     ├── VersionNotSupportedError  -32009  wrong or missing A2A-Version for the method
     └── UnauthenticatedError      -31401  no credential, or one that proves nothing (HTTP 401)

Raise the specific class; the server turns it into a wire error in one place.
``ERRORS_BY_CODE`` maps a code to its class; ``ERRORS_BY_REASON`` maps an
ErrorInfo reason to its class, subclasses included (a client reads it first).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ERRORS_BY_CODE",
    "ERRORS_BY_REASON",
    "ERROR_DOMAIN",
    "A2AError",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "MethodNotFoundError",
    "NoWorkerError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "QuotaExceededError",
    "ServerBusyError",
    "StreamFellBehindError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TaskStoreUnavailableError",
    "UnauthenticatedError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
]

ERROR_DOMAIN = "a2a-protocol.org"


class A2AError(Exception):
    """Base of every error a caller can receive."""

    code: ClassVar[int] = -32603
    reason: ClassVar[str] = "INTERNAL_ERROR"
    http_status: ClassVar[int] = 500

    def __init__(
        self,
        message: str,
        *,
        metadata: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata or {}
        self.field = field

    def details(self) -> list[dict[str, Any]]:
        """The ``error.data`` array: a google.rpc.ErrorInfo, plus a BadRequest
        naming the field when the error is about one."""
        info: dict[str, Any] = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason,
            "domain": ERROR_DOMAIN,
        }
        if self.metadata:
            info["metadata"] = self.metadata
        out = [info]
        if self.field is not None:
            out.append(
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": self.field, "description": self.message}],
                }
            )
        return out


class JSONParseError(A2AError):
    """The body is not valid JSON."""

    code, reason, http_status = -32700, "PARSE_ERROR", 400


class InvalidRequestError(A2AError):
    """The body is JSON but not a JSON-RPC 2.0 request object."""

    code, reason, http_status = -32600, "INVALID_REQUEST", 400


class MethodNotFoundError(A2AError):
    """The method exists in no protocol version a2ad serves."""

    code, reason, http_status = -32601, "METHOD_NOT_FOUND", 404


class InvalidParamsError(A2AError):
    """The params fail validation; the message names the field."""

    code, reason, http_status = -32602, "INVALID_PARAMS", 400


class PermissionDeniedError(InvalidRequestError):
    """The caller may not use what the request names (a tenant not its own):
    -32600 (JSON-RPC has no code of its own for it), HTTP 403. Never for a
    task: another caller's task is "not found", as a missing one is."""

    reason, http_status = "PERMISSION_DENIED", 403


class InternalError(A2AError):
    """Something failed on our side; details are in the server log, not here."""

    code, reason, http_status = -32603, "INTERNAL_ERROR", 500


class TaskStoreUnavailableError(InternalError):
    """The server can't reach its task store now (a database restarting, a
    connection cut): a passing fault, the request may be sent again. HTTP 503."""

    reason, http_status = "TASK_STORE_UNAVAILABLE", 503


class ServerBusyError(A2AError):
    """The task store is full and holds only work in flight; nothing can be evicted."""

    code, reason, http_status = -32000, "SERVER_BUSY", 503


class StreamFellBehindError(ServerBusyError):
    """A stream's reader fell so far behind that the server stopped holding
    events for it; resubscribe with ``Last-Event-ID: last_event_id``."""

    reason = "STREAM_READER_FELL_BEHIND"

    @property
    def last_event_id(self) -> int | None:
        """The id of the last event the stream carried (``metadata["lastEventId"]``)."""
        text = self.metadata.get("lastEventId", "")
        return int(text) if text.isdigit() else None


class QuotaExceededError(ServerBusyError):
    """The caller has spent a quota (tasks in flight, open streams) or is over
    the rate limit: HTTP 429, on JSON-RPC too. ``metadata["quota"]`` names it;
    ``retry_after`` (whole seconds), when set, is sent as ``Retry-After``."""

    reason, http_status = "QUOTA_EXCEEDED", 429
    retry_after: int | None = None


class NoWorkerError(ServerBusyError):
    """A blocking send to a front (``a2ad serve --no-run``) stopped waiting: its
    task is queued, and no ``a2ad worker`` running its agent has been alive for
    a while. The task stays queued and runs once one connects;
    ``metadata["taskId"]`` names it, ``metadata["agent"]`` its agent."""

    reason = "NO_WORKER"


class TaskNotFoundError(A2AError):
    """No such task visible to the caller."""

    code, reason, http_status = -32001, "TASK_NOT_FOUND", 404


class TaskNotCancelableError(A2AError):
    """The task is already in a terminal state."""

    code, reason, http_status = -32002, "TASK_NOT_CANCELABLE", 400


class PushNotificationNotSupportedError(A2AError):
    code, reason, http_status = -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", 400


class UnsupportedOperationError(A2AError):
    """The operation is not possible on this task or server."""

    code, reason, http_status = -32004, "UNSUPPORTED_OPERATION", 400


class ContentTypeNotSupportedError(A2AError):
    code, reason, http_status = -32005, "CONTENT_TYPE_NOT_SUPPORTED", 400


class InvalidAgentResponseError(A2AError):
    code, reason, http_status = -32006, "INVALID_AGENT_RESPONSE", 500


class ExtendedAgentCardNotConfiguredError(A2AError):
    code, reason, http_status = -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400


class ExtensionSupportRequiredError(A2AError):
    code, reason, http_status = -32008, "EXTENSION_SUPPORT_REQUIRED", 400


class VersionNotSupportedError(A2AError):
    """The requested A2A-Version is not served, or the method belongs to another one."""

    code, reason, http_status = -32009, "VERSION_NOT_SUPPORTED", 400


class UnauthenticatedError(A2AError):
    """The request has no credential, or one that proves nothing. A2A names no
    JSON-RPC code for it; -31401 is a2a-go's (outside JSON-RPC's reserved
    -32768..-32000, so no future A2A code can take it): docs/protocol.md."""

    code, reason, http_status = -31401, "UNAUTHENTICATED", 401


def _registry() -> dict[int, type[A2AError]]:
    table: dict[int, type[A2AError]] = {}
    for cls in A2AError.__subclasses__():
        if cls.code in table:
            raise RuntimeError(f"error code {cls.code} registered twice")
        table[cls.code] = cls
    return table


ERRORS_BY_CODE = _registry()


def _by_reason() -> dict[str, type[A2AError]]:
    table: dict[str, type[A2AError]] = {}
    pending = list(A2AError.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.reason in table:
            raise RuntimeError(f"error reason {cls.reason} registered twice")
        table[cls.reason] = cls
        pending.extend(cls.__subclasses__())
    return table


ERRORS_BY_REASON = _by_reason()
