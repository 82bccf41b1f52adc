"""Delegation tokens at the door, and what a delegated request records.

With auth on, the app wraps its Authenticator in a ``DelegatingAuthenticator``:
a bearer token of engine/delegation.py's form, which only this server (or one
holding its secret key) issued to one of its agents' turns, proves the owner
of that turn's task, in that task's tenant only and without roles; any other
credential goes to the operator's authenticator as before. A message sent so
records the task it came from in ``metadata.a2ad.via`` (``taskId``,
``agent``); a message of anyone else has that key taken out, so that what it
says can be trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET

from ..agent import Caller, Via
from ..engine.delegation import PREFIX, Delegations, InvalidDelegation
from ..protocol.card import SecurityScheme
from ..protocol.model import SendMessageRequest
from .auth import AuthenticationFailed, Authenticator
from .request import Inbound

__all__ = ["DelegatingAuthenticator", "with_via"]

VIA_KEY = "via"  # beneath the message metadata's "a2ad"
_BEARER = "bearer " + PREFIX


class DelegatingAuthenticator:
    """``inner``, and the delegation tokens of ``delegations``."""

    def __init__(self, inner: Authenticator, delegations: Delegations) -> None:
        self.inner = inner
        self.delegations = delegations
        self.schemes: Mapping[str, SecurityScheme] = inner.schemes

    async def authenticate(self, request: Inbound) -> Caller:
        authorization = request.headers.first(b"authorization").strip()
        if authorization[: len(_BEARER)].lower() != _BEARER:
            return await self.inner.authenticate(request)
        token = authorization[len("bearer ") :].strip()
        try:
            said = self.delegations.verify(token)
        except InvalidDelegation as exc:
            raise AuthenticationFailed(
                "The delegation token is not valid (expired, or not issued by this server); "
                "the agent should ask its task context for a new one",
                reason=exc.reason,
                given=True,
            ) from None
        return Caller(
            principal=said.principal,
            tenants=(said.tenant,),
            authenticated=True,
            via=Via(task_id=said.task_id, agent=said.agent),
        )


def with_via(request: SendMessageRequest, caller: Caller) -> SendMessageRequest:
    """``request`` with its message's ``metadata.a2ad.via`` saying the task the
    caller's delegation came from; or without one, for any other caller."""
    metadata = request.message.metadata
    ours = metadata.get("a2ad") if metadata is not UNSET else None
    if caller.via is None and not (isinstance(ours, dict) and VIA_KEY in ours):
        return request  # the common case: nothing to add or take out
    kept: dict[str, Any] = dict(metadata) if metadata is not UNSET else {}
    mine = dict(ours) if isinstance(ours, dict) else {}
    if caller.via is None:
        del mine[VIA_KEY]
    else:
        mine[VIA_KEY] = {"taskId": caller.via.task_id, "agent": caller.via.agent}
    if mine:
        kept["a2ad"] = mine
    else:
        kept.pop("a2ad", None)
    message = msgspec.structs.replace(request.message, metadata=kept or UNSET)
    return msgspec.structs.replace(request, message=message)
