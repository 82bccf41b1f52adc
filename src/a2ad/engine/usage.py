"""The token usage report: who may read the totals, and what a report holds.

Operators only: a caller with the ``operator`` role reads the totals of its
tenants (all of them, or the one it names); without auth, where every caller is
the anonymous one and may use any tenant, any caller reads any tenant's. Anyone
else is refused with PermissionDeniedError: the method is no secret, its data is.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from ..agent import Caller
from ..protocol.errors import (
    InvalidParamsError,
    PermissionDeniedError,
    UnsupportedOperationError,
)
from ..protocol.types import Clock, format_timestamp
from ..protocol.usage import GROUPS, Group, TokenCounts, UsageReport, is_day
from ..store.base import TaskStore, Usage, UsageQuery
from .access import access_for

__all__ = ["usage_report"]


async def usage_report(
    store: TaskStore,
    caller: Caller,
    *,
    clock: Clock,
    from_day: str = "",
    to_day: str = "",
    tenant: str | None = None,
    group_by: Sequence[str] = (),
    agent: str | None = None,
) -> UsageReport:
    """The totals from ``from_day`` to ``to_day`` (``YYYY-MM-DD``, both included;
    by default from the first of ``to_day``'s month, and today in UTC) of
    ``tenant`` (None: every tenant the caller may read) and of ``agent`` (None:
    every agent; "" the one unnamed agent), one row per group of ``group_by``
    (names among GROUPS: tenant, principal, agent, day, model). Raises
    PermissionDeniedError for a caller who is not an operator (with auth on) or
    a tenant not the caller's, InvalidParamsError naming the field that is
    wrong, UnsupportedOperationError when the store keeps no usage."""
    if caller.authenticated and not caller.operator:
        raise PermissionDeniedError(
            "token usage is for operators only; ask for a key with the operator role",
            metadata={"principal": caller.principal},
        )
    groups = _groups(group_by)
    to_day = _day("to", to_day or format_timestamp(clock())[:10])
    from_day = _day("from", from_day or to_day[:8] + "01")
    if from_day > to_day:
        raise InvalidParamsError(
            f"from ({from_day}) is after to ({to_day}); give an earlier from", field="from"
        )
    tenants: tuple[str, ...] | None
    if tenant is not None:
        tenants = (access_for(caller, tenant).tenant,)
    elif caller.authenticated:
        tenants = caller.tenants or ("",)
    else:
        tenants = None  # without auth: every tenant
    if not isinstance(store, Usage):
        raise UnsupportedOperationError(
            f"this server's task store ({type(store).__name__}) keeps no token usage"
        )
    rows = await store.usage_totals(UsageQuery(from_day, to_day, tenants, groups, agent))
    total = TokenCounts()
    for row in rows:
        total += row.counts
    return UsageReport(
        from_day=from_day,
        to_day=to_day,
        tenants=list(tenants) if tenants is not None else None,
        agent=agent,
        group_by=list(groups),
        rows=rows,
        total=total,
    )


def _groups(names: Sequence[str]) -> tuple[Group, ...]:
    groups: list[Group] = []
    for name in names:
        group = next((g for g in GROUPS if g == name), None)
        if group is None:
            raise InvalidParamsError(
                f"groupBy: {name!r} is not one of {', '.join(GROUPS)}", field="groupBy"
            )
        if group in groups:
            raise InvalidParamsError(f"groupBy names {name!r} twice", field="groupBy")
        groups.append(group)
    return tuple(groups)


def _day(name: str, text: str) -> str:
    """``text``, if it is a day as YYYY-MM-DD; else InvalidParamsError naming ``name``."""
    try:
        if is_day(text):
            datetime.date.fromisoformat(text)
            return text
    except ValueError:
        pass
    raise InvalidParamsError(f"{name} must be a day as YYYY-MM-DD, not {text!r}", field=name)
