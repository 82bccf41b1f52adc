"""What the client raises: ``ClientError`` when the server is not reached or is
not A2A, and the A2A error classes (``RemoteError`` for codes a2ad does not
know) when the server answers an error."""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ERROR_DOMAIN, ERRORS_BY_CODE, ERRORS_BY_REASON, A2AError

__all__ = ["ClientError", "RemoteError", "error_from"]


class ClientError(Exception):
    """The server could not be reached, or did not answer as an A2A server does."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.message = message
        self.url = url


class RemoteError(A2AError):
    """An A2A error whose code a2ad does not know (another server's own)."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # per instance: the server's code


def error_from(payload: Any, url: str) -> A2AError:
    """The A2A error a JSON-RPC ``error`` member (decoded) stands for."""
    if not isinstance(payload, dict) or not isinstance(payload.get("code"), int):
        return RemoteError(f"{url} answered a malformed JSON-RPC error: {payload!r}", code=-32603)
    code, message = payload["code"], str(payload.get("message") or "(no message)")
    metadata: dict[str, str] = {}
    cls: type[A2AError] | None = None
    data = payload.get("data")
    for detail in data if isinstance(data, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("metadata"), dict):
            metadata.update({str(k): str(v) for k, v in detail["metadata"].items()})
        if isinstance(detail, dict) and detail.get("domain") == ERROR_DOMAIN:
            # The reason tells apart errors that share a code (a reader that fell
            # behind is -32000 like a busy server).
            by_reason = ERRORS_BY_REASON.get(str(detail.get("reason")))
            if by_reason is not None and by_reason.code == code:
                cls = by_reason
    cls = cls or ERRORS_BY_CODE.get(code)
    error = cls(message, metadata=metadata) if cls else RemoteError(message, code=code)
    error.data = payload.get("data")  # type: ignore[attr-defined]
    return error
