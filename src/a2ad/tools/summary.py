"""Tasks as the tools show them: small dicts of plain values an LLM reads cheaply.

Keys follow the A2A wire (``contextId``), states are the words people use
(``input-required``), and every text is cut short, so a listing of a hundred
tasks stays a few kilobytes whatever the tasks hold.
"""

from __future__ import annotations

from typing import Any

from ..protocol.model import Message, Role, Task

__all__ = ["shorten", "task_detail", "task_summary"]

REQUEST_WORDS = 12
SUMMARY_CHARS = 100
DETAIL_CHARS = 500
DETAIL_MESSAGES = 10
DETAIL_ARTIFACTS = 10


def shorten(text: str, *, words: int = REQUEST_WORDS, chars: int = SUMMARY_CHARS) -> str:
    """The first ``words`` words of ``text`` on one line, at most ``chars`` long;
    ``…`` marks a cut."""
    pieces = text.split()
    short = " ".join(pieces[:words])
    if len(short) > chars:
        short = short[: chars - 1].rstrip()
    elif len(pieces) <= words:
        return short
    return short + "…"


def _status_text(task: Task) -> str:
    message = task.status.message
    return message.text if isinstance(message, Message) else ""


def _request_text(task: Task) -> str:
    # The first user message is what was asked; a2ad keeps it first in the
    # history (until a very long task's oldest messages are dropped).
    for message in task.history:
        if message.role is Role.USER:
            return message.text
    return ""


def task_summary(task: Task, overdue: str | None = None) -> dict[str, Any]:
    """``id``, ``state``, ``contextId``, ``updated`` (the status timestamp), and
    when known ``request`` (its first words), ``statusMessage`` and ``overdue``
    (why it is overdue)."""
    timestamp = task.status.timestamp
    summary: dict[str, Any] = {
        "id": task.id,
        "state": task.status.state.word,
        "contextId": task.context_id,
        "updated": timestamp if isinstance(timestamp, str) else None,
    }
    request = _request_text(task)
    if request:
        summary["request"] = shorten(request)
    status = _status_text(task)
    if status:
        summary["statusMessage"] = shorten(status)
    if overdue:
        summary["overdue"] = overdue
    return summary


def task_detail(task: Task, overdue: str | None = None) -> dict[str, Any]:
    """The summary, plus the newest messages and the artifacts (texts cut at
    ``DETAIL_CHARS``)."""
    detail = task_summary(task, overdue)
    long = {"words": 100, "chars": DETAIL_CHARS}
    if "statusMessage" in detail:
        detail["statusMessage"] = shorten(_status_text(task), **long)
    detail["history"] = [
        {"role": "user" if m.role is Role.USER else "agent", "text": shorten(m.text, **long)}
        for m in task.history[-DETAIL_MESSAGES:]
    ]
    detail["artifacts"] = [
        {
            "name": a.name,
            "text": shorten("\n".join(p.text for p in a.parts if isinstance(p.text, str)), **long),
        }
        for a in task.artifacts[:DETAIL_ARTIFACTS]
    ]
    if len(task.artifacts) > DETAIL_ARTIFACTS:
        detail["moreArtifacts"] = len(task.artifacts) - DETAIL_ARTIFACTS
    return detail
