"""Push notifications: tasks' webhooks, and the worker that delivers their events.

The store keeps each task's webhooks and an outbox of deliveries: storing an
event enqueues one per webhook in the same step (store/base.py, ``Webhooks``),
and a webhook that is set enqueues the task as it stands, so a receiver starts
from the task and then gets every event after it. Nothing on the agent's or a
stream's path waits for a receiver: the writer only wakes this worker (and
only for a task it knows to have webhooks).

The worker: a dispatcher asks the store which webhooks are due and starts a
*lane* for each (at most ``PushPolicy.concurrency`` at once), in one task
group. A lane delivers one webhook's pending deliveries one at a time, in
order, and ends when none is left or an attempt fails; the failed delivery is
then due again after an exponential, jittered delay, and given up
(dead-lettered, counted on the webhook) after ``max_attempts`` attempts or at
once when the receiver refuses it for good (a 4xx other than 408/425/429, an
address that is not allowed). A delivery leaves the outbox only once its
receiver answered 2xx, so each event is delivered at least once: an attempt cut
short by a crash or a shutdown is made again on the next start, and a receiver
may see an event twice (``X-A2AD-Event-Id`` tells them apart). One slow
receiver holds only its own lane.

A receiver is never an operator: the events it gets leave out internal parts
(protocol/internal.py), and one of nothing but internal parts (an artifact
update) is not sent, but counted delivered; unless ``expose_internal_parts``.

A config's token and credentials are stored encrypted (engine/secrets.py): sealed
in ``set``, revealed only to build a delivery's headers, and masked in every
config this layer answers; no log line carries them.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
from msgspec import UNSET

from ..protocol.dialect import DIALECTS
from ..protocol.errors import (
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol.internal import visible, visible_task
from ..protocol.model import (
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    Message,
    PushDeliveryStatus,
    TaskPushNotificationConfig,
)
from ..protocol.types import Clock, TaskId
from ..protocol.v03 import V03
from ..store.base import (
    MAX_WEBHOOKS,
    Delivery,
    MissingTaskError,
    StoreUnavailableError,
    Webhook,
    WebhookKey,
    WebhookLimitError,
    Webhooks,
    WebhookState,
)
from .hooked import HookedTasks
from .metrics import NULL_METRICS, EngineMetrics
from .push_lanes import LaneClients, LaneOutbox
from .secrets import SecretsUnreadable, WebhookSecrets, random_key
from .webhook_urls import Target, WebhookRefused, check_url, target

__all__ = ["PushNotifications", "PushPolicy"]

log = logging.getLogger("a2ad.push")

POLL_SECONDS = 1.0  # the dispatcher looks at the outbox at least this often
# A webhook this process delivers is claimed in a store other processes share, so
# that no other delivers it at once: for at least this long (and three times the
# attempt timeout), renewed before an attempt once a third of it has passed, given
# up when the run ends, lapsing by itself if the process died.
CLAIM_SECONDS = 60.0
BATCH = 32  # deliveries a lane reads at once
MAX_ANSWER_BYTES = 64 * 1024  # of a receiver's answer, read to keep its connection
# Client errors a receiver may answer and then accept the same request later.
_TRANSIENT_4XX = frozenset({408, 425, 429})


@dataclass(frozen=True, kw_only=True)
class PushPolicy:
    """How webhooks are called. An event is tried at most ``max_attempts`` times;
    after the n-th failure the next try waits ``first_retry * 2**(n-1)`` seconds
    (at most ``max_retry``), less up to half of it at random, so that receivers
    coming back are not met by every server at once. Each attempt gets
    ``timeout`` seconds; at most ``concurrency`` webhooks are called at once.
    Their deliveries make at most ``store_calls`` calls on the store at once
    (None: as many as the store suggests; on PostgreSQL half its pool, so that
    requests find connections free)."""

    max_attempts: int = 10
    first_retry: float = 1.0
    max_retry: float = 60.0
    timeout: float = 10.0
    concurrency: int = 100
    store_calls: int | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.concurrency < 1:
            raise ValueError("max_attempts and concurrency must be at least 1")
        if self.store_calls is not None and self.store_calls < 1:
            raise ValueError("store_calls must be at least 1 (or None)")
        if not (0 < self.first_retry <= self.max_retry and self.timeout > 0):
            raise ValueError("need 0 < first_retry <= max_retry, and a positive timeout")

    def retry_delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt."""
        delay = min(self.max_retry, self.first_retry * 2.0 ** min(failures - 1, 64))
        return delay * random.uniform(0.5, 1.0)


class PushNotifications:
    """The webhooks of the tasks in ``store``, and their delivery (``start`` and
    ``aclose`` it). Calls a webhook whose host is not public only with
    ``allow_private`` (engine/webhook_urls.py). Webhook secrets are sealed with
    ``secrets``, by default with a random key that lasts as long as this object
    (the server's key: engine/secrets.py ``server_key``). Receivers get internal
    parts only with ``expose_internal_parts``. ``metrics`` is told of
    deliveries; ``hooked`` (hooked.py) is what the writer tells of stored events."""

    def __init__(
        self,
        store: Webhooks,
        *,
        clock: Clock,
        policy: PushPolicy | None = None,
        allow_private: bool = False,
        secrets: WebhookSecrets | None = None,
        expose_internal_parts: bool = False,
        metrics: EngineMetrics = NULL_METRICS,
        hooked: HookedTasks | None = None,
    ) -> None:
        self.store = store
        self.policy = policy or PushPolicy()
        self.allow_private = allow_private
        self.expose_internal_parts = expose_internal_parts
        self.secrets = secrets if secrets is not None else WebhookSecrets(random_key())
        self.metrics = metrics
        self._clock = clock
        # Tasks known to have webhooks, whose stored events wake the dispatcher at
        # once (the writer tells ``hooked``, not this object: hooked.py).
        self.hooked = hooked if hooked is not None else HookedTasks()
        self._wake = self.hooked.wake
        self._lanes: set[WebhookKey] = set()
        self._claimant = uuid.uuid4().hex  # whose claims on webhooks are this process's
        self._claim_seconds = max(CLAIM_SECONDS, 3 * self.policy.timeout)
        self._retries: list[float] = []  # when failed deliveries are due again (a heap)
        self._worker: asyncio.Task[None] | None = None
        self._clients: LaneClients | None = None
        self._closed = False
        # The lanes' store calls: a few at once, if the store asks for it.
        slots = self.policy.store_calls or store.delivery_calls
        self._outbox: Webhooks | LaneOutbox = store if slots is None else LaneOutbox(store, slots)

    # --- configs: what the four push-config operations and a send do ---

    async def check(self, config: TaskPushNotificationConfig, *, field: str) -> None:
        """Raise InvalidParamsError naming ``field`` if the config's URL may not
        be called (webhook_urls.py); the rest was checked as it was decoded."""
        try:
            await check_url(config.url, allow_private=self.allow_private)
        except WebhookRefused as exc:
            raise InvalidParamsError(
                f"Invalid push notification URL {config.url[:200]!r}: {exc}", field=field
            ) from None

    async def set(self, task_id: TaskId, webhook: Webhook) -> TaskPushNotificationConfig:
        """Set ``webhook`` on the task (an empty config id means the task's id;
        the same id replaces); its receiver gets the task as it stands, then
        every later event. Answers the config with its secrets masked. Raises
        TaskNotFoundError, UnsupportedOperationError (the task has MAX_WEBHOOKS
        already)."""
        config = msgspec.structs.replace(
            webhook.config,
            task_id=task_id,
            id=webhook.config.id or task_id,
            tenant="",
            a2ad_delivery=UNSET,
        )
        replaced = await self.store.get_webhook((task_id, config.id))
        if replaced is not None and replaced.webhook.config.url != config.url:
            # Another receiver: a new webhook, which gets the task as it stands,
            # not what was queued for the old one (nor its counts).
            await self.store.delete_webhook((task_id, config.id))
        # A 0.3 receiver is sent the task right after each event (V03.encode_push).
        snapshot = DIALECTS[webhook.version] is V03
        try:
            await self.store.put_webhook(
                Webhook(self.secrets.seal(config), webhook.version, snapshot)
            )
        except MissingTaskError:
            raise _not_found(task_id) from None
        except WebhookLimitError:
            raise UnsupportedOperationError(
                f"Task {task_id} has {MAX_WEBHOOKS} push notification configs, the most a task "
                "may have; delete one first, or set one of the same id to replace it",
                metadata={"taskId": task_id, "limit": str(MAX_WEBHOOKS)},
            ) from None
        log.info(
            "webhook set",
            extra={
                "task_id": task_id,
                "config_id": config.id,
                "host": urlsplit(config.url).hostname,
                "version": webhook.version,
            },
        )
        self.hooked.hook(task_id)
        self._wake.set()
        return self.secrets.masked(config)

    async def register(self, task_id: TaskId, webhooks: Sequence[Webhook]) -> None:
        """``set`` each of a message's webhooks on its task."""
        for webhook in webhooks:
            await self.set(task_id, webhook)

    async def get(self, task_id: TaskId, config_id: str) -> TaskPushNotificationConfig:
        """The config with how its deliveries went; an empty ``config_id`` means
        the task's first, its secrets masked. Raises TaskNotFoundError."""
        if config_id:
            state = await self.store.get_webhook((task_id, config_id))
        else:
            states = await self.store.list_webhooks(task_id)
            state = states[0] if states else None
        if state is not None:
            return self._answer(state)
        if await self.store.list_webhooks(task_id) is None:
            raise _not_found(task_id)
        raise TaskNotFoundError(
            f"Task {task_id} has no push notification config "
            + (f"with id {config_id}" if config_id else "yet"),
            metadata={"taskId": task_id, "configId": config_id},
        )

    async def list(
        self, request: ListTaskPushNotificationConfigsRequest
    ) -> ListTaskPushNotificationConfigsResponse:
        """The task's configs, oldest first, ``pageSize`` at a time if given,
        their secrets masked. Raises TaskNotFoundError, InvalidParamsError (a
        page token not ours)."""
        states = await self.store.list_webhooks(request.task_id)
        if states is None:
            raise _not_found(request.task_id)
        start = 0
        if request.page_token:
            if not (request.page_token.isdigit() and int(request.page_token) <= len(states)):
                raise InvalidParamsError(
                    "Invalid pageToken: pass back a nextPageToken this server returned, or "
                    "omit it to start from the first config",
                    field="pageToken",
                )
            start = int(request.page_token)
        end = start + request.page_size if request.page_size else len(states)
        return ListTaskPushNotificationConfigsResponse(
            configs=[self._answer(state) for state in states[start:end]],
            next_page_token=str(end) if end < len(states) else "",
        )

    def _answer(self, state: WebhookState) -> TaskPushNotificationConfig:
        return msgspec.structs.replace(
            self.secrets.masked(state.webhook.config),
            a2ad_delivery=PushDeliveryStatus(
                pending=state.pending,
                delivered=state.delivered,
                dead_lettered=state.dead_lettered,
                last_error=state.last_error,
            ),
        )

    async def delete(self, task_id: TaskId, config_id: str) -> None:
        """Delete the config and its pending deliveries; deleting one that is
        not there succeeds. Raises TaskNotFoundError for an unknown task."""
        if not await self.store.delete_webhook((task_id, config_id)):
            if await self.store.list_webhooks(task_id) is None:
                raise _not_found(task_id)
            return
        log.info("webhook deleted", extra={"task_id": task_id, "config_id": config_id})

    # --- lifetime ---

    async def start(self) -> None:
        """Start delivering (what the outbox holds from before, too). Idempotent."""
        if self._worker is not None or self._closed:
            return
        self._clients = LaneClients(keep=self.policy.concurrency, timeout=self.policy.timeout)
        self._worker = asyncio.ensure_future(self._dispatch())

    async def aclose(self) -> None:
        """Stop: attempts under way are cut short, and stay in the outbox to be
        made again on the next start. Idempotent."""
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.wait({self._worker})
        if self._clients is not None:
            await self._clients.aclose()
            self._clients = None

    # --- delivery ---

    async def _dispatch(self) -> None:
        async with asyncio.TaskGroup() as lanes:
            while True:
                self._wake.clear()
                free = self.policy.concurrency - len(self._lanes)
                if free > 0:
                    # A store that keeps claims answers none being delivered: each
                    # it answers is claimed, for a lane that is free. Others may
                    # answer those too, so they are asked for as many more.
                    wanted = free if self.store.claims else free + len(self._lanes)
                    try:
                        now = self._clock()
                        due = await self.store.due_webhooks(
                            now,
                            wanted,
                            claim_until=now + self._claim_seconds,
                            claimant=self._claimant,
                        )
                    except StoreUnavailableError:
                        due = []  # the store logs its outage; the next round tries again
                    except Exception:
                        log.exception("push: reading the outbox failed; retrying")
                        due = []
                    for key in due:
                        if key not in self._lanes and len(self._lanes) < self.policy.concurrency:
                            self._lanes.add(key)
                            self.hooked.hook(key[0])
                            lanes.create_task(self._lane(key))
                await self._idle()

    async def _idle(self) -> None:
        """Wait until woken, a retry falls due, or POLL_SECONDS pass."""
        now = self._clock()
        while self._retries and self._retries[0] <= now:
            heapq.heappop(self._retries)
        wait = min(POLL_SECONDS, self._retries[0] - now) if self._retries else POLL_SECONDS
        try:
            async with asyncio.timeout(max(wait, 0.0)):
                await self._wake.wait()
        except TimeoutError:
            pass

    async def _lane(self, key: WebhookKey) -> None:
        assert self._clients is not None
        client = self._clients.take(key)
        try:
            await self._deliver(key, client)
        except StoreUnavailableError:  # the store logs its outage
            heapq.heappush(self._retries, self._clock() + POLL_SECONDS)
        except Exception:
            log.exception(
                "push: delivering failed; retrying", extra={"task_id": key[0], "config_id": key[1]}
            )
            heapq.heappush(self._retries, self._clock() + POLL_SECONDS)
        finally:
            # Out of the lanes before the claim is given up: a round that claims
            # the webhook again meanwhile then starts a lane for it.
            self._lanes.discard(key)
            with contextlib.suppress(Exception):  # not given up, it lapses by itself
                await self._outbox.claim_webhook(key, None, self._claimant)
            self._wake.set()  # its webhook may be due again already
            await self._clients.give_back(key, client)

    async def _deliver(self, key: WebhookKey, client: httpx.AsyncClient) -> None:
        """Deliver the webhook's pending deliveries in order, until none is left
        or one fails and must wait before it is tried again."""
        reached: tuple[str, Target | WebhookRefused] | None = None  # (url, where it led)
        claimed = self._clock()
        while True:
            # Read afresh for each batch: the config may have been replaced.
            state = await self._outbox.get_webhook(key)
            pending = await self._outbox.deliveries(key, BATCH) if state is not None else []
            if state is None or not pending:
                return
            webhook = state.webhook
            if reached is None or reached[0] != webhook.config.url:
                # Resolved once a run (and checked again): it holds for the run.
                reached = webhook.config.url, await self._reach(webhook)
            revealed = self._reveal(key, webhook)
            for delivery in pending:
                now = self._clock()
                if now - claimed > self._claim_seconds / 3:  # hold the claim a stretch more
                    until = now + self._claim_seconds
                    if not await self._outbox.claim_webhook(key, until, self._claimant):
                        log.warning(
                            "push: this instance lost its claim on a webhook; another delivers it",
                            extra={"task_id": key[0], "config_id": key[1]},
                        )
                        return
                    claimed = now
                if isinstance(revealed, str):  # this key can't read them: no point retrying
                    failure: tuple[str, bool] | None = revealed, True
                else:
                    failure = await self._attempt(client, revealed, delivery, reached[1])
                if failure is None:
                    if not await self._outbox.delivered(delivery):
                        return  # deleted meanwhile: the rest of the batch is gone too
                    continue
                error, permanent = failure
                failures = delivery.attempts + 1
                final = permanent or failures >= self.policy.max_attempts
                self.metrics.push_failed(final)
                if final:
                    if not await self._outbox.delivery_failed(delivery, error, retry_at=None):
                        return
                    log.warning(
                        "push delivery given up: %s",
                        error,
                        extra=_about(delivery, failures),
                    )
                    continue
                retry_at = self._clock() + self.policy.retry_delay(failures)
                await self._outbox.delivery_failed(delivery, error, retry_at=retry_at)
                heapq.heappush(self._retries, retry_at)
                log.info(
                    "push delivery failed, will retry: %s", error, extra=_about(delivery, failures)
                )
                return

    def _reveal(self, key: WebhookKey, webhook: Webhook) -> Webhook | str:
        """The webhook with its secrets in clear, or why they can't be read."""
        try:
            return webhook._replace(config=self.secrets.reveal(webhook.config))
        except SecretsUnreadable as exc:
            log.warning("push: %s", exc, extra={"task_id": key[0], "config_id": key[1]})
            return str(exc)

    async def _reach(self, webhook: Webhook) -> Target | WebhookRefused:
        try:
            return await target(webhook.config.url, allow_private=self.allow_private)
        except WebhookRefused as exc:
            return exc

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        webhook: Webhook,
        delivery: Delivery,
        reached: Target | WebhookRefused,
    ) -> tuple[str, bool] | None:
        """One POST; None if the receiver took it (or there was nothing for it to
        see), else (why, whether retrying is pointless)."""
        body = self._body(webhook, delivery)
        if body is None:
            return None
        if isinstance(reached, WebhookRefused):
            return f"refused: {reached}", reached.permanent
        dialect = DIALECTS[webhook.version]
        config = webhook.config
        headers = {
            "Host": reached.host_header,
            "Content-Type": dialect.push_media_type,
            "X-A2AD-Event-Id": str(delivery.seq),
        }
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        auth = config.authentication
        if auth is not UNSET:
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".rstrip()
        extensions: dict[str, Any] = {}
        if reached.sni_hostname is not None:
            extensions["sni_hostname"] = reached.sni_hostname
        timeout = self.policy.timeout
        try:
            async with asyncio.timeout(timeout):  # the whole attempt, however it trickles
                request = client.build_request(
                    "POST", reached.url, content=body, headers=headers, extensions=extensions
                )
                response = await client.send(request, stream=True)
                try:
                    # The status is all that counts, but a body read to its end
                    # lets the connection be used again; a long one is cut off.
                    size = 0
                    async for chunk in response.aiter_raw():
                        size += len(chunk)
                        if size > MAX_ANSWER_BYTES:
                            break
                finally:
                    await response.aclose()
        except TimeoutError:
            return f"no answer within {timeout:g} s", False
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}".rstrip(": "), False
        status = response.status_code
        if 200 <= status < 300:
            return None
        permanent = 400 <= status < 500 and status not in _TRANSIENT_4XX
        return f"HTTP {status}", permanent

    def _body(self, webhook: Webhook, delivery: Delivery) -> bytes | None:
        """What the receiver is sent of the delivery; None: nothing it may see."""
        item, snapshot = delivery.item, delivery.snapshot
        if not self.expose_internal_parts:
            shown = visible(item)
            if shown is None:
                return None
            assert not isinstance(shown, Message)  # a reply makes no task, so no push
            item = shown
            snapshot = visible_task(snapshot) if snapshot is not None else None
        return DIALECTS[webhook.version].encode_push(item, snapshot)


def _about(delivery: Delivery, attempts: int) -> dict[str, Any]:
    return {
        "task_id": delivery.key[0],
        "config_id": delivery.key[1],
        "seq": delivery.seq,
        "attempts": attempts,
    }


def _not_found(task_id: TaskId) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})
