"""What a new task is when first stored, and the words a2ad speaks about tasks
for them: the agent-side status message a2ad writes in a task, and the refusals
a caller of a new task gets (the store full, its quota of tasks in flight)."""

from __future__ import annotations

from msgspec import UNSET

from ..protocol.errors import QuotaExceededError, ServerBusyError
from ..protocol.model import Message, Role, Task, TaskState, TaskStatus, TextPart, new_id
from ..protocol.types import TaskId
from ..store.base import StoreFullError
from ..wording import plural
from .deadlines import Deadline

__all__ = ["agent_message", "new_task", "store_full", "too_many_in_flight"]

_SUBMITTED = TaskState.SUBMITTED  # a module name: an Enum class's member is a slow read on 3.11


def new_task(message: Message, deadline: Deadline | None, timestamp: str) -> Task:
    """A new task as first stored: submitted, with the user's ``message`` (its
    ``task_id`` and ``context_id`` set) and the ``deadline`` it was given."""
    return Task(
        id=message.task_id,
        context_id=message.context_id,
        status=TaskStatus(state=_SUBMITTED, timestamp=timestamp),
        history=[message],
        metadata=deadline.metadata() if deadline else UNSET,
    )


def store_full(exc: StoreFullError) -> ServerBusyError:
    """What the caller of a new task is told when the store is full (``exc``
    says how many tasks it holds, and its cap)."""
    return ServerBusyError(
        f"The server can't take a new task: {exc}; retry later, or cancel a task you no longer need"
    )


def too_many_in_flight(tenant: str, principal: str, count: int, limit: int) -> QuotaExceededError:
    """What the caller of a new task is told when ``principal`` (``""``:
    anonymous) has its quota of tasks in flight in ``tenant``."""
    if principal:
        who = f"principal {principal!r} has"
    else:  # every anonymous caller shares the one count
        who = "anonymous callers, counted together, have"
    where = f" in tenant {tenant!r}" if tenant else ""
    return QuotaExceededError(
        f"{who} {plural(count, 'task')} in flight{where}, the server's limit "
        f"(maxTasksPerPrincipal {limit}); wait for one to finish or ask for input, "
        "cancel one, or ask the operator to raise it (a2ad serve --max-tasks-per-principal)",
        metadata={
            "quota": "maxTasksPerPrincipal",
            "limit": str(limit),
            "count": str(count),
            "principal": principal,
            "tenant": tenant,
        },
    )


def agent_message(task_id: TaskId, context_id: str, text: str) -> Message:
    """A text status message from the agent's side (a2ad speaking for it)."""
    return Message(
        message_id=new_id(),
        role=Role.AGENT,
        parts=[TextPart(text)],
        context_id=context_id,
        task_id=task_id,
    )
