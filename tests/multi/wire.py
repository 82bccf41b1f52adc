"""What the multi-process tests (tests/multi, tests/processes) send and read on the
wire: a SendMessage's params, and what a 1.0 stream frame or a task carries."""

from __future__ import annotations

import uuid
from typing import Any

from ..server.sse_client import Frame


def send_params(text: str, **message: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **message,
        }
    }


def result_of(frame: Frame) -> dict[str, Any]:
    """A frame's StreamResponse member: task, statusUpdate or artifactUpdate."""
    (value,) = frame.result.values()
    return value  # type: ignore[no-any-return]


def state_of(frame: Frame) -> str | None:
    """The task state a frame carries (a task's or a status update's), else None."""
    (kind,) = frame.result.keys()
    if kind in ("task", "statusUpdate"):
        return str(result_of(frame)["status"]["state"])
    return None


def status_text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"]["message"]["parts"])
