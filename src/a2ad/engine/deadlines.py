"""When a new task is due: an a2ad extension (docs/protocol.md, "Deadlines")."""

from __future__ import annotations

from typing import Any

from ..protocol.errors import InvalidParamsError
from ..protocol.model import Message
from ..protocol.requests import normalized_time
from ..protocol.types import format_timestamp

__all__ = ["MAX_TIMEOUT_SECONDS", "deadline_for"]

MAX_TIMEOUT_SECONDS = 10 * 365 * 86400  # metadata.timeoutSeconds is capped here


def deadline_for(
    message: Message, metadata: dict[str, Any], *, now: float, task_timeout: float | None
) -> str | None:
    """A new task's deadline as timestamp text: ``deadline`` (RFC 3339) or
    ``timeoutSeconds`` in the message's metadata, else in the request's, else
    ``task_timeout`` seconds from ``now``; None for no deadline. Raises
    InvalidParamsError naming the field that is not one."""
    for source, where in ((message.metadata, "message.metadata"), (metadata, "metadata")):
        if not isinstance(source, dict):
            continue
        if "deadline" in source:
            value = source["deadline"]
            field = f"{where}.deadline"
            if not isinstance(value, str):
                raise InvalidParamsError(
                    f"Invalid {field}: give an RFC 3339 time such as 2026-11-30T10:00:00Z",
                    field=field,
                )
            return normalized_time(value, field)
        if "timeoutSeconds" in source:
            value = source["timeoutSeconds"]
            field = f"{where}.timeoutSeconds"
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidParamsError(
                    f"Invalid {field}: give a positive number of seconds", field=field
                )
            return format_timestamp(now + min(float(value), MAX_TIMEOUT_SECONDS))
    if task_timeout is not None:
        return format_timestamp(now + task_timeout)
    return None
