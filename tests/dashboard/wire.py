"""What the dashboard's tests send to the server they open in the browser."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from ..conftest import LiveServer

V1 = {"A2A-Version": "1.0"}


def send(
    server: LiveServer,
    text: str,
    *,
    key: str = "",
    agent: str = "",
    task_id: str = "",
    wait: bool = True,
) -> Any:
    """SendMessage over HTTP+JSON (as ``key``, to ``agent``, continuing ``task_id``);
    the task it answers, when its turn is over (``wait``) or at once."""
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    body = {"message": message, "configuration": {"returnImmediately": not wait}}
    headers = {**V1, "Authorization": f"Bearer {key}"} if key else V1
    prefix = f"/agents/{agent}" if agent else ""
    answer = httpx.post(
        f"{server.url}{prefix}/message:send", json=body, headers=headers, timeout=10
    )
    answer.raise_for_status()
    return answer.json()["task"]
