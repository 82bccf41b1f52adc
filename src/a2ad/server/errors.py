"""How the server answers an error, whichever binding or endpoint meets it.

``internal_error`` turns the exception being handled, which is no A2AError,
into one a caller may see: a store outage as TaskStoreUnavailableError
(``store_unavailable``, also what a stream cut short says), anything else as an
InternalError naming an incident id under which the traceback is logged.
``error_body`` is the HTTP+JSON form of an A2AError (a google.rpc.Status), which
the REST binding and a2ad's own endpoints (card, dashboard reads, gate) answer
with; ``respond_read`` answers one of a2ad's reads with its JSON or that error.
The JSON-RPC binding puts the same A2AErrors in its error object (bindings/jsonrpc.py).
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Awaitable
from typing import Any

import msgspec

from ..protocol.errors import A2AError, InternalError, TaskStoreUnavailableError
from ..protocol.rpc_status import rpc_status
from ..store.base import StoreUnavailableError
from .types import Send, respond

__all__ = ["error_body", "internal_error", "respond_read", "store_unavailable"]

log = logging.getLogger("a2ad.server")

_encode = msgspec.json.Encoder().encode


def error_body(error: A2AError, status: int | None = None, *, v03: bool = False) -> bytes:
    """A google.rpc.Status JSON body (AIP-193) for ``error``. For 0.3 paths also
    ``type`` (the error's name in the spec) and ``message`` beside it: 0.3 named
    no error format, and that is the one 0.3 clients (the Python SDK's) read."""
    code = status if status is not None else error.http_status
    name = rpc_status(error, code)
    body: dict[str, Any] = {
        "error": {
            "code": code,
            "status": name,
            "message": error.message,
            "details": error.details(),
        }
    }
    if v03:
        body["type"] = type(error).__name__
        body["message"] = error.message
    return _encode(body)


async def respond_read(
    send: Send, read: Awaitable[bytes], *, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer 200 with the JSON body ``read`` makes; an A2AError it raises as its
    HTTP+JSON error, anything else as ``internal_error`` says (503 for a store
    outage, else 500 naming an incident: never a traceback). For a2ad's own
    reads beside A2A's (the dashboard's timeline and activity)."""
    try:
        body = await read
    except A2AError as exc:
        await respond(send, exc.http_status, error_body(exc))
        return
    except Exception:
        failed = internal_error()
        await respond(send, failed.http_status, error_body(failed))
        return
    await respond(send, 200, body, headers=headers)


def internal_error() -> InternalError:
    """The answer to the exception being handled, which is no A2AError: for a
    store outage (which the store logs, once), TaskStoreUnavailableError;
    for anything else, an error naming a new incident id under which the
    exception is logged. The caller never gets the traceback."""
    failed = sys.exc_info()[1]
    if isinstance(failed, StoreUnavailableError):
        return store_unavailable(failed)
    incident = uuid.uuid4().hex[:12]
    log.exception("request failed", extra={"incident": incident})
    return InternalError(f"Internal error (incident {incident}); the server log has the details")


def store_unavailable(
    failed: StoreUnavailableError, *, last_event_id: int | None = None
) -> TaskStoreUnavailableError:
    """What a caller is told of a store outage, naming the task where there is
    one; with ``last_event_id``, for a stream it cut short after that event."""
    task_id = failed.task_id
    log.debug(
        "request answered: task store unavailable", extra={"task_id": task_id, "error": str(failed)}
    )
    metadata = {"taskId": task_id} if task_id else {}
    about = f"Task {task_id}: the" if task_id else "The"
    if last_event_id is None:
        return TaskStoreUnavailableError(
            f"{about} task store is unavailable right now; retry shortly", metadata=metadata
        )
    metadata["lastEventId"] = str(last_event_id)
    return TaskStoreUnavailableError(
        f"{about} task store became unavailable, so the server ended this stream; the task "
        "goes on: resubscribe (SubscribeToTask, or tasks/resubscribe in 0.3) shortly with the "
        f"header Last-Event-ID: {last_event_id} to get the events after the last one it carried",
        metadata=metadata,
    )
