"""The audit trail: one structured log line (logger ``a2ad.audit``) for every
cancel and every refused request, naming who (principal, tenant), what (method,
task id) and why (the A2A reason and code). Authentication failures are logged
the same way by the app (logger ``a2ad.auth``, event ``auth_failed``).

A line never holds a credential nor the request's content: only names the
server already checked or chose (ids are cut to 256 characters, as the
protocol bounds them).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from ..agent import Caller, RequestContext
from ..protocol.errors import A2AError
from .request import Peer

__all__ = ["canceled", "refused", "task_id_in"]

log = logging.getLogger("a2ad.audit")

_ID_MAX = 256


def refused(
    caller: Caller,
    peer: Peer | None,
    error: A2AError,
    *,
    method: str,
    task_id: str = "",
    tenant: str = "",
) -> None:
    """A request of ``caller`` from ``peer`` (None: the transport does not say)
    answered with ``error``. The task is ``task_id``, else the one the error
    names (a NO_WORKER refusal's new task, which no request param named)."""
    task_id = task_id or error.metadata.get("taskId", "")
    log.info(
        "request refused: %s",
        error.reason,
        extra={
            "event": "refused",
            "principal": caller.principal,
            "tenant": (tenant or caller.default_tenant)[:_ID_MAX],
            "task_id": task_id[:_ID_MAX],
            "method": method[:_ID_MAX],
            "code": error.code,
            "reason": error.reason,
            "remote": f"{peer[0]}:{peer[1]}" if peer else "",
        },
    )


def canceled(context: RequestContext, task_id: str, tenant: str) -> None:
    """A CancelTask that canceled ``task_id``."""
    log.info(
        "task canceled",
        extra={
            "event": "canceled",
            "principal": context.caller.principal,
            "tenant": tenant,
            "task_id": task_id,
            "binding": context.binding,
        },
    )


def task_id_in(params: Any) -> tuple[str, str]:
    """(task id, tenant) named by request ``params`` (raw JSON or already
    decoded), as far as they can be read; ("", "") if not. Only on the error
    path: it decodes the params again."""
    if isinstance(params, (bytes, msgspec.Raw)):
        try:
            params = msgspec.json.decode(params)
        except (msgspec.DecodeError, RecursionError):
            return "", ""
    if not isinstance(params, dict):
        return "", ""
    task_id = params.get("id") or params.get("taskId")
    message = params.get("message")
    if not task_id and isinstance(message, dict):
        task_id = message.get("taskId")
    tenant = params.get("tenant")
    return (
        task_id if isinstance(task_id, str) else "",
        tenant if isinstance(tenant, str) else "",
    )
