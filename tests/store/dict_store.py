"""The smallest store: a dict per table, writing what the write plan says
(created.py for a create, plan.py for an append), as the SQL stores do. It is
the check of docs/architecture.md's "What a new store implements": it passes
the contract suite (test_store_contract.py) with the plan and nothing more,
each read a plain scan of its dicts. A store of one process, uncapped, with
TaskStore, Upkeep and Webhooks; without Usage or Turns, whose requests it
refuses (MissingCapabilityError, from base.py)."""

from __future__ import annotations

import builtins
import itertools
from dataclasses import dataclass
from typing import Any

from a2ad.protocol.model import Task, TaskState
from a2ad.protocol.types import IN_FLIGHT, Seq
from a2ad.store import sql
from a2ad.store.base import (
    MAX_WEBHOOKS,
    Delivery,
    ListPage,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    NewEvents,
    NewTask,
    StoredTask,
    TaskStore,
    Upkeep,
    Webhook,
    WebhookKey,
    WebhookLimitError,
    Webhooks,
    WebhookState,
)
from a2ad.store.created import plan_create
from a2ad.store.plan import Current, LogRow, check_sequence, plan_append

# The columns of a task's row, in the order of CreatePlan.row.
COLUMNS = (
    *("id", "context_id", "state", "status_ts", "seq", "evict_class", "evict_order"),
    *("lease_owner", "lease_expires", "deadline", "body", "message_key"),
    *("tenant", "principal", "agent", "split"),
)
_IN_FLIGHT = {state.value for state in IN_FLIGHT}


@dataclass
class _Hook:
    webhook: Webhook
    delivered: int = 0
    dead_lettered: int = 0
    last_error: str = ""
    due_at: float | None = None


class DictStore(TaskStore, Upkeep, Webhooks):
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}  # task id -> its row's columns
        self.tasks: dict[str, Task] = {}  # task id -> the task as its plan left it
        self.log: dict[str, builtins.list[LogRow]] = {}  # task id -> its logged events
        self.keys: dict[bytes, str] = {}  # message key -> task id
        self.hooks: dict[WebhookKey, _Hook] = {}
        self.outbox: dict[
            int, builtins.list[Any]
        ] = {}  # id -> key, seq, kind, body, snapshot, attempts
        self.ids = itertools.count(1)

    # --- TaskStore ---

    async def write_new(self, new: NewTask) -> StoredTask:
        if new.task.id in self.rows:
            raise ValueError(f"task {new.task.id} already exists")
        plan = plan_create(new)
        row = dict(zip(COLUMNS, plan.row, strict=True))
        self.rows[new.task.id], self.tasks[new.task.id] = row, plan.task
        self.log[new.task.id] = list(plan.log)
        if new.message_key is not None:
            self.keys.setdefault(new.message_key, new.task.id)
        return self._stored(new.task.id)

    async def write_events(self, new: NewEvents) -> StoredTask:
        task_id = new.task_id
        row = self.rows.get(task_id)
        if row is None:
            raise MissingTaskError(task_id)
        check_sequence(task_id, row["seq"], new.expected_seq)
        hooks = [(k[1], h.webhook.snapshot) for k, h in self.hooks.items() if k[0] == task_id]
        lease = (row["lease_owner"], row["lease_expires"])
        current = Current(row["seq"], row["state"], row["evict_class"], *lease, row["split"], hooks)
        plan = plan_append(current, self.tasks[task_id], 0, new)
        row.update(plan.changes)
        self.tasks[task_id] = plan.task
        self.log[task_id] += plan.log
        if plan.trim_to is not None:
            self.log[task_id] = [r for r in self.log[task_id] if r[1] > plan.trim_to]
        for _, webhook_id, seq, kind, body, snapshot in plan.deliveries:
            self._enqueue((task_id, webhook_id), seq, kind, body, snapshot)
        if new.message_key is not None:
            self.keys.setdefault(new.message_key, task_id)
        return self._stored(task_id)

    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        return self._stored(task_id) if task_id in self.rows else None

    async def events(self, task_id: str, after_seq: Seq) -> builtins.list[LoggedEvent]:
        rows = self.log.get(task_id, [])
        return sql.logged([row[1:] for row in rows if row[1] > after_seq])

    async def find_message(self, message_key: bytes) -> str | None:
        return self.keys.get(message_key)

    async def list(self, query: ListQuery) -> ListPage:
        rows = [row for row in self.rows.values() if _matches(row, query)]
        keys = sorted(((row["status_ts"], row["id"]) for row in rows), reverse=True)
        after = [key for key in keys if query.cursor is None or key < query.cursor]
        page = after[: query.page_size]
        more = len(after) > query.page_size
        return ListPage([self.tasks[i] for _, i in page], page[-1] if more else None, len(keys))

    async def aclose(self) -> None:
        pass

    def _stored(self, task_id: str) -> StoredTask:
        row = self.rows[task_id]
        return StoredTask(
            self.tasks[task_id], row["seq"], row["tenant"], row["principal"], row["agent"]
        )

    # --- Upkeep ---

    async def claim(self, owner: str) -> None:
        pass

    async def renew(self, owner: str, expires_at: float) -> None:
        for row in self.rows.values():
            if row["lease_owner"] == owner:
                row["lease_expires"] = expires_at

    async def orphans(self, now: float, limit: int) -> builtins.list[str]:
        return [
            task_id
            for task_id, row in self.rows.items()
            if row["state"] in _IN_FLIGHT
            and (row["lease_expires"] is None or row["lease_expires"] < now)
        ][:limit]

    async def overdue(self, now: str, limit: int) -> builtins.list[str]:
        due = sorted(
            (r["deadline"], i) for i, r in self.rows.items() if (r["deadline"] or now) < now
        )
        return [task_id for _, task_id in due[:limit]]

    async def delete_terminal(self, updated_before: str, limit: int) -> builtins.list[str]:
        old = sorted(
            (row["status_ts"], task_id)
            for task_id, row in self.rows.items()
            if TaskState(row["state"]).terminal and row["status_ts"] < updated_before
        )
        for _, task_id in old[:limit]:
            del self.rows[task_id], self.tasks[task_id], self.log[task_id]
            self.keys = {k: t for k, t in self.keys.items() if t != task_id}
            for key in [key for key in self.hooks if key[0] == task_id]:
                await self.delete_webhook(key)
        return [task_id for _, task_id in old[:limit]]

    # --- Webhooks ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        task_id, webhook_id = webhook.config.task_id, webhook.config.id
        if task_id not in self.rows:
            raise MissingTaskError(task_id)
        if (task_id, webhook_id) in self.hooks:
            self.hooks[task_id, webhook_id].webhook = webhook
            return False
        if sum(key[0] == task_id for key in self.hooks) >= MAX_WEBHOOKS:
            raise WebhookLimitError(f"task {task_id} has {MAX_WEBHOOKS} webhooks already")
        self.hooks[task_id, webhook_id] = _Hook(webhook)
        first = sql.first_delivery(webhook, self.rows[task_id]["seq"], self.tasks[task_id])
        self._enqueue((task_id, webhook_id), *first.params[2:])
        return True

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        hook = self.hooks.get(key)
        return None if hook is None else self._state(key, hook)

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        if task_id not in self.rows:
            return None
        return [self._state(key, hook) for key, hook in self.hooks.items() if key[0] == task_id]

    async def delete_webhook(self, key: WebhookKey) -> bool:
        self.outbox = {i: d for i, d in self.outbox.items() if d[0] != key}
        return self.hooks.pop(key, None) is not None

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        due = [(h.due_at, k) for k, h in self.hooks.items() if h.due_at is not None]
        return [key for at, key in sorted(due, key=lambda d: d[0]) if at <= now][:limit]

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        return [sql.delivery(key, (i, *d[1:])) for i, d in self.outbox.items() if d[0] == key][
            :limit
        ]

    async def delivered(self, delivery: Delivery) -> bool:
        return self._left(delivery, None)

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        if retry_at is None:
            return self._left(delivery, error)
        if delivery.id not in self.outbox:
            return False
        self.outbox[delivery.id][5] += 1
        hook = self.hooks[delivery.key]
        hook.last_error, hook.due_at = error, retry_at
        return True

    def _enqueue(self, key: WebhookKey, seq: int, kind: int, body: bytes, snapshot: Any) -> None:
        self.outbox[next(self.ids)] = [key, seq, kind, body, snapshot, 0]
        if self.hooks[key].due_at is None:
            self.hooks[key].due_at = 0.0

    def _left(self, delivery: Delivery, error: str | None) -> bool:
        """The delivery left the outbox: delivered, or (with ``error``) dead-lettered."""
        if self.outbox.pop(delivery.id, None) is None:
            return False
        hook = self.hooks[delivery.key]
        if error is not None:
            hook.dead_lettered, hook.last_error = hook.dead_lettered + 1, error
        else:
            hook.delivered += 1
        pending = any(d[0] == delivery.key for d in self.outbox.values())
        hook.due_at = 0.0 if pending else None
        return True

    def _state(self, key: WebhookKey, hook: _Hook) -> WebhookState:
        pending = sum(d[0] == key for d in self.outbox.values())
        return WebhookState(
            hook.webhook, pending, hook.delivered, hook.dead_lettered, hook.last_error
        )


def _matches(row: dict[str, Any], query: ListQuery) -> bool:
    """Whether the task of ``row`` is one ``query`` lists."""
    return (
        all(
            want is None or row[column] == want
            for column, want in (
                ("tenant", query.tenant),
                ("principal", query.principal),
                ("agent", query.agent),
                ("context_id", query.context_id or None),
                ("state", query.state.value if query.state is not None else None),
            )
        )
        and (not query.updated_after or row["status_ts"] >= query.updated_after)
        and (not query.updated_before or row["status_ts"] < query.updated_before)
        and (not query.overdue_at or (row["deadline"] or query.overdue_at) < query.overdue_at)
    )
