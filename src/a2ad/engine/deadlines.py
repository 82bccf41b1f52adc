"""When a new task is due: an a2ad extension (docs/protocol.md, "Deadlines")."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..protocol.errors import InvalidParamsError
from ..protocol.model import Message
from ..protocol.requests import normalized_time
from ..protocol.types import format_timestamp

__all__ = ["MAX_TIMEOUT_SECONDS", "Deadline", "deadline_for"]

MAX_TIMEOUT_SECONDS = 10 * 365 * 86400  # metadata.timeoutSeconds is capped here


class Deadline(NamedTuple):
    """A new task's deadline, as timestamp text."""

    at: str
    # What the request asked for, when the server's task timeout cut it short ("" if not).
    requested: str = ""

    def metadata(self) -> dict[str, str]:
        """What the task records of it (its ``metadata``)."""
        if self.requested:
            return {"deadline": self.at, "requestedDeadline": self.requested}
        return {"deadline": self.at}


def deadline_for(
    message: Message, metadata: dict[str, Any], *, now: float, task_timeout: float | None
) -> Deadline | None:
    """A new task's deadline: ``deadline`` (RFC 3339) or ``timeoutSeconds`` in the
    message's metadata, else in the request's, else ``task_timeout`` seconds from
    ``now``; None for no deadline. ``task_timeout`` is also the ceiling: a request
    that asks for a later deadline gets the ceiling, and the Deadline says what
    was asked. Raises
    InvalidParamsError naming the field that is not one."""
    ceiling = format_timestamp(now + task_timeout) if task_timeout is not None else None
    asked = _asked(message, metadata, now)
    if asked is None:
        return Deadline(ceiling) if ceiling is not None else None
    # Timestamp texts are fixed-width UTC: they compare as the times they name.
    if ceiling is not None and asked > ceiling:
        return Deadline(ceiling, requested=asked)
    return Deadline(asked)


def _asked(message: Message, metadata: dict[str, Any], now: float) -> str | None:
    """The deadline the request asks for, if any."""
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
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise InvalidParamsError(
                    f"Invalid {field}: give a positive number of seconds", field=field
                )
            return format_timestamp(now + min(float(value), MAX_TIMEOUT_SECONDS))
    return None
