"""Token usage: what an agent reports a turn used, and how a2ad writes it down.

An agent reports counts per model (``TaskContext.usage``); each report becomes a
``UsageRecord`` stamped with its UTC day. A task keeps the sum of its records in
its metadata, under a2ad's own key, in one shape (docs/agents.md, "Token usage")::

    "a2ad": {"usage": {"promptTokens": 30, "completionTokens": 12, "totalTokens": 42,
                       "byModel": {"gpt-4o-mini": {"promptTokens": 30, ...}}}}

and a store that keeps totals (``store.base.Usage``) adds each record to the
totals of its (tenant, principal, agent, day, model): the agent is the task's
(the served agent's name, "" for a server of one unnamed agent). The
operator-only report (``a2ad/GetUsage``, ``GET /a2ad/usage``) sums those:
docs/protocol.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import msgspec

__all__ = [
    "GROUPS",
    "METADATA_KEY",
    "USAGE_METHOD",
    "USAGE_PATH",
    "Group",
    "TokenCounts",
    "UsageRecord",
    "UsageReport",
    "UsageRow",
    "is_day",
    "with_usage",
]

METADATA_KEY = "usage"  # where a task's metadata["a2ad"] holds its usage
USAGE_METHOD = "a2ad/GetUsage"  # the report: JSON-RPC method (a2ad's, not A2A's)
USAGE_PATH = "/a2ad/usage"  # and HTTP path (GET)

Group = Literal["tenant", "principal", "agent", "day", "model"]
GROUPS: tuple[Group, ...] = ("tenant", "principal", "agent", "day", "model")

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def is_day(text: str) -> bool:
    """Whether ``text`` is a day as usage names them: ``YYYY-MM-DD``."""
    return _DAY.fullmatch(text) is not None


class TokenCounts(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class UsageRecord(NamedTuple):
    """One report of an agent: ``counts`` of ``model`` ("" when unnamed) on
    ``day`` (UTC, ``YYYY-MM-DD``)."""

    day: str
    model: str
    counts: TokenCounts


class UsageRow(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The totals of one group: the grouped-by fields are set, the others empty."""

    tenant: str | None = None
    principal: str | None = None
    agent: str | None = None
    day: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @property
    def counts(self) -> TokenCounts:
        return TokenCounts(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            total_tokens=self.total_tokens,
        )


class UsageReport(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The answer of ``a2ad/GetUsage``: the totals from ``from_day`` to ``to_day``
    (both included) of ``tenants`` (None: every tenant) and ``agent`` (None:
    every agent), one row per group of ``group_by``, and ``total`` over all rows."""

    from_day: str = msgspec.field(name="from")
    to_day: str = msgspec.field(name="to")
    tenants: list[str] | None
    agent: str | None = None
    group_by: list[Group]
    rows: list[UsageRow]
    total: TokenCounts


def with_usage(metadata: object, records: Sequence[UsageRecord]) -> dict[str, Any]:
    """A task's ``metadata`` (a dict, or UNSET or None for none) as a new dict,
    with ``records`` added to its usage."""
    merged = dict(metadata) if isinstance(metadata, dict) else {}
    ours = merged.get("a2ad")
    ours = dict(ours) if isinstance(ours, dict) else {}
    old = ours.get(METADATA_KEY)
    total = _counts(old)
    by_model = {
        name: _counts(value)
        for name, value in (old.get("byModel", {}) if isinstance(old, dict) else {}).items()
    }
    for record in records:
        total += record.counts
        by_model[record.model] = by_model.get(record.model, TokenCounts()) + record.counts
    usage = msgspec.to_builtins(total)
    usage["byModel"] = {name: msgspec.to_builtins(counts) for name, counts in by_model.items()}
    ours[METADATA_KEY] = usage
    merged["a2ad"] = ours
    return merged


def _counts(value: Any) -> TokenCounts:
    if not isinstance(value, dict):
        return TokenCounts()

    def number(name: str) -> int:
        found = value.get(name, 0)
        return found if isinstance(found, int) else 0

    return TokenCounts(
        prompt_tokens=number("promptTokens"),
        completion_tokens=number("completionTokens"),
        total_tokens=number("totalTokens"),
    )
