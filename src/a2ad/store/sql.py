"""The SQL both SQL stores run, written once: the statements in PostgreSQL's
placeholder style (``$1``), which ``qmark`` turns into SQLite's (``?1``), and
what a write runs as a list of ``Step``s, so that SQLite runs them on its
worker thread and PostgreSQL awaits them, each keeping only its I/O.

What differs stays in each store: PostgreSQL's row locks, claims and message
keys taken under the task's lock, SQLite's triggers that keep counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, NamedTuple

from ..protocol.model import Task, TaskEvent
from ..protocol.usage import UsageRecord, UsageRow
from .plan import AppendPlan, LogRow, usage_rows
from .records import Delivery, ListQuery, LoggedEvent, UsageQuery, Webhook, WebhookKey, WebhookState
from .rows import TASK, decode_config, decode_event, decode_task, encode
from .task_rows import TaskRows

__all__ = [
    "DELIVERY_STATEMENTS",
    "INSERT_DELIVERY",
    "SELECT_EVENTS",
    "Step",
    "append_steps",
    "delivery",
    "first_delivery",
    "list_given",
    "list_page",
    "list_terms",
    "list_values",
    "log_steps",
    "logged",
    "qmark",
    "row_steps",
    "select_webhook",
    "select_webhooks",
    "task_webhooks",
    "update_sql",
    "usage_sql",
    "usage_steps",
    "usage_totals",
    "webhook_params",
    "webhook_state",
    "where",
]


class Step(NamedTuple):
    """One statement of a write: run once with ``params``, or with ``many``
    once per row of ``params``."""

    sql: str
    params: Sequence[Any]
    many: bool = False


@cache
def qmark(sql: str) -> str:
    """``sql`` with SQLite's numbered placeholders (``?1``) for PostgreSQL's
    (``$1``); the same text each time, for sqlite3's statement cache."""
    return re.sub(r"\$(\d+)", r"?\1", sql)


# --- a task's rows, its event log, usage totals ---

INSERT_MESSAGE = "INSERT INTO task_messages (task_id, pos, body) VALUES ($1, $2, $3)"
DROP_MESSAGES = "DELETE FROM task_messages WHERE task_id = $1 AND pos < $2"
PUT_ARTIFACT = """INSERT INTO task_artifacts (task_id, pos, body) VALUES ($1, $2, $3)
    ON CONFLICT (task_id, pos) DO UPDATE SET body = excluded.body"""
INSERT_EVENT = "INSERT INTO events (task_id, seq, kind, body) VALUES ($1, $2, $3, $4)"
TRIM_EVENTS = "DELETE FROM events WHERE task_id = $1 AND seq <= $2"
SELECT_EVENTS = "SELECT seq, kind, body FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq"
INSERT_DELIVERY = """INSERT INTO deliveries (task_id, webhook_id, seq, kind, body, snapshot)
    VALUES ($1, $2, $3, $4, $5, $6)"""
MARK_DUE = "UPDATE webhooks SET due_at = 0 WHERE task_id = $1 AND due_at IS NULL"
ADD_USAGE = """INSERT INTO usage_totals (day, tenant, principal, agent, model, prompt_tokens,
        completion_tokens, total_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (day, tenant, principal, agent, model) DO UPDATE SET
        prompt_tokens = usage_totals.prompt_tokens + excluded.prompt_tokens,
        completion_tokens = usage_totals.completion_tokens + excluded.completion_tokens,
        total_tokens = usage_totals.total_tokens + excluded.total_tokens"""


def row_steps(task_id: str, rows: TaskRows) -> list[Step]:
    """The message and artifact rows of ``rows`` (the head is the caller's)."""
    steps = []
    if rows.drop_below is not None:
        steps.append(Step(DROP_MESSAGES, (task_id, rows.drop_below)))
    if rows.messages:
        steps.append(Step(INSERT_MESSAGE, [(task_id, p, b) for p, b in rows.messages], True))
    if rows.artifacts:
        steps.append(Step(PUT_ARTIFACT, [(task_id, p, b) for p, b in rows.artifacts], True))
    return steps


def log_steps(rows: Sequence[LogRow]) -> list[Step]:
    """Insert the event-log ``rows`` a plan lists (plan.py)."""
    return [Step(INSERT_EVENT, rows, True)] if rows else []


def usage_steps(
    tenant: str, principal: str, agent: str, usage: Sequence[UsageRecord]
) -> list[Step]:
    """Add ``usage`` to the totals of ``tenant``, ``principal`` and ``agent``."""
    return [Step(ADD_USAGE, usage_rows(tenant, principal, agent, usage), True)] if usage else []


@cache
def update_sql(columns: tuple[str, ...]) -> str:
    """The UPDATE of a task row setting ``columns``; one text per combination,
    so that each store's statement cache keeps each prepared."""
    sets = ", ".join(f"{column} = ${i}" for i, column in enumerate(columns, 1))
    return f"UPDATE tasks SET {sets} WHERE id = ${len(columns) + 1}"


def append_steps(task_id: str, whose: Sequence[str], plan: AppendPlan) -> list[Step]:
    """What an append writes once its plan is made (plan.py), in order: the
    usage totals (of ``whose``, the task's row's tenant, principal and agent),
    the task's rows, the changed columns, the event log, the deliveries (then
    the task's webhooks are due), the log's trim."""
    tenant, principal, agent = whose
    steps = usage_steps(tenant, principal, agent, plan.usage)
    steps += row_steps(task_id, plan.rows)
    steps.append(Step(update_sql(tuple(plan.changes)), (*plan.changes.values(), task_id)))
    steps += log_steps(plan.log)
    if plan.deliveries:
        steps.append(Step(INSERT_DELIVERY, plan.deliveries, True))
        steps.append(Step(MARK_DUE, (task_id,)))
    if plan.trim_to is not None:
        steps.append(Step(TRIM_EVENTS, (task_id, plan.trim_to)))
    return steps


def logged(rows: Sequence[Sequence[Any]]) -> list[LoggedEvent]:
    """The logged events of ``SELECT_EVENTS``'s rows."""
    return [LoggedEvent(seq, decode_event[kind](body)) for seq, kind, body in rows]


# --- webhooks and their deliveries ---

_PENDING = "(SELECT count(*) FROM deliveries d WHERE d.task_id = w.task_id AND d.webhook_id = w.id)"
_WEBHOOK_COLUMNS = f"version, snapshot, body, {_PENDING}, delivered, dead_lettered, last_error"


def task_webhooks(order: str) -> str:
    """The (id, wants snapshots) of a task's webhooks, ``order``'d."""
    return f"SELECT id, snapshot FROM webhooks WHERE task_id = $1 ORDER BY {order}"


def select_webhook() -> str:
    """One webhook's ``webhook_state`` row."""
    return f"SELECT {_WEBHOOK_COLUMNS} FROM webhooks w WHERE task_id = $1 AND id = $2"


def select_webhooks(order: str) -> str:
    """A task's webhooks' ``webhook_state`` rows, ``order``'d (oldest first)."""
    return f"SELECT {_WEBHOOK_COLUMNS} FROM webhooks w WHERE task_id = $1 ORDER BY {order}"


# After a delivery leaves (delivered, or dead-lettered): count it; the next is
# due at once, or nothing is pending.
_LEFT = """UPDATE webhooks SET {counter} = {counter} + 1,
    last_error = coalesce(CAST($3 AS TEXT), last_error),
    due_at = CASE WHEN EXISTS (SELECT 1 FROM deliveries WHERE task_id = $1 AND webhook_id = $2)
        THEN 0 ELSE NULL END
    WHERE task_id = $1 AND id = $2"""


class _Outbox(NamedTuple):
    """The statements of the outbox that both stores run as they are."""

    due: str = """SELECT task_id, id FROM webhooks WHERE due_at <= $1
        ORDER BY due_at LIMIT $2"""
    # Renew (or give up, NULL) a claim that is still the claimant's.
    set_claim: str = """UPDATE webhooks SET claimed_until = $3
        WHERE task_id = $1 AND id = $2 AND claimed_by = $4"""
    deliveries: str = """SELECT id, seq, kind, body, snapshot, attempts FROM deliveries
        WHERE task_id = $1 AND webhook_id = $2 ORDER BY id LIMIT $3"""
    delivered: str = _LEFT.format(counter="delivered")
    dead_lettered: str = _LEFT.format(counter="dead_lettered")
    retry: str = "UPDATE webhooks SET last_error = $3, due_at = $4 WHERE task_id = $1 AND id = $2"
    count_attempt: str = "UPDATE deliveries SET attempts = attempts + 1 WHERE id = $1"
    delete_delivery: str = "DELETE FROM deliveries WHERE id = $1"
    delete_webhook: str = "DELETE FROM webhooks WHERE task_id = $1 AND id = $2"
    task_exists: str = "SELECT 1 FROM tasks WHERE id = $1"
    webhook_exists: str = "SELECT 1 FROM webhooks WHERE task_id = $1 AND id = $2"
    update_webhook: str = """UPDATE webhooks SET version = $1, snapshot = $2, body = $3
        WHERE task_id = $4 AND id = $5"""
    insert_webhook: str = """INSERT INTO webhooks (task_id, id, version, snapshot, body, due_at)
        VALUES ($1, $2, $3, $4, $5, 0)"""


DELIVERY_STATEMENTS = _Outbox()


def webhook_state(row: Sequence[Any]) -> WebhookState:
    """The webhook of a ``select_webhook`` row, and how its deliveries went."""
    version, snapshot, body, pending, delivered, dead_lettered, last_error = row
    webhook = Webhook(decode_config(body), version, bool(snapshot))
    return WebhookState(webhook, pending, delivered, dead_lettered, last_error)


def delivery(key: WebhookKey, row: Sequence[Any]) -> Delivery:
    """The delivery of a ``deliveries`` row of the webhook ``key``."""
    delivery_id, seq, kind, body, snapshot, attempts = row
    item: Task | TaskEvent = decode_task(body) if kind == TASK else decode_event[kind](body)
    return Delivery(
        delivery_id,
        key,
        seq,
        item,
        decode_task(snapshot) if snapshot is not None else None,
        attempts,
    )


def webhook_params(webhook: Webhook) -> tuple[str, str, str, bool, bytes]:
    """``insert_webhook``'s parameters: key, version, snapshot, config."""
    config = webhook.config
    return (config.task_id, config.id, webhook.version, webhook.snapshot, encode(config))


def first_delivery(webhook: Webhook, seq: int, task: Task) -> Step:
    """A new webhook's first delivery: the task as it stands, at ``seq``."""
    body = encode(task)
    config = webhook.config
    snapshot = body if webhook.snapshot else None
    return Step(INSERT_DELIVERY, (config.task_id, config.id, seq, TASK, body, snapshot))


# --- listing ---

_FILTERS = (
    ("tenant", "tenant = ${}"),
    ("principal", "principal = ${}"),
    ("agent", "agent = ${}"),
    ("context", "context_id = ${}"),
    ("state", "state = ${}"),
    ("after", "status_ts >= ${}"),
    ("before", "status_ts < ${}"),
    ("overdue", "deadline < ${}"),
)


def list_terms(given: Sequence[str]) -> tuple[list[str], list[str]]:
    """The WHERE terms of a listing filtered by the names ``given`` (of
    ``list_given``), and their parameters' names, in the same order."""
    terms: list[str] = []
    names: list[str] = []
    for name, term in _FILTERS:
        if name in given:
            names.append(name)
            terms.append(term.format(len(names)))
    return terms, names


def list_given(query: ListQuery) -> tuple[str, ...]:
    """The names of the filters ``query`` sets, in ``list_terms``' order."""
    return tuple(
        name
        for name, set_ in (
            ("tenant", query.tenant is not None),
            ("principal", query.principal is not None),
            ("agent", query.agent is not None),
            ("context", bool(query.context_id)),
            ("state", query.state is not None),
            ("after", bool(query.updated_after)),
            ("before", bool(query.updated_before)),
            ("overdue", bool(query.overdue_at)),
        )
        if set_
    )


def list_values(query: ListQuery) -> dict[str, Any]:
    """A ``ListQuery``'s parameters by the names ``list_terms`` and
    ``list_page`` give."""
    values: dict[str, Any] = {
        "tenant": query.tenant,
        "principal": query.principal,
        "agent": query.agent,
        "context": query.context_id,
        "state": query.state.value if query.state is not None else None,
        "after": query.updated_after,
        "before": query.updated_before,
        "overdue": query.overdue_at,
        "limit": query.page_size + 1,
    }
    if query.cursor is not None:
        values["cursor_ts"], values["cursor_id"] = query.cursor
    return values


def where(terms: Sequence[str]) -> str:
    """`` WHERE a AND b ...`` of ``terms`` ("" for none)."""
    return "".join(f" {'WHERE' if i == 0 else 'AND'} {term}" for i, term in enumerate(terms))


def list_page(given: tuple[str, ...], cursor: bool, select: str) -> tuple[str, list[str]]:
    """The page of a listing filtered by ``given`` (after the cursor's key,
    with ``cursor``), newest first: ``select``'s columns of ``tasks``, and its
    parameters' names (of ``list_values``), ``limit`` last."""
    terms, names = list_terms(given)
    if cursor:
        names += ["cursor_ts", "cursor_id"]
        terms.append(f"(status_ts, id) < (${len(names) - 1}, ${len(names)})")
    names.append("limit")
    page = f"""SELECT {select} FROM tasks{where(terms)}
        ORDER BY status_ts DESC, id DESC LIMIT ${len(names)}"""
    return page, names


# --- usage totals ---


def usage_sql(query: UsageQuery, tenants: str, total: str = "sum({})") -> tuple[str, list[Any]]:
    """The statement of ``usage_totals``, and its parameters: ``tenants`` is
    the store's term for a tenant among ``$3`` (only with ``query.tenants``;
    ``query.agent``'s parameter comes after it), ``total`` its sum of a column."""
    groups = ", ".join(query.group_by)  # names from GROUPS only: safe to splice
    terms = ["day BETWEEN $1 AND $2"]
    params: list[Any] = [query.from_day, query.to_day]
    if query.tenants is not None:
        terms.append(tenants)
        params.append(list(query.tenants))
    if query.agent is not None:
        params.append(query.agent)
        terms.append(f"agent = ${len(params)}")
    sums = ", ".join(
        total.format(c) for c in ("prompt_tokens", "completion_tokens", "total_tokens")
    )
    sql = f"SELECT {groups + ', ' if groups else ''}{sums} FROM usage_totals{where(terms)}"
    if groups:
        sql += f" GROUP BY {groups} ORDER BY {groups}"
    return sql, params


def usage_totals(query: UsageQuery, rows: Iterable[Sequence[Any]]) -> list[UsageRow]:
    """``usage_totals``' rows of ``usage_sql``'s."""
    totals = []
    for row in rows:
        *values, prompt, completion, total = row
        if prompt is None:  # no group: the sum over no rows
            continue
        totals.append(
            UsageRow(
                **dict(zip(query.group_by, values, strict=True)),
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
            )
        )
    return totals
