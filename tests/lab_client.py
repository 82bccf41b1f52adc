"""The requests seed 004's ``client.py`` makes, in the same shapes (no A2A
library: JSON-RPC 2.0 over httpx, ``A2A-Version: 1.0``, ``ROLE_USER`` messages
of text parts), for tests that run the lab's scenario against a2ad."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx

from .jsonrpc import rpc_body

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
# The lab's example request: a quote for 12 ergonomic chairs, in French.
QUOTE = "Je voudrais un devis pour 12 CHAISE-ERGO"


def payload(method: str, text: str, *, task_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:  # a follow-up to a task that asked for input
        message["taskId"] = task_id
    return rpc_body(method, {"message": message}, str(uuid.uuid4()))


def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = rpc_body(method, params, str(uuid.uuid4()))
    r = httpx.post(url, headers=HEADERS, json=body, timeout=30)
    r.raise_for_status()
    answer: dict[str, Any] = r.json()
    assert "result" in answer, answer
    return answer["result"]  # type: ignore[no-any-return]


def send(url: str, text: str, *, task_id: str | None = None) -> dict[str, Any]:
    """SendMessage; the task it answers."""
    r = httpx.post(url, headers=HEADERS, json=payload("SendMessage", text, task_id=task_id),
                   timeout=30)  # fmt: skip
    r.raise_for_status()
    task: dict[str, Any] = r.json()["result"]["task"]
    return task


def stream(url: str, text: str, timeout: float = 30) -> Iterator[dict[str, Any]]:
    """SendStreamingMessage; each event's ``result`` as the lab's client yields it."""
    with httpx.stream("POST", url, json=payload("SendStreamingMessage", text),
                      headers=HEADERS, timeout=timeout) as r:  # fmt: skip
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data:"):
                yield json.loads(line[5:])["result"]


def kind(event: dict[str, Any]) -> str:
    """``task``, ``statusUpdate``, ``artifactUpdate`` or ``message``, as the lab prints."""
    (key,) = event
    return key


def state(event: dict[str, Any]) -> str:
    body = event[kind(event)]
    return str(body.get("status", {}).get("state", ""))


def texts(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if "text" in p)


def data(parts: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [p["data"] for p in parts if "data" in p]
    return found  # type: ignore[no-any-return]


def status_text(task: dict[str, Any]) -> str:
    return texts(task["status"].get("message", {}).get("parts", []))


def call(base: str, agent: str, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC call to ``agent`` of the server at ``base`` with an API key."""
    body = rpc_body(method, params)
    headers = {"A2A-Version": "1.0", "X-API-Key": key}
    r = httpx.post(f"{base.rstrip('/')}/agents/{agent}/", json=body, headers=headers, timeout=30)
    return r.json()  # type: ignore[no-any-return]


def assert_sub_tasks_are_only(base: str, quote_id: str, owner: str, other: str) -> None:
    """Each of stock and pricing holds one completed task of ``owner``'s, made
    for the quote, which ``other`` neither lists nor reads."""
    for agent in ("stock", "pricing"):
        (sub,) = call(base, agent, owner, "ListTasks", {})["result"]["tasks"]
        assert sub["status"]["state"] == "TASK_STATE_COMPLETED"
        via = sub["history"][0]["metadata"]["a2ad"]["via"]
        assert via == {"taskId": quote_id, "agent": "orchestrator"}
        assert call(base, agent, other, "ListTasks", {})["result"]["tasks"] == []
        assert call(base, agent, other, "GetTask", {"id": sub["id"]})["error"]["code"] == -32001


def sub_task_states(url: str, wait: float = 10) -> list[str]:
    """The states of the tasks ``url`` holds, once none is in flight."""
    deadline = time.monotonic() + wait
    while True:
        tasks = rpc(url, "ListTasks", {})["tasks"]
        states = [t["status"]["state"] for t in tasks]
        if all(s in ("TASK_STATE_CANCELED", "TASK_STATE_COMPLETED") for s in states):
            return states
        if time.monotonic() > deadline:
            return states
        time.sleep(0.05)
