"""The request handler: one method per A2A operation, whatever the binding.

Typed requests in (already decoded and checked by a dialect), model objects out;
the JSON-RPC endpoint is a thin adapter over it, and so will be any other
binding. It holds the server's policy for what the engine does not do: the
extended agent card is not offered (the agent card says so), and the answer says
why. Push notifications are the engine's (engine/push.py); the dialect a request
came in says what its webhook's receiver takes, and where its URL sits in the
params (to name it when it is refused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from msgspec import UNSET

from ..engine import Engine, EventStream
from ..engine.push import PushNotifications
from ..protocol.errors import PushNotificationNotSupportedError, UnsupportedOperationError
from ..protocol.model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
)
from ..protocol.requests import TaskQuery
from ..store.base import Webhook

if TYPE_CHECKING:  # dispatch.py imports this module
    from .dispatch import ServerDialect as Dialect

__all__ = ["RequestHandler"]


class RequestHandler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def send_message(
        self, request: SendMessageRequest, *, dialect: Dialect
    ) -> Task | Message:
        webhooks = await self._webhooks(request, dialect)
        return await self.engine.send(request, webhooks=webhooks)

    async def send_streaming_message(
        self, request: SendMessageRequest, *, dialect: Dialect
    ) -> EventStream:
        webhooks = await self._webhooks(request, dialect)
        return await self.engine.stream(request, webhooks=webhooks)

    async def get_task(self, request: GetTaskRequest) -> Task:
        return await self.engine.get_task(request.id, request.history_length)

    async def list_tasks(self, query: TaskQuery) -> ListTasksResponse:
        return await self.engine.list_tasks(query)

    async def cancel_task(self, request: TaskIdRequest) -> Task:
        return await self.engine.cancel(request.id)

    async def subscribe_to_task(
        self, request: TaskIdRequest, *, last_event_id: int | None = None
    ) -> EventStream:
        return await self.engine.subscribe(request.id, last_event_id=last_event_id)

    async def create_push_config(
        self, config: TaskPushNotificationConfig, *, dialect: Dialect
    ) -> TaskPushNotificationConfig:
        push = self._push()
        at = dialect.push_config_field
        await push.check(config, field=f"{at}.url" if at else "url")
        return await push.set(config.task_id, Webhook(config, dialect.version))

    async def get_push_config(
        self, request: GetTaskPushNotificationConfigRequest
    ) -> TaskPushNotificationConfig:
        return await self._push().get(request.task_id, request.id)

    async def list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest
    ) -> ListTaskPushNotificationConfigsResponse:
        return await self._push().list(request)

    async def delete_push_config(self, request: GetTaskPushNotificationConfigRequest) -> None:
        await self._push().delete(request.task_id, request.id)

    async def _webhooks(self, request: SendMessageRequest, dialect: Dialect) -> tuple[Webhook, ...]:
        """The webhook a send names for its task, checked."""
        config = request.configuration
        if config is UNSET or config.task_push_notification_config is UNSET:
            return ()
        webhook = config.task_push_notification_config
        await self._push().check(webhook, field=f"{dialect.send_push_field}.url")
        return (Webhook(webhook, dialect.version),)

    def _push(self) -> PushNotifications:
        if self.engine.push is None:
            raise PushNotificationNotSupportedError(
                "Push notifications are not supported with this server's task store "
                "(it keeps no webhooks); follow the task with a stream or GetTask"
            )
        return self.engine.push

    async def get_extended_agent_card(self, method: str) -> NoReturn:
        raise UnsupportedOperationError(
            f"{method}: this agent has no extended agent card "
            "(its agent card does not set capabilities.extendedAgentCard)"
        )
