"""The PostgreSQL store's listing (one statement: the total and the page from
one snapshot in one round trip) and its usage totals; their SQL is sql.py's,
but for the count rows this store keeps (postgres_schema.py)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ..protocol.types import Cursor
from ..protocol.usage import UsageRow
from . import sql
from .postgres_tasks import page_tasks
from .records import ListPage, ListQuery, UsageQuery
from .snapshot_cache import SnapshotCache

__all__ = ["COUNT_ALL", "list_page", "usage_totals"]

Connection = Any  # asyncpg.Connection; asyncpg ships no type hints

COUNT_ALL = "SELECT coalesce(sum(n), 0)::bigint FROM task_count"


@cache
def _list_sql(given: tuple[str, ...], cursor: bool) -> tuple[str, list[str]]:
    """The statement that lists with the filters ``given`` (sql.list_given),
    and its parameters' names: the filters', then the cursor's, then ``limit``.

    One statement, so the total and the page come from one snapshot in one
    round trip, with no transaction around them. Each row is (total, status
    timestamp, id, seq, head), newest first; an empty page is one row of the total
    and NULLs. The total is an exact count only where no count rows answer it:
    with a time, deadline or context-and-state filter."""
    terms, _ = sql.list_terms(given)
    if set(given) & {"after", "before", "overdue"} or {"context", "state"} <= set(given):
        count = f"SELECT count(*) FROM tasks{sql.where(terms)}"
    elif "context" in given:  # and the owner: the context's count rows have those columns
        count = f"SELECT coalesce(sum(n), 0)::bigint FROM context_count{sql.where(terms)}"
    elif terms:  # owner and state: the count rows have those columns
        count = f"SELECT coalesce(sum(n), 0)::bigint FROM owner_count{sql.where(terms)}"
    else:
        count = COUNT_ALL
    page, names = sql.list_page(given, cursor, "status_ts, id, seq, body, split")
    statement = f"""SELECT total.n, page.status_ts, page.id, page.seq, page.body, page.split
        FROM ({count}) AS total (n)
        LEFT JOIN LATERAL ({page}) AS page ON true
        ORDER BY page.status_ts DESC, page.id DESC"""
    return statement, names


async def list_page(conn: Connection, snapshots: SnapshotCache, query: ListQuery) -> ListPage:
    statement, names = _list_sql(sql.list_given(query), query.cursor is not None)
    values = sql.list_values(query)
    rows = await conn.fetch(statement, *[values[name] for name in names])
    total = rows[0][0]
    if rows[0][2] is None:  # no task on this page
        rows = []
    tasks = await page_tasks(conn, snapshots, [row[2:] for row in rows[: query.page_size]])
    next_cursor: Cursor | None = None
    if len(rows) > query.page_size:
        last = rows[query.page_size - 1]
        next_cursor = (last[1], last[2])
    return ListPage(tasks, next_cursor, int(total))


# --- writes ---


async def usage_totals(conn: Connection, query: UsageQuery) -> list[UsageRow]:
    statement, params = sql.usage_sql(query, "tenant = ANY($3::text[])", "sum({})::bigint")
    return sql.usage_totals(query, await conn.fetch(statement, *params))
