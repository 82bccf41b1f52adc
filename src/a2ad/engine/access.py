"""Whose tasks a request may see and act on.

Every task belongs to the tenant and the principal that created it, and to the
agent it was sent to. A request acts in one tenant (the one it names, or its
caller's default), at one agent's endpoint, on its caller's own tasks there; an
operator acts on every task of the tenant at that agent. A task outside
that is answered exactly as a task that does not exist: the engine reads it
once, as it reads a missing one, and raises the same TaskNotFoundError.

Without auth every caller is the anonymous one, whose tasks are nobody's
(principal ""): all callers share them, as before auth existed, and a tenant
is a namespace any of them may use.
"""

from __future__ import annotations

import msgspec

from ..agent import ANONYMOUS, Caller
from ..protocol.errors import PermissionDeniedError
from ..store.base import StoredTask

__all__ = ["Access", "access_for"]


class Access(msgspec.Struct, frozen=True, gc=False):
    """The tasks of ``principal`` in ``tenant`` run by ``agent``; with
    ``operator``, every task of ``tenant`` that ``agent`` runs. (A Struct, made
    in C: every request makes one.)"""

    tenant: str = ""
    principal: str = ""
    operator: bool = False
    agent: str = ""

    def sees(self, stored: StoredTask) -> bool:
        return (
            stored.tenant == self.tenant
            and stored.agent == self.agent
            and (self.operator or stored.principal == self.principal)
        )

    @property
    def listed_principal(self) -> str | None:
        """The principal a listing is narrowed to (None: the whole tenant)."""
        return None if self.operator else self.principal


_NOBODY_AT: dict[str, Access] = {}  # the anonymous caller's access in the default tenant, by agent


def access_for(caller: Caller, tenant: str, agent: str = "") -> Access:
    """What ``caller`` may reach in the ``tenant`` its request names ("": its
    default tenant) at ``agent``'s endpoint. Raises PermissionDeniedError for a
    tenant not its own."""
    if caller is ANONYMOUS and not tenant:  # no auth, no tenant: the same every time
        found = _NOBODY_AT.get(agent)
        if found is None:
            found = _NOBODY_AT[agent] = Access(agent=agent)
        return found
    tenant = tenant or caller.default_tenant
    if not caller.may_use(tenant):
        yours = ", ".join(repr(t) for t in caller.tenants)
        how = (
            f"use one of {yours}, or leave the tenant out for your default"
            if yours
            else ("your credential names no tenant to use")
        )
        raise PermissionDeniedError(
            f"tenant {tenant[:256]!r} is not one of yours; {how}",
            field="tenant",
            metadata={"tenant": tenant[:256]},
        )
    return Access(tenant, caller.principal, caller.operator, agent)
