"""The request handler: one method per A2A operation, whatever the binding.

Typed requests in (already decoded and checked by a dialect), model objects out;
the JSON-RPC endpoint is a thin adapter over it, and so will be any other
binding. It holds the server's policy for what the engine does not do: push
notifications and the extended agent card are not offered (the agent card says
so), and the answer says why. (A message that asks for push notifications in
its configuration is refused as it is decoded: protocol/requests.py.)
"""

from __future__ import annotations

from typing import NoReturn

from ..engine import Engine, EventStream
from ..protocol.errors import PushNotificationNotSupportedError, UnsupportedOperationError
from ..protocol.model import (
    GetTaskRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
)
from ..protocol.requests import TaskQuery

__all__ = ["RequestHandler"]


class RequestHandler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def send_message(self, request: SendMessageRequest) -> Task | Message:
        return await self.engine.send(request)

    async def send_streaming_message(self, request: SendMessageRequest) -> EventStream:
        return await self.engine.stream(request)

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

    async def push_config(self, method: str) -> NoReturn:
        """Any of the four push-notification config operations."""
        raise PushNotificationNotSupportedError(
            f"{method}: push notifications are not supported by this server "
            "(its agent card says capabilities.pushNotifications: false)"
        )

    async def get_extended_agent_card(self, method: str) -> NoReturn:
        raise UnsupportedOperationError(
            f"{method}: this agent has no extended agent card "
            "(its agent card does not set capabilities.extendedAgentCard)"
        )
