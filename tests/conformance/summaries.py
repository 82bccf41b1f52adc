"""What the binding-equivalence suite (test_bindings.py) compares: each binding's
answer reduced to a plain summary that names nothing binding-specific. A task
is its state, status message, artifacts and history; a message its role and
parts; a stream item its kind and what it says; an error its ErrorInfo reason
(``Failed``). The reducers read any of the wire shapes the bindings carry: 1.0
ProtoJSON (JSON-RPC, HTTP+JSON, and gRPC's messages turned to ProtoJSON), 0.3
JSON-RPC's JSON and the 0.3 proto's JSON (0.3 HTTP+JSON).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "BindingClient",
    "Failed",
    "Summary",
    "event_summary",
    "message_summary",
    "part_summary",
    "state_word",
    "task_summary",
]

Summary = Any  # plain JSON-like values: what the bindings are compared on


@dataclass(frozen=True)
class Failed:
    """An error answer, as every binding must agree on it."""

    reason: str


class BindingClient(Protocol):
    """One binding in one version, as a scenario drives it; each operation
    answers a Summary (``Failed`` for an error)."""

    @property
    def name(self) -> str: ...

    async def send(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        immediately: bool = False,
    ) -> Summary: ...

    async def get(self, task_id: str, **query: Any) -> Summary: ...

    async def cancel(self, task_id: str) -> Summary: ...

    async def list(self, **query: Any) -> Summary: ...

    async def stream(self, text: str) -> Summary: ...

    async def subscribe(self, task_id: str, last_event_id: int | None = None) -> Summary: ...


def state_word(state: str) -> str:
    """A state in any binding's spelling as one word: ``input-required``."""
    word = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "canceled" if word == "cancelled" else word


def part_summary(p: dict[str, Any]) -> Summary:
    """A part in any of the three shapes, as (kind, content...)."""
    if "text" in p:
        return ("text", p["text"])
    if "data" in p:
        data = p["data"]
        if p.get("kind") is None and isinstance(data, dict) and set(data) == {"data"}:
            data = data["data"]  # the 0.3 proto's DataPart
        return ("data", data)
    f = p.get("file", p)
    if "fileWithBytes" in f:  # base64 of the base64 text, as the official SDKs read it
        content = base64.b64decode(base64.b64decode(f["fileWithBytes"]))
    elif "raw" in f or "bytes" in f:
        content = base64.b64decode(f.get("raw") or f["bytes"])
    else:
        content = f.get("url") or f.get("uri") or f["fileWithUri"]
    name = f.get("filename") or f.get("name") or ""
    mime = f.get("mediaType") or f.get("mimeType") or ""
    return ("file", name, mime, content)


def message_summary(m: dict[str, Any]) -> Summary:
    role = m["role"].removeprefix("ROLE_").lower()
    parts = m.get("parts", m.get("content", []))
    return (role, [part_summary(p) for p in parts])


def task_summary(t: dict[str, Any]) -> Summary:
    status = t["status"]
    return {
        "state": state_word(status["state"]),
        "status": message_summary(status["message"]) if "message" in status else None,
        "artifacts": [
            (a.get("name", ""), [part_summary(p) for p in a["parts"]])
            for a in t.get("artifacts", [])
        ],
        "history": [message_summary(m) for m in t.get("history", [])],
    }


def event_summary(item: dict[str, Any]) -> Summary:
    """A stream item in any binding's shape as (kind, what it says)."""
    kind = item.get("kind")
    if "statusUpdate" in item or kind == "status-update":
        status = item.get("statusUpdate", item)["status"]
        return ("status", state_word(status["state"]))
    if "artifactUpdate" in item or kind == "artifact-update":
        artifact = item.get("artifactUpdate", item)["artifact"]
        return ("artifact", [part_summary(p) for p in artifact["parts"]])
    if "task" in item or kind == "task":
        return ("task", state_word(item.get("task", item)["status"]["state"]))
    return ("message", message_summary(item.get("message", item)))
