"""The door: a request's credential is checked here, before anything answers it.

``admit`` asks the app's Authenticator for the Caller of the request's headers
and peer (an ``Inbound``: authenticators read no ASGI scope) and leaves it in
the scope, or answers 401 itself (``refuse``) and says so. The app calls it for
every path but the public ones (the agent cards, the health probes, the
dashboard's static files), and before it looks up a named agent
(``/agents/<name>/``): an unknown name is answered 404 listing the server's
agents only to a caller who proved who it is; anyone else gets the 401 every
other path gives, and learns nothing of what the server serves.
"""

from __future__ import annotations

import logging

from ..agent import Caller
from ..protocol.errors import UnauthenticatedError
from ..protocol.jsonrpc import encode_error
from .auth import AuthenticationFailed, Authenticator
from .errors import error_body
from .observed import RECORD_KEY
from .request import Headers, Inbound, Peer
from .types import CALLER_KEY, Scope, Send, request_headers, respond

__all__ = ["JSONRPC_PATHS", "admit", "log_refused", "refuse"]

auth_log = logging.getLogger("a2ad.auth")

JSONRPC_PATHS = ("/", "/a2a")


async def admit(authenticator: Authenticator, path: str, scope: Scope, send: Send) -> Caller | None:
    """The request's Caller, also left in the scope (``CALLER_KEY``) and its
    record; or None once it was answered 401. ``path`` is the one its binding
    is told by (beneath ``/agents/<name>`` for a named agent's)."""
    record = scope[RECORD_KEY]
    try:
        inbound = Inbound(Headers(scope["headers"], request_headers(scope)), scope.get("client"))
        scope[CALLER_KEY] = caller = await authenticator.authenticate(inbound)
    except AuthenticationFailed as exc:
        record.code = UnauthenticatedError.code
        await refuse(exc, path, scope, send)
        return None
    record.principal = caller.principal
    return caller


def log_refused(exc: AuthenticationFailed, peer: Peer | None, method: str, path: str) -> None:
    """The audit line of a request whose credential proved nothing (never the
    credential): over HTTP, or a gRPC call (method POST, path its rpc's)."""
    auth_log.warning(
        "authentication failed: %s",
        exc.reason,
        extra={
            "event": "auth_failed",
            "reason": exc.reason,
            "principal": exc.principal,
            "remote": f"{peer[0]}:{peer[1]}" if peer else "",
            "method": method,
            "path": path[:200],
        },
    )


async def refuse(exc: AuthenticationFailed, path: str, scope: Scope, send: Send) -> None:
    """401 in the terms of the path's binding, and one audit line, which
    never holds the credential."""
    log_refused(exc, scope.get("client"), scope["method"], path)
    error = UnauthenticatedError(exc.message)
    headers = [(b"www-authenticate", exc.challenge.encode())]
    if path in JSONRPC_PATHS:
        body = encode_error(None, error)
    else:
        body = error_body(error, v03=path.startswith("/v1/"))
    await respond(send, 401, body, headers=headers)
