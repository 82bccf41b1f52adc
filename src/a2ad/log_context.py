"""What a log line is about: the request being served and the agent turn being
run, kept in context variables so that every line logged while they last (the
server's own and the agent's, through plain ``logging``) can name them.

The server's request observer (server/access_log.py) sets ``request`` for each
HTTP request; the engine's turn observer (engine/turn_log.py) sets ``turn`` in
each turn's asyncio task. A turn started by a request runs in a copy of the
request's context, so its lines carry the request's id and principal too. The
log formatter (cli/logs.py) reads them through ``fields``. This module imports
nothing of a2ad's, so any layer may use it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import NamedTuple, Protocol

__all__ = ["CONTEXT_FIELDS", "Request", "Turn", "fields", "request", "turn"]

# The keys a line may carry from its context, in the order they are written.
CONTEXT_FIELDS = ("task_id", "context_id", "agent", "request_id", "principal")


class Request(Protocol):
    """The request being served, as the server's RequestRecord offers it; read
    when a line is written, so what is learnt later (the principal, once
    authenticated; the task) is on the lines written after that."""

    request_id: str
    principal: str
    agent: str
    task_id: str
    context_id: str


class Turn(NamedTuple):
    """The agent turn being run."""

    task_id: str
    context_id: str
    agent: str


request: ContextVar[Request | None] = ContextVar("a2ad_log_request", default=None)
turn: ContextVar[Turn | None] = ContextVar("a2ad_log_turn", default=None)


def fields() -> dict[str, str]:
    """The context of a line written now: those of ``CONTEXT_FIELDS`` that are
    known (empty ones left out), the turn's over the request's."""
    found: dict[str, str] = {}
    now = turn.get()
    asked = request.get()
    if now is not None:
        found["task_id"] = now.task_id
        if now.context_id:
            found["context_id"] = now.context_id
        if now.agent:
            found["agent"] = now.agent
    elif asked is not None:
        if asked.task_id:
            found["task_id"] = asked.task_id
        if asked.context_id:
            found["context_id"] = asked.context_id
        if asked.agent:
            found["agent"] = asked.agent
    if asked is not None:
        if asked.request_id:
            found["request_id"] = asked.request_id
        if asked.principal:
            found["principal"] = asked.principal
    return found
