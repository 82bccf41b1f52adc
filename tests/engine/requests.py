"""What the engine tests send: a SendMessage request built from text."""

from __future__ import annotations

import uuid
from typing import Any

from msgspec import UNSET

from a2ad import Message, Role, TextPart
from a2ad.protocol.model import SendMessageConfiguration, SendMessageRequest


def request(
    text: str,
    *,
    message_metadata: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    immediately: bool = False,
    task_id: str = "",
) -> SendMessageRequest:
    """A user message with ``text``; ``immediately`` asks for returnImmediately,
    ``task_id`` makes it a follow-up."""
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[TextPart(text)],
            task_id=task_id,
            metadata=message_metadata if message_metadata is not None else UNSET,
        ),
        configuration=SendMessageConfiguration(return_immediately=immediately),
        metadata=metadata if metadata is not None else UNSET,
    )
