"""What both SQL stores' upgrade to token totals per agent must keep (SQLite
schema 9, PostgreSQL 6): the totals written before it, as the unnamed agent's."""

from __future__ import annotations

from a2ad.protocol.usage import GROUPS, TokenCounts, UsageRecord, UsageRow
from a2ad.store.base import Usage, UsageQuery

# (day, tenant, principal, model, prompt, completion, total), as an older a2ad wrote them
OLD_ROWS = [
    ("2026-03-01", "a", "ann", "m1", 10, 1, 11),
    ("2026-03-01", "a", "bob", "m1", 20, 2, 22),
    ("2026-03-02", "b", "ann", "", 5, 0, 5),
]


async def check_old_usage_kept(store: Usage) -> None:
    """``store``, upgraded over OLD_ROWS, has them as the unnamed agent's; new
    usage of that agent adds to them, a named agent's has totals of its own."""
    every = UsageQuery("2026-03-01", "2026-03-02", group_by=GROUPS)
    assert [
        (r.tenant, r.principal, r.agent, r.day, r.model) for r in await store.usage_totals(every)
    ] == [
        ("a", "ann", "", "2026-03-01", "m1"),
        ("a", "bob", "", "2026-03-01", "m1"),
        ("b", "ann", "", "2026-03-02", ""),
    ]
    by_agent = UsageQuery("2026-03-01", "2026-03-02", group_by=("agent",))
    assert await store.usage_totals(by_agent) == [
        UsageRow(agent="", prompt_tokens=35, completion_tokens=3, total_tokens=38)
    ]
    spent = [UsageRecord("2026-03-01", "m1", TokenCounts(prompt_tokens=1, total_tokens=1))]
    await store.record_usage("a", "ann", spent)
    await store.record_usage("a", "ann", spent, agent="stock")
    ann = UsageQuery("2026-03-01", "2026-03-01", ("a",), ("principal", "agent"))
    assert [(r.principal, r.agent, r.prompt_tokens) for r in await store.usage_totals(ann)] == [
        ("ann", "", 11),
        ("ann", "stock", 1),
        ("bob", "", 20),
    ]
