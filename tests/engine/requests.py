"""What the engine tests send (a SendMessage request built from text), and how they
wait for a task to reach a state."""

from __future__ import annotations

import uuid
from typing import Any

from msgspec import UNSET

from a2ad import Engine, Message, Role, Task, TaskState, TaskStatusUpdateEvent, TextPart
from a2ad.protocol.model import SendMessageConfiguration, SendMessageRequest


def request(
    text: str,
    *,
    message_metadata: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    immediately: bool = False,
    task_id: str = "",
    message_context_id: str = "",
) -> SendMessageRequest:
    """A user message with ``text``; ``immediately`` asks for returnImmediately,
    ``task_id`` makes it a follow-up, ``message_context_id`` names its context."""
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[TextPart(text)],
            task_id=task_id,
            context_id=message_context_id,
            metadata=message_metadata if message_metadata is not None else UNSET,
        ),
        configuration=SendMessageConfiguration(return_immediately=immediately),
        metadata=metadata if metadata is not None else UNSET,
    )


WAIT = 15.0  # seconds a test waits for an event before it fails (a bound: a loaded
# machine, three test processes on two cores, took more than 5 for five webhook deliveries)


async def wait_for_state(engine: Engine, task_id: str, state: TaskState) -> None:
    """Wait (bounded) on the task's event stream until it is ``state``."""
    stream = await engine.subscribe(task_id)
    try:
        while True:
            got = await stream.next(timeout=WAIT)
            assert got is not None, f"task {task_id} ended before it was {state.word}"
            item = got[1]
            if isinstance(item, (Task, TaskStatusUpdateEvent)) and item.status.state is state:
                return
    finally:
        stream.close()
