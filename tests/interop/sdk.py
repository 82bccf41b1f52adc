"""What the tests of the official a2a-sdk client share: a message request as a
user makes it, and a stream read to its end within a time limit."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from a2a.client import Client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, Task

TIMEOUT = 10


def request(text: str, **message: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **message
        )
    )


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    async with asyncio.timeout(TIMEOUT):
        return [event async for event in events]


async def send_task(client: Client, text: str, **message: Any) -> Task:
    """Send with a non-streaming client; the single Task it answers with."""
    (event,) = await collect(client.send_message(request(text, **message)))
    assert event.WhichOneof("payload") == "task", event
    return event.task
