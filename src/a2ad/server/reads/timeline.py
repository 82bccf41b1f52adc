"""``GET /a2ad/tasks/{id}/timeline``: a task's status changes, oldest first.

a2ad's own path (A2A has no such read): what the dashboard's timeline shows.
The answer is ``{"events": [{"seq", "state", "timestamp", "text"}, ...],
"artifactUpdates": N}``: every status change the store still keeps of the task
(its newest ``MAX_EVENTS``, store/base.py), with the text of the status message
(internal parts left out, whoever asks), and how many artifact updates came
between. The same access rules as GetTask: another caller's task is "not found".
"""

from __future__ import annotations

import msgspec

from ...protocol.errors import InvalidRequestError
from ...protocol.internal import is_internal
from ...protocol.model import TaskStatusUpdateEvent
from ..errors import respond_read
from ..handler import RequestHandler
from ..types import Scope, Send, caller_of

__all__ = ["TIMELINE_PREFIX", "TimelineEndpoint", "timeline_task_id"]

TIMELINE_PREFIX = "/a2ad/tasks/"
_SUFFIX = "/timeline"
_encode = msgspec.json.Encoder().encode


def timeline_task_id(path: str) -> str | None:
    """The task id of a timeline path, or None if ``path`` is not one."""
    if path.startswith(TIMELINE_PREFIX) and path.endswith(_SUFFIX):
        task_id = path[len(TIMELINE_PREFIX) : -len(_SUFFIX)]
        if task_id and "/" not in task_id:
            return task_id
    return None


class TimelineEndpoint:
    def __init__(self, handler: RequestHandler) -> None:
        self.handler = handler

    async def __call__(self, task_id: str, scope: Scope, send: Send) -> None:
        await respond_read(send, self._read(task_id, scope))

    async def _read(self, task_id: str, scope: Scope) -> bytes:
        if scope["method"] != "GET":
            raise InvalidRequestError(f"{scope['method']} {TIMELINE_PREFIX}...: use GET")
        context = self.handler.request_context("1.0", "HTTP+JSON", (), caller_of(scope))
        events = await self.handler.task_events(task_id, context)
        shown = []
        artifacts = 0
        for logged in events:
            event = logged.event
            if not isinstance(event, TaskStatusUpdateEvent):
                artifacts += 1
                continue
            status = event.status
            text = ""
            if status.message:
                text = " ".join(
                    p.text for p in status.message.parts if p.text and not is_internal(p)
                )
            shown.append(
                {
                    "seq": logged.seq,
                    "state": status.state.value,
                    "timestamp": status.timestamp or "",
                    "text": text[:500],
                }
            )
        return _encode({"events": shown, "artifactUpdates": artifacts})
