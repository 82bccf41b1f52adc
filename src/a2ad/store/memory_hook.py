"""A webhook of the memory store: its pending deliveries in order, and how they
went (the SQL stores keep the same in their webhooks and deliveries rows)."""

from __future__ import annotations

from collections import deque

from .records import Delivery, Webhook, WebhookState

__all__ = ["Hook"]


class Hook:
    """A webhook, its pending deliveries in order, and how they went."""

    __slots__ = ("dead_lettered", "delivered", "due_at", "last_error", "queue", "webhook")

    def __init__(self, webhook: Webhook) -> None:
        self.webhook = webhook
        self.queue: deque[Delivery] = deque()
        self.due_at: float | None = None  # None while nothing is pending
        self.delivered = 0
        self.dead_lettered = 0
        self.last_error = ""

    def state(self) -> WebhookState:
        return WebhookState(
            self.webhook, len(self.queue), self.delivered, self.dead_lettered, self.last_error
        )

    def find(self, delivery: Delivery) -> int | None:
        for i, pending in enumerate(self.queue):  # the one sought is nearly always first
            if pending.id == delivery.id:
                return i
        return None
